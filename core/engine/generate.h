// Single-request generation: prefill the prompt (in chunks), then decode
// token by token with the sampler until EOS, max tokens, a stop string or
// the end of the context. Streams text through a callback as it is made.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_call_stream.h"
#include "core/grammar/grammar_spec.h"
#include "core/lazyllm/lazy_schedule.h"
#include "core/lazyllm/lazy_scoring.h"
#include "core/request/grammar_compiler.h"
#include "core/request/request.h"
#include "core/request/sampler.h"
#include "core/step/step_runner.h"

namespace prepack {

struct GenerateRequest {
    std::string              prompt;          // used when prompt_tokens is empty
    std::vector<int32_t>     prompt_tokens;   // token ids, taken as given (BOS not added)
    int32_t                  max_tokens = 128;
    SamplingParams           sampling;
    std::vector<std::string> stop;
    bool                     add_bos = true;          // BOS/EOS as the vocabulary says
    bool                     parse_special = false;   // control-token text becomes that token
    bool                     ignore_eos = false;   // keep going after the model's EOS
    bool                     lazy = false;         // LazyLLM pruning (the prompt is prefilled in one step)
    LazySchedule             lazy_schedule;        // empty: the model's default schedule
    int32_t                  lazy_revive_limit = 0;   // pruned tokens a step may bring back: ResolveReviveLimit
    LazyScoring              lazy_scoring = DefaultLazyScoring();
    // Structured output: the generated text must be a sentence of this
    // grammar (see Request::grammar). Not with ignore_eos.
    grammar::GrammarSpec     grammar;
    // The grammar applies from this text on (Continuation::ConstrainFrom);
    // "" = from the first token.
    std::string              grammar_trigger;
    // Tool calls: the output goes through this stream (a request's
    // ToolCallSetup, tool_calls.h, gives its format, tools and trigger), so
    // GenerateResult::text is the content and tool_calls the calls.
    std::optional<ToolCallStream> tool_calls;
    // Where the grammar is compiled: the caller's (one per model, so the
    // model's token trie and compiled grammars are reused across calls),
    // or null for one made for this call alone (the trie built anew).
    GrammarCompiler*         grammars = nullptr;
};

struct GenerateResult {
    std::vector<int32_t> prompt_tokens;
    std::vector<int32_t> tokens;         // generated ids
    std::string          text;           // generated text, stop string excluded (with tool_calls: the content)
    std::vector<ParsedToolCall> tool_calls;   // GenerateRequest::tool_calls: the answer's calls
    FinishReason         finish_reason = FinishReason::kLength;
    double               prefill_seconds = 0.0;
    double               decode_seconds = 0.0;
    // LazyLLM: fraction of the prompt's token-layers the prefill computed,
    // and per layer the fraction of prompt tokens it computed (all 1 without pruning).
    std::vector<float>   first_logits;   // the next-token logits after the prompt
    double               prompt_work_fraction = 1.0;
    double               prompt_work_fraction_end = 1.0;   // also counting tokens decode steps brought back
    std::vector<double>  prompt_layer_fractions;
    // Per generated token, when it was sampled: seconds since the prefill
    // began, and under LazyLLM the prompt work fraction and the pruned
    // tokens brought back so far (so one run reports every output length).
    std::vector<double>  token_seconds;
    std::vector<double>  token_work_fraction;
    std::vector<int64_t> token_revived;
    int32_t              max_revived_in_step = 0;
};

using TextCallback = std::function<void(std::string_view)>;

// Errors (nothing is generated): INVALID_ARGUMENT for an empty prompt, a
// prompt longer than the context, token ids outside the vocabulary, invalid
// sampling values, max_tokens < 0, a grammar its front end refuses (its
// message, unchanged) or a grammar with ignore_eos; RESOURCE_EXHAUSTED when
// the KV pool cannot hold the prompt or the grammar passes a compile limit.
// A grammar that cannot go on mid-generation (no token of the vocabulary
// continues it, or its matcher failed) returns that error after the text
// so far went to `on_text`. Blocks are released before returning.
absl::StatusOr<GenerateResult> Generate(StepRunner& forward, const GenerateRequest& request,
                                        const TextCallback& on_text = {});

// Prefill chunk size: bounds activation memory for long prompts.
constexpr int32_t kPrefillChunk = 512;

}  // namespace prepack
