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
// (kStop, as OpenAI reports it). With a trigger (ConstrainFrom), the
// output is free until it contains the trigger, and the grammar reads it
// from the trigger's first byte on (tool calls under tool_choice "auto").
//
// Tool calls (ReadToolCalls): the answer's text goes through a
// ToolCallStream, so `text` carries only content and the calls come as
// deltas, then whole at the end. Reasoning is split off first: thinking
// never reaches the tool stream, and a trigger inside a <think> section
// does not start the grammar.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/chat/reasoning.h"
#include "core/chat/tool_call_stream.h"
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
    // With ReadToolCalls: the calls' deltas this token completed (the call
    // markup is never in `text`).
    std::vector<ToolCallDelta> tool_call_deltas;
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
    void SplitReasoning(bool inside) {
        reasoning_ = ReasoningSplitter(true, inside);
        reasoning_on_ = true;
        watch_thinking_ = inside;
    }
    // Constrains the output to `matcher`'s grammar (fresh: it follows the
    // generated tokens only, never the prompt). Not with ignore_eos: the
    // grammar decides where end tokens may come.
    void Constrain(grammar::Matcher matcher) { ConstrainFrom("", std::move(matcher)); }
    // Lazily: the output is free until its bytes contain `trigger` (outside
    // <think> sections, with SplitReasoning on); from the
    // token that completes it on, every token is drawn under `matcher`,
    // which first reads the output from the trigger's first byte to the end
    // of that token. Where those bytes do not continue the grammar (the
    // token went past the trigger into text the grammar refuses), the
    // grammar is dropped and the rest of the answer is free: no call is
    // forced into a shape the model did not start (the tool stream then
    // reads it as content unless it parses as a call). "" = Constrain.
    void ConstrainFrom(std::string trigger, grammar::Matcher matcher);
    // A grammar applies to every token (from the first, not after a trigger).
    bool constrained() const { return grammar_.has_value() && trigger_.empty(); }
    // The grammar applies now (from the start, or the trigger was seen).
    bool grammar_active() const { return grammar_.has_value() && grammar_active_; }

    // Reads tool calls out of the answer through `stream` (see the top).
    void ReadToolCalls(ToolCallStream stream) { tool_stream_.emplace(std::move(stream)); }
    // Once the generation ended (not by an error): the answer's calls, with
    // the ids their deltas had.
    const std::vector<ParsedToolCall>& tool_calls() const { return tool_calls_; }

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
    // Routes out->text through the reasoning splitter (a no-op unless on),
    // then the answer's part through the tool stream (when reading calls).
    void Split(NextToken* out);
    // Before the trigger: watches `token`'s bytes for it, and starts the
    // grammar where it completes (see ConstrainFrom).
    void WatchForTrigger(int32_t token);
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
    // Lazy grammar: its trigger, whether it applies yet, and the output's
    // bytes still to search (a tail shorter than the trigger or a think
    // tag, plus the last token's bytes: bounded).
    std::string                      trigger_;
    bool                             grammar_active_ = false;
    std::string                      watched_;
    bool                             reasoning_on_ = false;
    bool                             watch_thinking_ = false;   // the watched bytes are inside <think>
    std::optional<ToolCallStream>    tool_stream_;
    std::vector<ParsedToolCall>      tool_calls_;
};

}  // namespace prepack
