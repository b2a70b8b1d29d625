// OpenAI request bodies (/v1/chat/completions, /v1/completions) -> what each
// asks for, in plain types that prepackd (to its GenerateRequest) and the
// CLI (to the engine's Request) convert from, so that both accept exactly
// the same bodies with the same errors. Every field OpenAI's API reference
// defines is either implemented or refused INVALID_ARGUMENT naming it; so
// is any field it does not define, except prepack's extensions (top_k,
// min_p, repetition_penalty, ignore_eos, chat_template_kwargs,
// add_generation_prompt, lazy, lazy_schedule, lazy_keep_ratio,
// lazy_revive_limit, and the structured-output fields of vLLM and
// llama.cpp: see ResponseFormat). Nothing is silently ignored.
//
// Errors are absl::Status, INVALID_ARGUMENT (or NOT_FOUND for the model)
// with messages "FIELD: why", FIELD in the request's own JSON names
// ("messages[1].content[0].type"); response.h turns them into OpenAI's
// error envelope with FIELD as `param`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "openai/json_text.h"

namespace prepack::openai {

enum class Api { kChat, kCompletions };

// Choices per request (n) at most, and choices of all prompts together.
constexpr int kMaxN = 64;
constexpr int kMaxChoices = 128;
// Stop strings: at most this many, each at most this long.
constexpr size_t kMaxStop = 16;
constexpr size_t kMaxStopBytes = 256;

// Sampling and stopping, the same for every choice of a request. Unset
// optionals: the engine's defaults.
struct Sampling {
    std::optional<int32_t>   max_tokens;    // chat without it: the rest of the context
    float                    temperature = 1.0f;   // OpenAI's default
    std::optional<float>     top_p;
    std::optional<int32_t>   top_k;         // 0 = off
    std::optional<float>     min_p;
    std::optional<float>     repetition_penalty;
    bool                     ignore_eos = false;
    std::vector<std::string> stop;
};

// LazyLLM pruning (prepack's extensions).
struct Lazy {
    bool                       enabled = false;
    std::optional<std::string> schedule;
    std::optional<float>       keep_ratio;
    std::optional<int32_t>     revive_limit;
};

// Structured output: what the generated text must be. OpenAI's
// response_format ({"type": "json_object"}, {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"?, "description"?}}), on both
// endpoints as vLLM takes it, and the same constraint under the names other
// servers use: response_format {"type": "regex", "regex"} and {"type":
// "grammar", "grammar"} (prepack's), llama.cpp's {"type": "json_object",
// "schema"} and top-level "grammar" (GBNF), vLLM's guided_json,
// guided_regex, guided_grammar, guided_choice and structured_outputs {json,
// json_object, regex, grammar, choice}. At most one of them per request.
//
// Here only the shape is checked; the grammar itself (a schema's keywords, a
// regex, GBNF) is checked where it is compiled (the C ABI's
// prepack_grammar_check, the engine), whose errors go out prefixed with
// `field`. Kind numbers are those of prepack_grammar_kind and the engine's
// GrammarSpec::Kind.
struct ResponseFormat {
    enum class Kind : int32_t { kText = 0, kJsonObject = 1, kJsonSchema = 2, kRegex = 3, kGbnf = 4 };
    Kind        kind = Kind::kText;   // kText: unconstrained
    std::string text;                 // kJsonSchema: the schema's JSON text; kRegex: the pattern; kGbnf: the grammar
    std::string name;                 // json_schema.name ("" when not given that way)
    bool        strict = false;       // json_schema.strict (the output is held to the schema either way)
    std::string field;                // the request field that gave `text` (or the constraint), for errors:
                                      // "response_format.json_schema.schema", "guided_regex", ...

    bool active() const { return kind != Kind::kText; }
};

// guided_choice and structured_outputs.choice: at most this many choices.
constexpr size_t kMaxGuidedChoices = 256;

struct ToolCall {
    std::string id;          // optional
    std::string name;
    std::string arguments;   // JSON text (a JSON object's, checked where it is built)
};

// One chat message. content_parts are the texts of "text" parts; content
// is set otherwise (an empty list of parts is content ""; so is an
// assistant's missing or null content, as vLLM renders it).
struct Message {
    std::string                role;
    std::optional<std::string> content;
    std::vector<std::string>   content_parts;
    std::string                name;           // "" = none
    std::string                tool_call_id;   // "" = none
    std::vector<ToolCall>      tool_calls;
};

// Chat's tool calling: OpenAI's tool_choice and parallel_tool_calls. Mode
// numbers are those of the C ABI's prepack_tool_choice, prepack.v1's
// ToolChoiceMode and the engine's ToolChoice::Mode. kNone with tools: they
// are only rendered for the model to read (OpenAI's "none").
struct ToolChoice {
    enum class Mode : int32_t { kNone = 0, kAuto = 1, kRequired = 2, kFunction = 3 };
    Mode        mode = Mode::kNone;
    std::string function;          // kFunction: the tool to call
    bool        parallel = true;   // parallel_tool_calls: more than one call in an answer

    bool active() const { return mode != Mode::kNone; }
};

// Tools one request may give at most (OpenAI's limit).
constexpr size_t kMaxTools = 128;

struct Chat {
    std::vector<Message>  messages;
    std::string           tools_json;    // "" = none
    ToolChoice            tool_choice;   // kNone without tools
    std::string           kwargs_json;   // chat_template_kwargs, "" = none
    std::optional<bool>   add_generation_prompt;
};

// A completion's prompt: text, or token ids taken as given.
struct Prompt {
    std::string          text;
    std::vector<int32_t> ids;
    bool                 token_ids = false;
};

// What one /v1/chat/completions or /v1/completions request asks for.
struct ApiRequest {
    Api                     api = Api::kChat;
    Chat                    chat;       // kChat: the one prompt
    std::vector<Prompt>     prompts;    // kCompletions: one per prompt
    Sampling                sampling;
    Lazy                    lazy;
    int                     n = 1;      // choices per prompt
    bool                    stream = false;
    bool                    include_usage = false;   // stream_options.include_usage
    bool                    logprobs = false;        // log-probs of the chosen tokens
    int                     top_logprobs = 0;        // and this many alternatives
    bool                    echo = false;            // completions: the prompt first
    std::optional<uint64_t> seed;                    // choice i samples with seed + i
    std::string             user;                    // the caller's end-user id (logged)
    ResponseFormat          response_format;         // structured output (kText: none)

    // echo + logprobs: the echoed prompt's tokens are scored as well (the
    // first token brings their log-probs, with top_logprobs alternatives).
    bool   scores_prompt() const { return echo && logprobs; }
    size_t prompt_count() const { return api == Api::kChat ? 1 : prompts.size(); }
    int    choices() const { return n * static_cast<int>(prompt_count()); }
};

// `model` present and equal to `served_id`: INVALID_ARGUMENT when missing
// or not a string, NOT_FOUND when another model is named.
absl::Status CheckModel(const Json& body, const std::string& served_id);

// The body of a /v1/chat/completions or /v1/completions request, checked
// field by field. `vocab_size` bounds token ids; `max_choices` bounds the
// choices a request may ask for (prepackd: each holds an admission slot),
// on top of kMaxChoices.
absl::Status ParseChat(const Json& body, int max_choices, ApiRequest* out);
absl::Status ParseCompletion(const Json& body, int64_t vocab_size, int max_choices, ApiRequest* out);

// /tokenize and /detokenize (vLLM's shapes):
//   {"model"?, "prompt": TEXT, "add_special_tokens"?: true, "parse_special"?: false}
//   {"model"?, "messages": [...], "add_generation_prompt"?: true, "chat_template_kwargs"?: {...}}
//     -> {"count", "max_model_len", "tokens"}
//   {"model"?, "tokens": [ids]} -> {"prompt": TEXT}
struct TokenizeRequest {
    bool        chat = false;
    std::string text;
    bool        add_special = true;
    bool        parse_special = false;
    Chat        conversation;   // chat
};
absl::Status ParseTokenize(const Json& body, const std::string& served_id, TokenizeRequest* out);
absl::Status ParseDetokenize(const Json& body, const std::string& served_id, int64_t vocab_size,
                             std::vector<int32_t>* ids);

// The id a model is served under when none is given: the file's name
// without directory and ".gguf" (stories260K, SmolLM2-135M-Instruct.Q4_1),
// "synthetic:NAME" as it is.
std::string DefaultModelId(const std::string& model_path);

}  // namespace prepack::openai
