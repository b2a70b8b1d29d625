// Typed reads of a JSON request's fields, each error naming the field
// ("messages[1].content: must be a string, got integer"). Internal to the
// openai library.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "openai/json_text.h"

// Returns from the enclosing function when `expr` yields a non-OK status.
#define OPENAI_TRY(expr)                                  \
    do {                                                  \
        if (absl::Status _s = (expr); !_s.ok()) return _s; \
    } while (0)

namespace prepack::openai::fields {

absl::Status Invalid(const std::string& field, const std::string& why);
absl::Status WrongType(const std::string& field, const char* want, const Json& v);
// %g of a number, for messages.
std::string Num(double v);

// The value of `key`, or null when absent or null (OpenAI's clients send
// null for "not given").
const Json* Get(const Json& o, const char* key);

// Each reads `key` of `o` into *out when present; `at` prefixes the field's
// name in errors.
absl::Status GetBool(const Json& o, const char* key, std::optional<bool>* out, const std::string& at = "");
// An integer (a float with an integral value, 16.0, counts).
absl::Status GetInt(const Json& o, const char* key, std::optional<int64_t>* out, const std::string& at = "");
absl::Status GetNumber(const Json& o, const char* key, std::optional<double>* out, const std::string& at = "");
absl::Status GetString(const Json& o, const char* key, std::optional<std::string>* out, const std::string& at = "");

// Every key of `o` is one of `known`: a field nobody implements is refused,
// never ignored.
absl::Status OnlyKnown(const Json& o, const std::set<std::string_view>& known, const std::string& at);

}  // namespace prepack::openai::fields
