// What a caller asks the engine for, and what the engine streams back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/chat/chat_template.h"
#include "core/chat/conversation.h"
#include "core/chat/tool_call_stream.h"
#include "core/chat/tool_calls.h"
#include "core/grammar/grammar_spec.h"
#include "core/model/model.h"
#include "core/request/sampler.h"

namespace prepack {

// Why generation ended: a stop string, max tokens / end of context, the
// model's EOS, a cancellation, or an error (the accompanying status says which).
enum class FinishReason { kStop, kLength, kEos, kCancelled, kError };
const char* FinishReasonName(FinishReason r);

// The prompt's token ids: `prompt_tokens` as given, else `prompt` encoded
// (BOS/EOS as the vocabulary says when `add_bos`; an empty prompt is BOS
// alone). INVALID_ARGUMENT for a prompt of no tokens at all, invalid UTF-8,
// ids outside the vocabulary, or a prompt that leaves no room in the context.
absl::StatusOr<std::vector<int32_t>> ResolvePrompt(const Model& model, const std::string& prompt,
                                                   const std::vector<int32_t>& prompt_tokens, bool add_bos,
                                                   bool parse_special = false);

// A request's prompt as ids, and how its output is to be read.
struct ResolvedPrompt {
    std::vector<int32_t> ids;
    bool reasoning = false;       // split <think> sections from the answer
    bool thinking_open = false;   // the answer starts inside one (the prompt opened it)
};

struct Request;
// The ids of `request`'s prompt: its conversation through `templates` when
// it is a chat request (see ChatTemplates::Apply), else ResolvePrompt. The
// same checks as ResolvePrompt on the result.
absl::StatusOr<ResolvedPrompt> ResolveRequestPrompt(const Model& model, const ChatTemplates& templates,
                                                    const Request& request);

struct Request {
    // A conversation, rendered by the model's chat template into the prompt
    // (its markup as control tokens, message text never). When set, prompt
    // and prompt_tokens must be empty and parse_special off.
    std::shared_ptr<const Conversation> chat;
    std::string              prompt;          // used when prompt_tokens is empty
    std::vector<int32_t>     prompt_tokens;   // ids, taken as given (no BOS added)
    bool                     add_bos = true;          // BOS/EOS as the vocabulary says (llama.cpp's add_special)
    bool                     parse_special = false;   // control-token text (<|eot_id|>) becomes that token
    int32_t                  max_tokens = 128;
    SamplingParams           sampling;
    std::vector<std::string> stop;
    bool                     ignore_eos = false;
    int64_t                  deadline_ms = 0;   // wall-clock budget from submission; 0 = none
    int32_t                  logprobs = 0;      // most likely alternatives to report per token (0..kMaxLogprobs)
    // >= 0: also report log p of each prompt token after the first, given
    // the ones before it, with this many alternatives (0..kMaxLogprobs), on
    // the first token's event: what evaluation harnesses score a text by
    // (OpenAI's legacy echo + logprobs). The request then computes its whole
    // prompt itself (no KV from a shared prefix) and cannot be pruned. -1: off.
    int32_t                  prompt_logprobs = -1;
    // LazyLLM pruning of the prompt. The schedule is text ("L1:K1,..."),
    // checked against the model at submission; empty = the default.
    bool                     lazy = false;
    std::string              lazy_schedule;
    float                    lazy_keep_ratio = 0.0f;   // when lazy_schedule is empty: see ResolveLazySchedule
    int32_t                  lazy_revive_limit = 0;    // pruned tokens a decode step may bring back: ResolveReviveLimit
    std::string              lazy_scoring;             // ParseLazyScoring's text; empty = the default
    // Structured output: the generated text must be a sentence of this
    // grammar (JSON Schema, any JSON object, a regex or GBNF; core/grammar).
    // Tokens that cannot continue it are masked before sampling; end tokens
    // are allowed only where it may end.
    grammar::GrammarSpec     grammar;
    // Tool calling, for a chat request whose conversation has tools: how
    // the model may call them (OpenAI's tool_choice and parallel_tool_calls;
    // kAuto is OpenAI's default when tools are given). With kNone the tools
    // are only rendered for the model to see. Otherwise the call format is
    // read from the chat template (tool_calls.h), the call is constrained
    // by the format's grammar (from its trigger on, under kAuto), and the
    // calls come back as Event::tool_call_deltas and, at the end,
    // Event::tool_calls instead of text. Not together
    // with `grammar`.
    ToolChoice               tool_choice;
};

constexpr int32_t kMaxLogprobs = 20;

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    double  queue_seconds = 0.0;        // submitted -> first scheduled
    double  time_to_first_token = 0.0;  // submitted -> first token
    double  total_seconds = 0.0;        // submitted -> finished
    int32_t cached_prompt_tokens = 0;   // prompt tokens whose KV came from a shared prefix (not computed)
    int32_t reasoning_tokens = 0;       // generated tokens inside a <think> section (chat with a reasoning template)
    double  pruned_fraction = 0.0;      // LazyLLM: fraction of the prompt's token-layers skipped by its prefill
    std::vector<double> prompt_layer_fractions;   // LazyLLM: per layer, fraction of prompt tokens computed
};

struct Event {
    enum class Kind { kToken, kFinish };
    Kind kind = Kind::kToken;
    // kToken
    int32_t     token = -1;
    std::string text;        // complete UTF-8; may be empty while a stop string or code point is pending
    std::string reasoning;   // a reasoning model's thinking (chat requests): apart from `text`, tags dropped
    float       logprob = 0.0f;                        // log p(token) under the model
    std::vector<std::pair<int32_t, float>> top_logprobs;   // Request::logprobs best (id, log p), best first
    // The first kToken of a request with prompt_logprobs >= 0: entry i is
    // prompt token i + 1's (the first token has no context to score it by).
    struct PromptLogprob {
        int32_t                                token = -1;   // the prompt token scored
        float                                  logprob = 0.0f;
        std::vector<std::pair<int32_t, float>> top;   // Request::prompt_logprobs best, best first
    };
    std::shared_ptr<const std::vector<PromptLogprob>> prompt_logprobs;
    // A request with tools (Request::tool_choice): the calls as they are
    // generated, OpenAI's streaming deltas (a call's first delta has its
    // index, id and name; its arguments' JSON follows in pieces). The call
    // markup is never in `text`. Any kToken event may carry some.
    std::vector<ToolCallDelta> tool_call_deltas;
    // kFinish
    FinishReason finish_reason = FinishReason::kLength;
    absl::Status status;     // OK, or why the request ended early (CANCELLED, DEADLINE_EXCEEDED, ...)
    // A request with tools: every call of the answer, whole (the deltas
    // added up, the same ids); non-empty means OpenAI's finish_reason
    // "tool_calls" (unless the answer was cut off: kLength).
    std::vector<ParsedToolCall> tool_calls;
    Usage        usage;
};

}  // namespace prepack
