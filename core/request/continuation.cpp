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
        return out;
    }
    if (!eos && !length) return out;
    // The end: what the decoder and the stop matcher still hold is output
    // too, unless it completes a stop string.
    out.text += stops_.Push(detok_.Flush());
    if (!stops_.stopped()) out.text += stops_.Flush();
    out.finished = true;
    out.reason = stops_.stopped() ? FinishReason::kStop : eos ? FinishReason::kEos : FinishReason::kLength;
    return out;
}

}  // namespace prepack
