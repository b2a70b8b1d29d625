// $ref resolution inside one schema document: "#" and JSON pointers
// "#/$defs/Name", "#/definitions/Name", "#/properties/a/items", ... with
// RFC 6901 escapes (~0 ~1) and RFC 3986 percent-decoding (a pointer in a
// URI fragment is percent-encoded). References to other documents, anchors
// ("#name") and $id-relative URIs are refused: nothing is fetched.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::grammar::schema {

struct ResolvedRef {
    std::string                  pointer;   // decoded JSON pointer from the root, "" for "#"
    const nlohmann::ordered_json* schema = nullptr;
};

// INVALID_ARGUMENT naming `ref` and `where` (the pointer of the $ref) when it
// is not a local pointer or leads nowhere.
absl::StatusOr<ResolvedRef> ResolveRef(const nlohmann::ordered_json& root, std::string_view ref, const std::string& where);

}  // namespace prepack::grammar::schema
