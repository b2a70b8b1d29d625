// Runs a parsed template: evaluates expressions and executes statements
// with jinja2's scoping (a for iteration, macro call, with / filter / set
// block is a frame of its own; `if` is not), appending to an output that
// keeps content ranges.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/jinja/ast.h"
#include "core/jinja/template.h"

namespace prepack::jinja {

// Fails with Error (the offset of the failing node filled in).
Rendered RenderBody(const Body& body, const FrameLocals& locals, std::string_view source,
                    const nlohmann::ordered_json& context, const RenderOptions& options);

// 1-based line of a source offset (for jinja2's messages that name a line).
size_t LineOf(std::string_view source, size_t offset);

}  // namespace prepack::jinja
