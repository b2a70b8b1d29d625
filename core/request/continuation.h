// A request's output as it is generated, token by token: the one
// implementation of sampling and stopping, used by single-request generation
// (engine/generate.h) and by the engine alike. Each call takes the model's
// next-token logits, samples a token (core/request/sampler.h), decodes its
// text (whole UTF-8 only), holds back text that may still begin a stop
// string, and says whether the generation ends: an end-of-generation token
// (EOS, EOT, <|im_end|>, ... as the vocabulary says; unless EOS is ignored),
// a stop string, max tokens, or the end of the context.
//
// Structured output: with a grammar's matcher (Constrain), each token is
// drawn from the tokens the grammar allows next (the mask applies before
// every sampling filter), end tokens only where the text is complete; the
// generation also ends where the grammar allows nothing but an end token
// (kStop, as OpenAI reports it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/chat/reasoning.h"
#include "core/grammar/matcher.h"
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
    // reason kError: why (a grammar that allows no token of the vocabulary
    // here, or whose matcher failed); no token was sampled (token = -1).
    absl::Status status;
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
    // Constrains the output to `matcher`'s grammar (fresh: it follows the
    // generated tokens only, never the prompt). Not with ignore_eos: the
    // grammar decides where end tokens may come.
    void Constrain(grammar::Matcher matcher) { grammar_.emplace(std::move(matcher)); }
    bool constrained() const { return grammar_.has_value(); }

    // Samples the next token from `logits` (one vocab-long row), appends it
    // to `tokens` (the prompt and every token generated so far, which the
    // repetition penalty reads) and returns its text. When the generation
    // ends with it, the text held back for possible stop strings is
    // released (except after a stop string, which is never emitted). A
    // constrained continuation that cannot go on ends with kError and its
    // status, sampling nothing (token -1, `tokens` unchanged).
    NextToken Next(std::span<const float> logits, std::vector<int32_t>* tokens);

    int32_t generated() const { return generated_; }

private:
    // Routes out->text through the reasoning splitter (a no-op unless on).
    void Split(NextToken* out);
    // The grammar's next-token mask into mask_; not OK when it allows no token.
    absl::Status FillGrammarMask();
    // Ends the generation with `status` (kError).
    NextToken Failed(absl::Status status);
    // At the end: appends what the decoder and the stop matcher hold back,
    // unless it completes a stop string.
    void ReleaseHeldText(NextToken* out);

    const Tokenizer*   tok_;
    Sampler            sampler_;
    StreamDecoder      detok_;
    StopMatcher        stops_;
    ReasoningSplitter  reasoning_;
    ContinuationLimits limits_;
    int32_t            generated_ = 0;
    std::optional<grammar::Matcher> grammar_;
    grammar::TokenMask               mask_;   // reused: no allocation per token
};

}  // namespace prepack
