// Turns a prepack.v1.GenerateRequest into a prepack_request, checking every
// field first so that errors name the field (INVALID_ARGUMENT) and a request
// that cannot fit the context is refused before it reaches the engine
// (OUT_OF_RANGE). The checks come in two steps: CheckRequest is cheap
// (never tokenizes, so handlers on gRPC's threads may call it) and refuses
// text too long to be worth tokenizing; PrepareRequest tokenizes, which can
// take a while, so it runs on a call's own thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "openai/json_text.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd {

// A prepack_chat and the storage its pointers borrow: what was built here
// (tool calls as JSON, pointer arrays) and the strings of the
// prepack.v1.Conversation it was built from, which must outlive it. Not
// copyable or movable: `chat` points into the object itself.
class PreparedChat {
public:
    PreparedChat() { prepack_chat_init(&chat); }
    PreparedChat(const PreparedChat&) = delete;
    PreparedChat& operator=(const PreparedChat&) = delete;

    prepack_chat                          chat;
    std::vector<prepack_chat_message>     messages;
    std::vector<std::vector<const char*>> parts;        // per message: its content_parts
    std::vector<std::string>              tool_calls;   // per message: tool_calls_json ("" = none)
    std::vector<std::string>              tool_names;   // tools_json's function names, in order
};

// A prepack_request and the storage its pointers borrow. Not copyable or
// movable: `request` points into the object itself. A chat request also
// borrows the strings of the GenerateRequest it was prepared from.
class PreparedRequest {
public:
    PreparedRequest() { prepack_request_init(&request); }
    PreparedRequest(const PreparedRequest&) = delete;
    PreparedRequest& operator=(const PreparedRequest&) = delete;

    prepack_request          request;
    std::vector<int32_t>     prompt_ids;   // the prompt, tokenized (or rendered) here so its length is known
    std::vector<std::string> stop;
    std::vector<const char*> stop_ptrs;
    std::string              lazy_schedule;
    std::string              grammar;      // structured_output.text (request.grammar points here)
    PreparedChat             chat;         // a chat request's conversation (request.chat points here)
};

// OUT_OF_RANGE naming `field` when a text of `bytes` bytes is longer than
// max_prompt_bytes.
grpc::Status CheckPromptBytes(uint64_t bytes, const std::string& field, uint64_t max_prompt_bytes);

// Every check that needs no tokenizer: the fields (INVALID_ARGUMENT naming
// the field; `field_prefix` goes before field names, e.g. "requests[3]."
// inside a batch) and the text's size (OUT_OF_RANGE past max_prompt_bytes).
// `chat_field` is what errors call the conversation: "chat" (the
// GenerateRequest field), or "conversation" for a request Chat made.
grpc::Status CheckRequest(const prepack::v1::GenerateRequest& in, const std::string& field_prefix,
                          const prepack_model_desc& model, uint64_t max_prompt_bytes,
                          const std::string& chat_field = "chat");

// CheckRequest, then tokenizes (a conversation: renders, through
// prepack_chat_render), builds a structured output's grammar once to refuse
// a bad one (prepack_grammar_check: INVALID_ARGUMENT naming
// structured_output.text) and fills *out, which borrows from `in` for a chat
// request (a named tool_choice must name one of its tools). `deadline` is the call's deadline (system_clock::time_point::max()
// for none); the time left goes to the engine as deadline_ms. Returns
// CheckRequest's errors, RenderChat's, OUT_OF_RANGE when the prompt plus
// max_tokens exceed the context, or DEADLINE_EXCEEDED when the deadline
// already passed.
grpc::Status PrepareRequest(const prepack::v1::GenerateRequest& in, const std::string& field_prefix,
                            const prepack_engine* engine, const prepack_model_desc& model, uint64_t max_prompt_bytes,
                            std::chrono::system_clock::time_point deadline, PreparedRequest* out,
                            const std::string& chat_field = "chat");

// The checks of a tool choice that need no JSON parsed: a known mode, a
// function exactly for FUNCTION, REQUIRED and FUNCTION only on a chat with
// tools_json, a mode other than NONE not with structured_output or
// ignore_eos. Errors name `field` ("tool_choice", "requests[2].tool_choice").
// Whether the function is one of the tools is PrepareRequest's check.
grpc::Status CheckToolChoice(const prepack::v1::GenerateRequest& in, const std::string& field);

// The checks of a structured output that need no grammar built: a known
// kind, text present exactly when the kind takes it, no NUL character in it.
// Errors name `field` ("structured_output", "requests[2].structured_output").
grpc::Status CheckStructuredOutput(const prepack::v1::StructuredOutput& so, const std::string& field);

// The GenerateRequest a ChatRequest stands for (Chat runs it as Generate
// would). Moves the conversation and the other fields out of *in.
prepack::v1::GenerateRequest ToGenerateRequest(prepack::v1::ChatRequest* in);

// The bytes of a conversation that bound its prompt like a text prompt's
// (--max-prompt-bytes): every string in it (content, content_parts, roles,
// names, tool calls, tools_json, the kwargs). A template writes them into
// the prompt as they are and its markup only adds to them; the few bytes a
// template leaves out (a role it writes as markup) are what makes many
// empty messages cost their share too.
uint64_t ConversationBytes(const prepack::v1::Conversation& c);

// The checks of a conversation that need no JSON parser or template: at
// least one message, each with a role, content or content_parts (not
// both), tool calls with a name, no NUL characters (the C ABI's strings end
// there), and ConversationBytes within max_prompt_bytes (OUT_OF_RANGE).
// Errors name the field under `field` ("conversation", "requests[2].chat").
grpc::Status CheckConversation(const prepack::v1::Conversation& c, const std::string& field,
                               uint64_t max_prompt_bytes);

// Fills *out from `c` (after CheckConversation): tool calls become the
// C ABI's tool_calls_json, [{"id", "type": "function", "function": {"name",
// "arguments": <the arguments_json object>}}]; tools_json must be a JSON
// list of objects (their function names go to out->tool_names; the engine
// checks the rest of each tool) and chat_template_kwargs_json a JSON object.
// INVALID_ARGUMENT naming the field for bad JSON. `c` must outlive *out.
grpc::Status BuildChat(const prepack::v1::Conversation& c, const std::string& field, PreparedChat* out);

// Renders a built conversation (prepack_chat_render): the prompt's text and
// ids. FAILED_PRECONDITION when the model has no chat template;
// INVALID_ARGUMENT (prefixed with `field`) for template errors.
grpc::Status RenderChat(const prepack_engine* engine, const PreparedChat& chat, const std::string& field,
                        std::string* text, std::vector<int32_t>* ids);

// JSON nested deeper than kMaxJsonDepth is refused before it is parsed
// (openai/json_text.h).
using prepack::openai::JsonNestingDepth;
using prepack::openai::kMaxJsonDepth;

// Tokenizes UTF-8 text through the C ABI (growing the buffer as it asks).
grpc::Status TokenizeText(const prepack_engine* engine, const std::string& text, bool add_bos, bool parse_special,
                          std::vector<int32_t>* ids);

}  // namespace prepackd
