// Internal error reporting of the Jinja engine. Errors travel as a C++
// exception inside the engine (every node can fail, and unwinding through the
// evaluator is simpler and cheaper on the good path than threading a status
// through each call); Template::Parse and Template::Render catch it and turn it
// into an absl::Status, so nothing is ever thrown across the public API.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace prepack::jinja {

inline constexpr size_t kNoOffset = static_cast<size_t>(-1);

struct Error {
    absl::StatusCode code = absl::StatusCode::kInvalidArgument;
    std::string message;
    // Byte offset into the (normalised) template source of the offending
    // token. kNoOffset until the innermost node that sees the error fills in
    // its own position, so builtins need not know where they were called.
    size_t offset = kNoOffset;
    // raise_exception(msg): the message is the template's own words, shown
    // without a "name:line:column:" prefix.
    bool verbatim = false;
};

// A runtime or syntax error (INVALID_ARGUMENT) at the current node.
[[noreturn]] inline void Fail(std::string message) {
    throw Error{absl::StatusCode::kInvalidArgument, std::move(message)};
}
// The same at a known source offset.
[[noreturn]] inline void FailAt(size_t offset, std::string message) {
    throw Error{absl::StatusCode::kInvalidArgument, std::move(message), offset};
}
// A Limits bound was exceeded (RESOURCE_EXHAUSTED).
[[noreturn]] inline void Exhausted(std::string message) {
    throw Error{absl::StatusCode::kResourceExhausted, std::move(message)};
}
[[noreturn]] inline void ExhaustedAt(size_t offset, std::string message) {
    throw Error{absl::StatusCode::kResourceExhausted, std::move(message), offset};
}

}  // namespace prepack::jinja
