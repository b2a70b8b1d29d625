// Builds the statement tree from tokens, following jinja2's grammar
// (operator precedence, tuples, filters and tests, the statement tags), and
// checks what jinja2 checks at compile time: unknown filters and tests
// (except inside `if` bodies and conditional expressions, where jinja2 waits
// until they run), `break`/`continue` outside a loop, unknown tags.
#pragma once

#include <string_view>

#include "core/jinja/ast.h"
#include "core/jinja/template.h"

namespace prepack::jinja {

struct ParsedTemplate {
    Body body;
    FrameLocals locals;  // the template's own (root frame) locals
};

// Fails with an Error carrying the offending offset.
ParsedTemplate ParseTemplate(std::string_view source, const Limits& limits);

}  // namespace prepack::jinja
