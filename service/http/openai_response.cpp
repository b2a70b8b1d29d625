#include "http/openai_response.h"

#include <string>

namespace prepackd::http {

HttpError ToHttpError(const grpc::Status& s, int http_status) {
    return prepack::openai::ToHttpError(absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message()),
                                        http_status);
}

const char* FinishReasonName(prepack_finish_reason reason) {
    return reason == PREPACK_FINISH_LENGTH ? "length" : "stop";
}

TokenLogprob LogprobOf(const prepack_event& e) {
    TokenLogprob t;
    t.token = e.token;
    t.logprob = e.logprob;
    for (size_t i = 0; i < e.n_top; ++i) t.top.emplace_back(e.top_ids[i], e.top_logprobs[i]);
    return t;
}

std::vector<TokenLogprob> PromptLogprobs(int32_t first, const prepack_event& e) {
    std::vector<TokenLogprob> scored;
    for (size_t i = 0; i < e.n_prompt_logprobs; ++i) {
        TokenLogprob t;
        t.token = e.prompt_token_ids[i];
        t.logprob = e.prompt_logprobs[i];
        for (size_t k = 0; k < e.prompt_n_top; ++k) {
            t.top.emplace_back(e.prompt_top_ids[i * e.prompt_n_top + k], e.prompt_top_logprobs[i * e.prompt_n_top + k]);
        }
        scored.push_back(std::move(t));
    }
    return prepack::openai::EchoedPrompt(first, std::move(scored));
}

void EndChoice(const prepack_event& end, Choice* c) {
    c->finish_reason = FinishReasonName(end.finish_reason);
    c->prompt_tokens = end.usage.prompt_tokens;
    c->completion_tokens = end.usage.completion_tokens;
    c->cached_tokens = end.usage.cached_prompt_tokens;
    c->reasoning_tokens = end.reasoning_tokens;
    c->tool_calls.clear();
    for (size_t i = 0; i < end.n_tool_calls; ++i) {
        const prepack_tool_call& t = end.tool_calls[i];
        c->tool_calls.push_back({t.id, t.name, std::string(t.arguments, t.arguments_len)});
    }
}

std::vector<prepack::openai::ToolCallDelta> ToolCallDeltas(const prepack_event& e) {
    std::vector<prepack::openai::ToolCallDelta> out;
    for (size_t i = 0; i < e.n_tool_call_deltas; ++i) {
        const prepack_tool_call_delta& d = e.tool_call_deltas[i];
        out.push_back({d.index, d.id != nullptr ? d.id : "", d.name != nullptr ? d.name : "",
                       std::string(d.arguments, d.arguments_len)});
    }
    return out;
}

Pieces EnginePieces(const prepack_engine* engine) {
    return Pieces([engine](const std::vector<int32_t>& ids) {
        std::string text(64, '\0');
        size_t len = 0;
        prepack_status st = prepack_detokenize(engine, ids.data(), ids.size(), text.data(), text.size(), &len);
        if (st == PREPACK_OUT_OF_RANGE) {
            text.resize(len + 1);
            st = prepack_detokenize(engine, ids.data(), ids.size(), text.data(), text.size(), &len);
        }
        text.resize(st == PREPACK_OK ? len : 0);
        return text;
    });
}

}  // namespace prepackd::http
