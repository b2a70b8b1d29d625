// The functions templates call: jinja2's filters and tests, transformers'
// tojson / raise_exception / strftime_now, jinja2's globals (range, dict,
// namespace), and the methods of str, dict and list. Each follows the
// Python original's semantics; what is not implemented is named in its
// table so that using it is a clear error, never a different rendering.
#pragma once

#include <cstddef>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/jinja/value.h"

namespace prepack::jinja {

// Evaluated call arguments.
struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

// Binds Args to a Python-style parameter list; fails as Python's TypeError
// on unknown keywords, too many positional arguments or a parameter given
// twice.
class ArgBinder {
public:
    ArgBinder(std::string_view what, const Args& args, std::initializer_list<std::string_view> params);
    // Parameter i, or nullptr when not given.
    const Value* Get(size_t i) const { return i < bound_.size() ? bound_[i] : nullptr; }
    Value Get(size_t i, Value dflt) const {
        const Value* v = Get(i);
        return v != nullptr ? *v : std::move(dflt);
    }
    // Fails unless parameter i was given.
    const Value& Required(size_t i) const;

private:
    std::string what_;
    std::vector<std::string_view> params_;
    std::vector<const Value*> bound_;
};

// Fails unless `args` is empty (a function taking no arguments).
void NoArgs(std::string_view what, const Args& args);

// Argument conversions with Python's TypeError messages.
int64_t ArgInt(const Value& v, std::string_view what);
const Text& ArgStr(const Value& v, std::string_view what);

// ---- filters and tests ------------------------------------------------------

using FilterFn = Value (*)(const Value& input, const Args& args);
using TestFn = bool (*)(const Value& input, const Args& args);

struct FilterDef {
    std::string_view name;
    FilterFn fn;  // nullptr: a jinja2 filter this engine does not implement
};
struct TestDef {
    std::string_view name;
    TestFn fn;  // nullptr: a jinja2 test this engine does not implement
};

// nullptr when jinja2 has no filter / test of that name.
const FilterDef* FindFilter(std::string_view name);
const TestDef* FindTest(std::string_view name);

Value ApplyFilter(const FilterDef& def, const Value& input, const Args& args);
bool ApplyTest(const TestDef& def, const Value& input, const Args& args);
// By name, as map() / select() call them.
Value CallFilterByName(std::string_view name, const Value& input, const Args& args);
bool CallTestByName(std::string_view name, const Value& input, const Args& args);

// ---- globals -----------------------------------------------------------------

struct CallEnv {
    std::time_t now = 0;  // what strftime_now formats
};

// The global function `name` (range, dict, namespace, raise_exception,
// strftime_now, and jinja2's cycler/joiner/lipsum, which fail when called),
// or Undefined.
Value LookupGlobal(std::string_view name);
Value CallGlobal(const FuncObj& f, const Args& args, const CallEnv& env);

// ---- methods -----------------------------------------------------------------

enum class MethodStatus : uint8_t {
    None,         // Python's type has no such attribute
    Supported,
    Unsupported,  // Python has it; this engine does not implement it
    Unsafe,       // the sandbox forbids it (it would modify the object)
};
MethodStatus LookupMethod(const Value& self, std::string_view name);
Value CallMethod(const Value& self, std::string_view name, const Args& args);
// A method bound to self, as `x.upper` evaluates to.
Value BoundMethod(const Value& self, std::string_view name);

// cycler().current and the other attributes of a cycler or joiner (plain
// Undefined when there is none).
Value ObjectAttr(const Value& self, std::string_view name);

// loop.index and the other attributes of a for loop's `loop`.
Value LoopAttr(const Value& loop, std::string_view name);
Value CallLoopMethod(const FuncObj& f, const Args& args);

// ---- shared helpers ---------------------------------------------------------

// tojson's json.dumps (json.cpp).
Value ToJson(const Value& v, bool ensure_ascii, const Value& indent, const Value& separators, bool sort_keys);
// Python's strftime for `now` in UTC (strftime.cpp).
std::string StrftimeUtc(std::string_view fmt, std::time_t now);
// printf-style `fmt % args` and str.format (format.cpp). The result is
// content as a whole when any input carried content.
Value PercentFormat(const Text& fmt, const Value& args);
Value StrFormat(const Text& fmt, const Args& args);
// markupsafe.escape.
Value Escape(const Value& v);

}  // namespace prepack::jinja
