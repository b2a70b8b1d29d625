// Python's operators on values and jinja2's attribute and item lookup (as
// the sandboxed environment performs them).
#pragma once

#include <string_view>

#include "core/jinja/ast.h"
#include "core/jinja/value.h"

namespace prepack::jinja {

Value BinaryOp(BinOp op, const Value& a, const Value& b);
Value UnaryOp(UnOp op, const Value& a);
// `item in container`.
bool Contains(const Value& container, const Value& item);
// `a ~ b`'s parts and `a + b` for strings: concatenation keeping content.
Value ConcatStr(const Text& a, const Text& b);

// obj.name: Python attribute first (methods, namespace attributes, loop
// attributes), then obj['name']; otherwise Undefined with jinja2's hint.
Value GetAttr(const Value& obj, std::string_view name);
// obj[key]: the item first, then for a str key the attribute.
Value GetItem(const Value& obj, const Value& key);
// obj[start:stop:step]; absent bounds are Undefined values.
Value SliceOf(const Value& obj, const Value& start, const Value& stop, const Value& step);

}  // namespace prepack::jinja
