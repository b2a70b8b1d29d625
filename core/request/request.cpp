#include "core/request/request.h"

namespace prepack {

const char* FinishReasonName(FinishReason r) {
    switch (r) {
        case FinishReason::kStop: return "stop";
        case FinishReason::kLength: return "length";
        case FinishReason::kEos: return "eos";
        case FinishReason::kCancelled: return "cancelled";
        case FinishReason::kError: return "error";
    }
    return "unknown";
}

absl::StatusOr<ResolvedPrompt> ResolveRequestPrompt(const Model& model, const ChatTemplates& templates,
                                                    const Request& request) {
    ResolvedPrompt out;
    if (!request.chat) {
        PP_ASSIGN_OR_RETURN(out.ids, ResolvePrompt(model, request.prompt, request.prompt_tokens, request.add_bos,
                                                   request.parse_special));
        return out;
    }
    if (!request.prompt.empty() || !request.prompt_tokens.empty()) {
        return absl::InvalidArgumentError("a chat request takes messages, not a prompt or prompt tokens as well");
    }
    if (request.parse_special) {
        return absl::InvalidArgumentError(
            "parse_special does not apply to chat messages: their text never becomes control tokens");
    }
    PP_ASSIGN_OR_RETURN(ChatPrompt p, templates.Apply(model.tokenizer(), *request.chat, request.add_bos));
    PP_ASSIGN_OR_RETURN(out.ids, ResolvePrompt(model, "", p.ids, false));
    out.reasoning = p.reasoning;
    out.thinking_open = p.thinking_open;
    return out;
}

absl::StatusOr<std::vector<int32_t>> ResolvePrompt(const Model& model, const std::string& prompt,
                                                   const std::vector<int32_t>& prompt_tokens, bool add_bos,
                                                   bool parse_special) {
    const ModelConfig& c = model.config();
    std::vector<int32_t> ids = prompt_tokens;
    if (ids.empty()) {
        // An empty text prompt is BOS alone, as in llama.cpp and llama2.c.
        PP_ASSIGN_OR_RETURN(ids, model.tokenizer().Encode(prompt, add_bos, parse_special));
        if (ids.empty()) {
            return absl::InvalidArgumentError(
                add_bos ? "prompt is empty and the vocabulary adds no BOS token to start from"
                        : "prompt is empty (and BOS is not to be added)");
        }
    }
    for (int32_t id : ids) {
        if (id < 0 || id >= c.vocab_size) {
            return absl::InvalidArgumentError(absl::StrCat(
                "prompt token id ", id, " is outside the vocabulary [0, ", c.vocab_size, ")"));
        }
    }
    if (static_cast<int64_t>(ids.size()) >= c.max_context) {
        return absl::InvalidArgumentError(absl::StrCat(
            "prompt has ", ids.size(), " tokens but the model's context is ", c.max_context,
            " tokens (room is needed for at least one generated token)"));
    }
    return ids;
}

}  // namespace prepack
