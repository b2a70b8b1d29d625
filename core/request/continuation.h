// A request's output as it is generated, token by token: the one
// implementation of sampling and stopping, used by single-request generation
// (engine/generate.h) and by the engine alike. Each call takes the model's
// next-token logits, samples a token (core/request/sampler.h), decodes its
// text (whole UTF-8 only), holds back text that may still begin a stop
// string, and says whether the generation ends: an end-of-generation token
// (EOS, EOT, <|im_end|>, ... as the vocabulary says; unless EOS is ignored),
// a stop string, max tokens, or the end of the context.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/chat/reasoning.h"
#include "core/model/tokenizer.h"
#include "core/request/request.h"
#include "core/request/sampler.h"
#include "core/request/stop_strings.h"

namespace prepack {

struct ContinuationLimits {
    int32_t max_tokens = 128;    // tokens to generate at most
    int32_t max_context = 0;     // the model's context: prompt + generated stay within it
    bool    ignore_eos = false;  // keep going after end-of-generation tokens
};

// What one sampled token adds.
struct NextToken {
    int32_t      token = -1;
    std::string  text;               // text that became safe to emit (may be empty)
    std::string  reasoning;          // with SplitReasoning: thinking text (then `text` is the answer's)
    bool         in_reasoning = false;   // with SplitReasoning: this token belongs to a <think> section
    bool         finished = false;
    FinishReason reason = FinishReason::kLength;   // when finished
};

class Continuation {
public:
    Continuation(const Tokenizer& tok, const SamplingParams& sampling, std::vector<std::string> stop,
                 ContinuationLimits limits);

    // Feeds the prompt's ids to the text decoder without emitting them (the
    // caller has the prompt's text), so the continuation's first space is kept.
    void PrimeWithPrompt(std::span<const int32_t> prompt);
    // A reasoning model's output: text inside <think>...</think> goes to
    // NextToken::reasoning; `inside`: the prompt opened the section.
    void SplitReasoning(bool inside) { reasoning_ = ReasoningSplitter(true, inside); }

    // Samples the next token from `logits` (one vocab-long row), appends it
    // to `tokens` (the prompt and every token generated so far, which the
    // repetition penalty reads) and returns its text. When the generation
    // ends with it, the text held back for possible stop strings is
    // released (except after a stop string, which is never emitted).
    NextToken Next(std::span<const float> logits, std::vector<int32_t>* tokens);

    int32_t generated() const { return generated_; }

private:
    // Routes out->text through the reasoning splitter (a no-op unless on).
    void Split(NextToken* out);

    const Tokenizer*   tok_;
    Sampler            sampler_;
    StreamDecoder      detok_;
    StopMatcher        stops_;
    ReasoningSplitter  reasoning_;
    ContinuationLimits limits_;
    int32_t            generated_ = 0;
};

}  // namespace prepack
