// Between nlohmann::ordered_json and template values: the render context
// in, and transformers' tojson (Python's json.dumps) out.
#pragma once

#include <nlohmann/json.hpp>

#include "core/jinja/value.h"

namespace prepack::jinja {

// A JSON value as the template sees it (json.loads' types, key order kept).
// Every string, dict keys included, is content when `content` is set. Fails
// past max_depth nesting.
Value FromJson(const nlohmann::ordered_json& j, bool content, int max_depth);

}  // namespace prepack::jinja
