// Python's str operations on Text, shared by the str methods and the
// filters. Those that cut or join keep content ranges exactly; those that
// rewrite characters (case mappings) mark the whole result as content when
// the input had any.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/jinja/text.h"
#include "core/jinja/value.h"

namespace prepack::jinja {

// str.strip / lstrip / rstrip: chars is None/Undefined (whitespace) or a str.
Text PyStrip(const Text& s, const Value& chars, bool left, bool right);
// str.split / str.rsplit: sep None (runs of whitespace) or a non-empty str.
std::vector<Value> PySplit(const Text& s, const Value& sep, int64_t maxsplit, bool from_right);
// str.splitlines.
std::vector<Text> PySplitLines(const Text& s, bool keepends);
// str.replace (count < 0: all).
Text PyReplace(const Text& s, const Text& old, const Text& repl, int64_t count);
// A str whose characters were rewritten from s (upper, lower, ...).
Text Rewritten(const Text& s, std::string bytes);
// Code point index of the first (or last) occurrence of sub in s[start:end]
// (Python's optional start/end, None when absent), or -1.
int64_t PyFind(const Text& s, const Text& sub, const Value& start, const Value& end, bool last);
int64_t PyCount(const Text& s, const Text& sub, const Value& start, const Value& end);
// s[start:end] by code points with Python's clamping (None: open).
Text CodePointSlice(const Text& s, const Value& start, const Value& end);
// str.center / ljust / rjust with a one-character fill.
Text PyPad(const Text& s, int64_t width, const Text& fill, char align);

}  // namespace prepack::jinja
