// OpenAI's response shapes, from plain per-choice results that prepackd (C
// ABI events) and the CLI (engine events) fill: the non-streamed
// /v1/chat/completions and /v1/completions bodies, usage, both log-prob
// shapes, and the error envelope with the HTTP status of each status.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "openai/json_text.h"
#include "openai/request.h"

namespace prepack::openai {

// A generated token's log-prob and its alternatives (best first).
struct TokenLogprob {
    int32_t                                token = 0;
    float                                  logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top;
    bool                                   unscored = false;   // a prompt's first token: null log-prob and top
};

// Token ids -> the bytes each stands for (the id detokenized alone),
// cached: the "token" strings of log-probs.
class Pieces {
public:
    using Detokenize = std::function<std::string(const std::vector<int32_t>& ids)>;
    explicit Pieces(Detokenize detokenize) : detokenize_(std::move(detokenize)) {}
    const std::string& Bytes(int32_t id);
    // The piece as JSON text (U+FFFD for bytes that are not UTF-8 alone).
    std::string Text(int32_t id);
    // `id`'s text right after `first` in a text: what detokenizing both adds
    // to `first` alone. It differs from Text(id) after a BOS, where a
    // SentencePiece vocabulary's leading space is dropped, so an echoed
    // prompt's pieces join into its text.
    std::string TextAfter(int32_t first, int32_t id);

private:
    Detokenize                               detokenize_;
    std::unordered_map<int32_t, std::string> cache_;
};

// echo + logprobs: the prompt's log-probs as the legacy shape lists them,
// its first token (`first`, which nothing before it scores) unscored, then
// `scored`, the log-probs of the others.
std::vector<TokenLogprob> EchoedPrompt(int32_t first, std::vector<TokenLogprob> scored);

// Chat's shape: {"content": [{"token", "logprob", "bytes", "top_logprobs":
// [{"token", "logprob", "bytes"}]}], "refusal": null}.
Json ChatLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces);
// The legacy shape: {"tokens", "token_logprobs", "top_logprobs": [{TOKEN:
// LOGPROB}], "text_offset"}; offsets count characters from *offset, which
// moves past these tokens.
Json CompletionLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces, size_t* offset);

// A piece of a tool call as it is generated (the engine's ToolCallDelta):
// a call's first piece has its index, id and name; its arguments' JSON
// text follows in pieces, all with that index.
struct ToolCallDelta {
    int32_t     index = 0;
    std::string id;          // first piece of a call only
    std::string name;        // first piece of a call only
    std::string arguments;   // a piece of the arguments' JSON text
};

// delta.tool_calls of a chat.completion.chunk, as the openai SDK's stream
// helpers add them up: a call's first piece [{"index", "id", "type":
// "function", "function": {"name", "arguments"}}], later ones [{"index",
// "function": {"arguments"}}] (the SDK joins strings, so id, type and
// name come once).
Json ToolCallDeltasJson(const std::vector<ToolCallDelta>& deltas);
// message.tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
Json ToolCallsJson(const std::vector<ToolCall>& calls);
// Adds `deltas` to the calls they build, as a client does: a piece whose
// index is new starts call `index` (indices count up from 0 with no gap;
// a piece that skips one is dropped), the others append arguments.
void AddToolCallDeltas(const std::vector<ToolCallDelta>& deltas, std::vector<ToolCall>* calls);

// One choice as it was generated.
struct Choice {
    std::string               text;        // the answer (with echo: the prompt first); with tool calls, what
                                           // is not a call
    std::string               reasoning;   // thinking, apart from the answer
    std::vector<ToolCall>     tool_calls;  // chat with tools: the calls of the answer, whole
    std::vector<TokenLogprob> logprobs;    // when asked for
    const char*               finish_reason = "stop";   // "stop" (a stop string, the model's end) or "length"
    int64_t                   prompt_tokens = 0;
    int64_t                   completion_tokens = 0;
    int64_t                   cached_tokens = 0;      // prompt tokens read from shared KV
    int64_t                   reasoning_tokens = 0;
    size_t                    offset = 0;  // completions' text_offset of the next token
    size_t                    prompt_logprobs = 0;   // echo + logprobs: the first entries of `logprobs` score the prompt
};

// The choice's finish_reason as OpenAI says it: "tool_calls" when the
// answer called tools and was not cut short, else its own.
const char* ChoiceFinishReason(const Choice& choice);

// Usage of a whole request.
struct UsageTotals {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;
    int64_t reasoning_tokens = 0;
};
// Choice k is choice k % n of prompt k / n. A prompt counts once whatever
// n; its cached tokens are those every choice of it read from shared KV.
UsageTotals SumUsage(const std::vector<Choice>& choices, int n);
Json UsageJson(const UsageTotals& u);

// What every object of one response carries.
struct ResponseHead {
    std::string id;        // chatcmpl-... / cmpl-... (NewId)
    int64_t     created = 0;
    std::string model;
};
// {"id", "object", "created", "model"}.
Json Envelope(const ResponseHead& head, const char* object);
// The non-streamed response: a "chat.completion" or "text_completion"
// with every choice, log-probs when `request` asked for them, and usage. A
// chat choice with tool calls has message.tool_calls, content null when
// the answer is only calls, and finish_reason ChoiceFinishReason().
Json ResponseBody(const ApiRequest& request, const ResponseHead& head, std::vector<Choice>& choices,
                  Pieces& pieces);

// An error as OpenAI sends it: the HTTP status and
// {"error": {"message", "type", "param", "code"}}.
struct HttpError {
    int  status = 500;
    Json body;
    int  retry_after_s = 0;   // > 0: a Retry-After header (429)
};
// The HTTP error for a status (never OK):
//   INVALID_ARGUMENT, FAILED_PRECONDITION  400 invalid_request_error
//   OUT_OF_RANGE                           400 invalid_request_error, code context_length_exceeded
//   UNAUTHENTICATED                        401 authentication_error, code invalid_api_key
//   NOT_FOUND                              404 invalid_request_error, code model_not_found
//   RESOURCE_EXHAUSTED                     429 rate_limit_error (Retry-After: 1), unless `http_status` says otherwise
//   UNAVAILABLE                            503 server_error, code service_unavailable
//   anything else                          500 server_error
// `param` is the field a "FIELD: why" message names (null otherwise).
// `http_status` > 0 overrides the status (the type follows it).
HttpError ToHttpError(const absl::Status& status, int http_status = 0);
// The envelope itself; empty param or code become null.
Json ErrorBody(const std::string& message, const std::string& type, const std::string& param,
               const std::string& code);

// A fresh id: PREFIX followed by 24 random hex digits.
std::string NewId(const char* prefix);

}  // namespace prepack::openai
