// What the C ABI's translation units share: the opaque handles' contents,
// the thread-local error message, the exception guard every entry point
// runs its body in, and the struct_size rules that let callers built
// against older headers keep working.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "core/engine/engine.h"
#include "prepack/prepack.h"

struct prepack_engine {
    std::unique_ptr<prepack::Engine> engine;
};

struct prepack_stream {
    std::unique_ptr<prepack::Stream> stream;    // null for a batch request that could not start:
    bool                             error_pending = false;   // then `current` is its END event, until read
    prepack::Event                   current;   // owns what the last delivered event points to
    std::vector<int32_t>             top_ids;
    std::vector<float>               top_logprobs;
    std::string                      message;
    std::vector<int32_t>             prompt_token_ids;  // the first token's prompt scores, flattened
    std::vector<float>               prompt_logprobs;
    std::vector<int32_t>             prompt_top_ids;
    std::vector<float>               prompt_top_logprobs;
    std::vector<prepack_tool_call_delta> tool_call_deltas;   // views of current.tool_call_deltas
    std::vector<prepack_tool_call>   tool_calls;             // views of current.tool_calls
};

namespace prepack::capi {

// This thread's message for prepack_last_error().
std::string& LastError();

// Records `message` for prepack_last_error() and returns `code`.
prepack_status Fail(prepack_status code, std::string message);
// OK, or the status's code (the same google.rpc.Code numbers) with its message.
prepack_status FromStatus(const absl::Status& s);

// Runs `body`, turning exceptions into statuses so none crosses the ABI.
template <typename Body>
prepack_status Guard(Body&& body) noexcept {
    try {
        LastError().clear();
        return body();
    } catch (const std::bad_alloc&) {
        return Fail(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
    } catch (const std::exception& e) {
        return Fail(PREPACK_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return Fail(PREPACK_INTERNAL, "internal error: unknown exception");
    }
}

// Copies a caller's struct of `struct_size` bytes over `defaults`, so
// callers built against an older, shorter struct get defaults for the rest.
template <typename T>
bool CopySized(const T* in, T* defaults) {
    if (in->struct_size < sizeof(size_t)) return false;
    std::memcpy(static_cast<void*>(defaults), in, std::min(in->struct_size, sizeof(T)));
    defaults->struct_size = sizeof(T);
    return true;
}

// Writes `value` into a caller's struct, no further than its struct_size.
template <typename T>
void WriteSized(const T& value, T* out) {
    const size_t n = std::min(out->struct_size, sizeof(T));
    std::memcpy(static_cast<void*>(out), &value, n);
    out->struct_size = n;
}

// The integer a C caller stored in an enum field. C lets any int be stored
// there, but in C++ loading an enum whose value lies outside its enumerators'
// range is undefined (UBSan's -fsanitize=enum), so the bytes are read as the
// underlying integer and checked before they are ever used as the enum.
template <typename E>
int64_t RawEnum(const E& field) {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<int64_t>(v);
}

// A malloc'ed, NUL-terminated copy (the caller frees it with free()).
char* CopyString(const std::string& s);

// The engine's request for a caller's prepack_request (INVALID_ARGUMENT naming the field).
absl::StatusOr<Request> ToRequest(const prepack_request* in);
// A grammar_kind and its text as the engine's GrammarSpec (INVALID_ARGUMENT
// for an unknown kind, text missing or given where the kind takes none);
// the grammar itself is not built here.
absl::StatusOr<grammar::GrammarSpec> ToGrammarSpec(const prepack_grammar_kind& kind, const char* text);
// A request's grammar: none when the caller's struct (caller_struct_size
// bytes) predates ABI 9's grammar fields.
absl::StatusOr<grammar::GrammarSpec> RequestGrammar(const prepack_request& r, size_t caller_struct_size);
// A request's tool choice: NONE when the caller's struct (caller_struct_size
// bytes) predates ABI 9's tool fields; INVALID_ARGUMENT for an unknown
// mode, a function name missing or given where the mode takes none.
// Whether the request has tools is checked by CheckToolChoice.
absl::StatusOr<ToolChoice> RequestToolChoice(const prepack_request& r, size_t caller_struct_size);
// `request`'s tool choice against what else it asks for: REQUIRED and
// FUNCTION need a conversation with tools; calls leave no room for a
// grammar or ignore_eos. A choice with no tools to call becomes NONE.
absl::Status CheckToolChoice(Request* request);
// The C views of an event's tool calls (TOKEN: deltas, END: whole calls),
// pointing into s->current and kept in *s.
void FillToolCalls(prepack_stream* s, prepack_event* event);

// Batch results: the array prepack_generate_batch() hands out has a hidden
// block in front of it, holding what prepack_result has no field for
// (prepack_result's layout is fixed: callers index the array), which
// prepack_result_tool_calls() and prepack_result_reasoning() read.
struct ResultExtra {
    std::string                  reasoning;
    std::vector<ParsedToolCall>  calls;   // owned strings
    std::vector<prepack_tool_call> views;   // point into `calls`; made once `calls` is complete
};
// n zeroed results with their extras; nullptr when out of memory.
prepack_result* AllocateResults(size_t n);
// Result i's extras; nullptr when `results` is not AllocateResults' or i is out of range.
ResultExtra* ResultExtras(const prepack_result* results, size_t i);
// Frees what AllocateResults made (and the results' own fields).
void FreeResults(prepack_result* results, size_t n);

// The engine's conversation for a caller's prepack_chat (INVALID_ARGUMENT
// naming a C-level field: NULLs, bad JSON); the conversation's own shape is
// checked when the engine renders it.
absl::StatusOr<Conversation> ToConversation(const prepack_chat* in);

}  // namespace prepack::capi
