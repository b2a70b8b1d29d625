#include "core/request/continuation.h"

namespace prepack {

Continuation::Continuation(const Tokenizer& tok, const SamplingParams& sampling, std::vector<std::string> stop,
                           ContinuationLimits limits)
    : tok_(&tok), sampler_(sampling), detok_(tok), stops_(std::move(stop)), limits_(limits) {}

void Continuation::PrimeWithPrompt(std::span<const int32_t> prompt) {
    for (int32_t id : prompt) detok_.Push(id);
}

NextToken Continuation::Next(std::span<const float> logits, std::vector<int32_t>* tokens) {
    NextToken out;
    out.token = sampler_.Sample(logits, *tokens);
    tokens->push_back(out.token);
    ++generated_;
    // EOS, and the vocabulary's other end-of-generation tokens (<|eot_id|>,
    // <|im_end|>, ...: what a chat model ends its turn with).
    const bool eos = tok_->IsEndOfGeneration(out.token) && !limits_.ignore_eos;
    const bool length = generated_ >= limits_.max_tokens || static_cast<int32_t>(tokens->size()) >= limits_.max_context;
    if (!eos) out.text = stops_.Push(detok_.Push(out.token));   // the end token's text is not output
    if (stops_.stopped()) {
        out.finished = true;
        out.reason = FinishReason::kStop;
        Split(&out);
        return out;
    }
    if (!eos && !length) {
        Split(&out);
        return out;
    }
    // The end: what the decoder and the stop matcher still hold is output
    // too, unless it completes a stop string.
    out.text += stops_.Push(detok_.Flush());
    if (!stops_.stopped()) out.text += stops_.Flush();
    out.finished = true;
    out.reason = stops_.stopped() ? FinishReason::kStop : eos ? FinishReason::kEos : FinishReason::kLength;
    Split(&out);
    return out;
}

void Continuation::Split(NextToken* out) {
    const bool was_inside = reasoning_.inside();
    ReasoningDelta d = reasoning_.Push(out->text);
    if (out->finished) {
        ReasoningDelta rest = reasoning_.Flush();
        d.reasoning += rest.reasoning;
        d.content += rest.content;
    }
    out->in_reasoning = was_inside || reasoning_.inside() || !d.reasoning.empty();
    out->text = std::move(d.content);
    out->reasoning = std::move(d.reasoning);
}

}  // namespace prepack
