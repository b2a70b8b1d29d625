// prepack_binding.h: the C++ layer that SWIG wraps for Go, Java and C#.
//
// The raw C ABI (prepack.h) is pointers, out-parameters and buffers whose
// lifetime ends at the next call; generated bindings over it would hand
// those hazards to every language. This layer owns them instead: requests,
// tokens and results are value types whose strings and arrays are copied,
// handles are objects whose Close() is idempotent, and every non-OK
// prepack_status becomes an Error.
//
// ERRORS
//   Every call that can fail takes a trailing `Status* status`:
//     NULL      the call throws Error (Java and C# pass NULL: the parameter is
//               hidden there and SWIG turns Error into the language's exception);
//     non-NULL  the call stores the outcome there, never throws, and returns a
//               zero value on failure (Go passes one and returns an `error`).
//
// THREADS
//   Engine: any number of threads may call it at once; Close() from any
//   thread cancels the requests still running.
//   Stream: Next() from one thread at a time; Cancel() and Close() from any
//   thread, at any time, any number of times.
//   Deleting an Engine or Stream object is the one operation that needs no
//   other call in flight on it; the language layers guarantee that.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "prepack/prepack.h"

namespace prepack {
namespace binding {

// A prepack_status code with its message, thrown by calls given no Status.
class Error : public std::exception {
public:
    Error(int code, std::string message);
    int                code() const { return code_; }
    const std::string& message() const { return message_; }
    const char*        what() const noexcept override { return message_.c_str(); }

private:
    int         code_;
    std::string message_;
};

// The outcome of one call, for languages without exceptions.
class Status {
public:
    bool        ok() const { return code_ == PREPACK_OK; }
    int         code() const { return code_; }
    std::string message() const { return message_; }
    void        Set(int code, std::string message);

private:
    int         code_ = PREPACK_OK;
    std::string message_;
};

// The library's version string and the name of a status code.
std::string Version();
std::string StatusName(int code);

// Checks a grammar without an engine (prepack_grammar_check): returns
// normally when `kind` (prepack_grammar_kind) and `grammar` would be
// accepted by a request, else INVALID_ARGUMENT naming the problem (a
// schema's keyword and JSON pointer, a GBNF line and column, an unknown
// kind). `grammar` follows Request::grammar's rule for "".
void CheckGrammar(int32_t kind, const std::string& grammar, Status* status);

// What the engine loads and how it runs. Defaults are prepack_engine_options_init's.
struct EngineOptions {
    EngineOptions();
    std::string model;             // GGUF path or "synthetic:NAME"
    int32_t     device;            // prepack_device
    int32_t     threads;           // 0 = all CPUs
    int64_t     kv_budget_bytes;   // 0 = room for one full context
    int32_t     kv_block_size;
    int32_t     max_batch_tokens;
    int32_t     max_running;
    int32_t     policy;            // prepack_policy
    int32_t     dtype;             // prepack_dtype: how weight matrices are stored
    std::string chat_template_file;   // a Jinja chat template for chat requests; "" = the model's own
};

// One message of a conversation (prepack_chat_message). Its content is
// `content` when has_content, and the text parts `content_parts` when there
// are any (both at once is the library's INVALID_ARGUMENT); neither is no
// content (an assistant turn of tool calls only). "" is none for the rest.
struct ChatMessage {
    std::string              role;              // "system", "user", "assistant", "tool", ...
    std::string              content;
    bool                     has_content = true;
    std::vector<std::string> content_parts;     // joined by "\n" for templates that expect a string
    std::string              name;
    std::string              tool_calls_json;   // a JSON list of OpenAI tool calls
    std::string              tool_call_id;      // which call a "tool" message answers
};

// A conversation for the model's chat template (prepack_chat). Defaults are
// prepack_chat_init's; "" is none for the strings.
struct Conversation {
    Conversation();
    std::vector<ChatMessage> messages;
    std::string              tools_json;              // a JSON list of tool definitions
    std::string              kwargs_json;             // a JSON object of further template variables
    bool                     add_generation_prompt;   // end with the assistant's opening
    std::string              template_name;           // one of the model's named templates ("tool_use")
};

// A conversation rendered as a chat request would be (prepack_chat_render).
struct ChatPrompt {
    std::string          text;
    std::vector<int32_t> ids;   // BOS as the vocabulary says
};

// One generation request. Defaults are prepack_request_init's. Its prompt
// is `chat` when has_chat, else prompt_tokens when non-empty or
// prompt_tokens_set, else `prompt`. With has_chat, a non-empty prompt or
// prompt_tokens (or prompt_tokens_set) still goes to the library, which
// refuses the mix (INVALID_ARGUMENT), as it does empty prompt_tokens.
struct Request {
    Request();
    std::string              prompt;          // UTF-8 text
    std::vector<int32_t>     prompt_tokens;   // taken as given (no BOS added)
    bool                     prompt_tokens_set = false;   // prompt_tokens is the prompt even when empty
    bool                     has_chat = false;            // `chat` is the prompt
    Conversation             chat;            // rendered by the model's chat template
    bool                     add_bos;         // BOS (and EOS) as the vocabulary says
    bool                     parse_special;   // control-token text (<|eot_id|>) in `prompt` becomes that token
    int32_t                  max_tokens;
    float                    temperature;     // 0 = greedy
    int32_t                  top_k;
    float                    top_p;
    float                    min_p;
    float                    repetition_penalty;
    int64_t                  seed;            // reinterpreted as the C uint64_t
    std::vector<std::string> stop;
    int32_t                  logprobs;        // alternatives per token, 0..20
    bool                     ignore_eos;
    int64_t                  deadline_ms;     // 0 = none
    bool                     lazy;            // LazyLLM pruning of the prompt
    float                    lazy_keep_ratio; // 0 = the default schedule; see prepack.h
    std::string              lazy_schedule;   // "LAYER:KEEP,..."; "" = unset
    int32_t                  lazy_revive_limit; // pruned tokens a decode step may bring back: 0 = default, -1 = no bound
    // Structured output: the generated text is a sentence of this grammar.
    // grammar_kind is a prepack_grammar_kind (NONE by default); grammar is its
    // text (a JSON Schema, a regex or GBNF). "" is no text (NULL) for NONE and
    // JSON_OBJECT, which take none, and the empty text for the other kinds.
    int32_t                  grammar_kind;
    std::string              grammar;
    // Tool calls of a chat with tools (prepack_tool_choice; AUTO by default).
    // tool_choice_function names the tool for FUNCTION ("" = none, NULL).
    int32_t                  tool_choice;
    std::string              tool_choice_function;
    bool                     parallel_tool_calls;   // on by default; off: at most one call
};

// A tool call of a chat request with tools, whole (prepack_tool_call).
struct ToolCall {
    std::string id;          // "call_" + 24 characters
    std::string name;        // the function called
    std::string arguments;   // a JSON object's text
};

// A piece of a tool call as it is generated (prepack_tool_call_delta).
struct ToolCallDelta {
    int32_t     index = 0;   // the call's place in the answer: 0, 1, ...
    std::string id;          // a call's first piece: its id; "" after
    std::string name;        // a call's first piece: the function; "" after
    std::string arguments;   // a piece of the arguments' JSON text (may be "")
};

// One generated token, copied out of the C event.
struct Token {
    int32_t              id = 0;
    std::string          text;                // whole UTF-8; may be empty while text is pending
    std::string          reasoning;           // chat with thinking: this token's thinking text, apart from text
    float                logprob = 0.0f;
    std::vector<int32_t> top_ids;             // request.logprobs alternatives, best first
    std::vector<float>   top_logprobs;
    std::vector<ToolCallDelta> tool_call_deltas;   // chat with tools: the calls as they are generated (often none)
};

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    int32_t cached_prompt_tokens = 0;
    double  queue_ms = 0.0;
    double  ttft_ms = 0.0;
    double  total_ms = 0.0;
    double  pruned_fraction = 0.0;
    int32_t reasoning_tokens = 0;   // chat with thinking: generated tokens that were thinking
};

// A finished request: everything a stream delivered and how it ended.
struct Result {
    std::vector<int32_t> tokens;
    std::string          text;                                  // for a chat with thinking: the answer
    std::string          reasoning;                             // ... and the thinking, apart
    int32_t              finish_reason = PREPACK_FINISH_NONE;   // prepack_finish_reason
    int32_t              status = PREPACK_OK;                   // prepack_status
    std::string          message;                               // "" when OK
    Usage                usage;
    std::vector<ToolCall> tool_calls;                           // chat with tools: every call, never in text
};

// What Stream::Next() found.
enum NextResult {
    NEXT_TOKEN   = 0,   // token() holds a new token
    NEXT_END     = 1,   // the request ended; result() is final
    NEXT_TIMEOUT = 2    // nothing within the timeout; call again
};

// One request's events (owns a prepack_stream).
class Stream {
public:
    explicit Stream(prepack_stream* stream);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Waits up to timeout_ms (< 0: without limit) for the next event. After
    // the end, returns NEXT_END at once, every time. FAILED_PRECONDITION once
    // closed, also after the end (closed is checked first).
    NextResult Next(int64_t timeout_ms, Status* status);
    // The last token Next() returned (a copy).
    Token token() const;
    // The tokens and text so far; after NEXT_END also how the request ended.
    Result result() const;
    bool   ended() const;
    // Stops the request; Next() then reaches the end with CANCELLED. No-op
    // once ended or closed.
    void Cancel();
    // Cancels the request if running and frees the C stream; waits for a
    // Next() in flight on another thread to return. Idempotent.
    void Close();
    bool closed() const;

private:
    mutable std::mutex next_mu_;     // held by Next() and Close(): one reader, no free under it
    mutable std::mutex handle_mu_;   // guards stream_ against Cancel() racing Close()
    prepack_stream*    stream_;
    bool               ended_ = false;
    Token              token_;
    Result             result_;
};

// One loaded model and its scheduler (owns a prepack_engine).
class Engine {
public:
    // Loads the model. The caller owns the returned engine.
    static Engine* Open(const EngineOptions& options, Status* status);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Starts a request; the caller owns the returned stream.
    Stream* Start(const Request& request, Status* status);
    // Runs a request to its end. A request that ends with a status other
    // than OK (cancelled, deadline) is an error.
    Result Generate(const Request& request, Status* status);
    // Runs requests as one offline batch (under the BATCHLLM policy shared
    // prefixes are computed once); results in request order, each as a
    // Stream would end (thinking and reasoning_tokens included). A request
    // that fails has its status in its result; the call itself fails only
    // for an empty list, a closed engine or shutdown.
    std::vector<Result> GenerateBatch(const std::vector<Request>& requests, Status* status);
    // The prompt a chat request of `conversation` gets: INVALID_ARGUMENT (a
    // bad message, bad JSON, a template error), FAILED_PRECONDITION (no chat
    // template), RESOURCE_EXHAUSTED (past the render limits).
    ChatPrompt RenderChat(const Conversation& conversation, Status* status);
    // Token ids of `text`: BOS/EOS as the vocabulary says when add_special;
    // control-token text (<|eot_id|>, <|im_end|>) is that token only with
    // parse_special, else ordinary text (prepack_tokenize_special).
    std::vector<int32_t> Tokenize(const std::string& text, bool add_special, bool parse_special, Status* status);
    // The text of `ids`, exactly (prepack_detokenize).
    std::string Detokenize(const std::vector<int32_t>& ids, Status* status);
    // Stops the engine: running requests end with CANCELLED (their streams
    // stay readable); waits for a GenerateBatch() in flight. Idempotent.
    void Close();
    bool closed() const;

private:
    explicit Engine(prepack_engine* engine);

    mutable std::shared_mutex mu_;   // shared: calls using engine_; exclusive: Close()
    prepack_engine*           engine_;
};

}  // namespace binding
}  // namespace prepack
