// jinja2's builtin filters (jinja2/filters.py semantics) and transformers'
// tojson. Filters that return generators in jinja2 (map, select, unique,
// ...) return an Iter value, which behaves as a generator does: always
// true, no len(), single use.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"
#include "core/jinja/ops.h"
#include "core/jinja/strings.h"
#include "core/jinja/unicode.h"

namespace prepack::jinja {
namespace {

// ---- shared pieces ----

// jinja2's _prepare_attribute_parts: "a.0.b" -> ['a', 0, 'b'].
std::vector<Value> AttrParts(const Value& attribute) {
    std::vector<Value> parts;
    if (attribute.is_none() || attribute.is_undefined()) return parts;
    if (!attribute.is_str()) {
        parts.push_back(attribute);
        return parts;
    }
    const std::string& s = attribute.str().bytes;
    size_t start = 0;
    while (true) {
        const size_t dot = s.find('.', start);
        const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && part.size() < 19) {
            parts.push_back(Value::Int(std::stoll(part)));
        } else {
            parts.push_back(Value::Str(part));
        }
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

// make_attrgetter: item looked up by each part (environment.getitem),
// optionally replaced by `dflt` when undefined, optionally lower-cased.
Value GetPath(const Value& item, const std::vector<Value>& parts, const Value* dflt = nullptr,
              bool ignore_case = false) {
    Value v = item;
    for (const Value& p : parts) {
        v = GetItem(v, p);
        if (dflt != nullptr && v.is_undefined()) v = *dflt;
    }
    if (ignore_case && v.is_str()) {
        ChargeBytes(v.str().size());
        v = Value::Str(Rewritten(v.str(), PyLower(v.str().bytes)));
    }
    return v;
}

bool IgnoreCase(const ArgBinder& a, size_t i) { return !Truthy(a.Get(i, Value::Bool(false))); }

Value Gen(std::vector<Value> items) { return Value::Iter(std::move(items), "generator"); }

// str(value) as a Text (soft_str).
Text Str(const Value& v) { return ToText(v); }

Value StrResult(const Text& in, std::string out) { return Value::Str(Rewritten(in, std::move(out))); }

// ---- the filters ----

Value FAbs(const Value& v, const Args& args) {
    NoArgs("abs", args);
    if (v.is_int()) return v.AsBig().negative() ? UnaryOp(UnOp::Neg, v) : UnaryOp(UnOp::Pos, v);
    if (v.kind() == Kind::Float) return Value::Float(std::fabs(v.f()));
    if (v.is_undefined()) FailUndefined(v);
    Fail(Cat("bad operand type for abs(): '", TypeName(v), "'"));
}

Value FAttr(const Value& v, const Args& args) {
    ArgBinder a("attr", args, {"name"});
    if (v.is_undefined()) FailUndefined(v);
    const Text name = Str(a.Required(0));
    // getattr only: no item lookup (a dict key is not an attribute).
    if (v.kind() == Kind::Dict) {
        if (LookupMethod(v, name.bytes) == MethodStatus::None) {
            return Value::Undefined(Cat("'dict object' has no attribute '", name.bytes, "'"));
        }
    }
    return GetAttr(v, name.bytes);
}

Value FBatch(const Value& v, const Args& args) {
    ArgBinder a("batch", args, {"linecount", "fill_with"});
    const int64_t n = ArgInt(a.Required(0), "batch");
    const Value fill = a.Get(1, Value::None());
    std::vector<Value> out;
    std::vector<Value> tmp;
    for (Value& item : PyIterate(v)) {
        if (static_cast<int64_t>(tmp.size()) == n) {
            out.push_back(Value::List(std::move(tmp)));
            tmp.clear();
        }
        tmp.push_back(std::move(item));
    }
    if (!tmp.empty()) {
        if (!fill.is_none() && static_cast<int64_t>(tmp.size()) < n) {
            GrowBy(tmp.size() * kBytesPerItem, static_cast<size_t>(n - static_cast<int64_t>(tmp.size())) * kBytesPerItem);
            tmp.resize(static_cast<size_t>(n), fill);
        }
        out.push_back(Value::List(std::move(tmp)));
    }
    return Gen(std::move(out));
}

Value FCapitalize(const Value& v, const Args& args) {
    NoArgs("capitalize", args);
    const Text s = Str(v);
    ChargeBytes(s.size());
    return StrResult(s, PyCapitalize(s.bytes));
}

Value FCenter(const Value& v, const Args& args) {
    ArgBinder a("center", args, {"width"});
    const int64_t width = a.Get(0) != nullptr ? ArgInt(*a.Get(0), "center") : 80;
    return Value::Str(PyPad(Str(v), width, MakeText(" "), '^'));
}

Value FLength(const Value& v, const Args& args) {
    NoArgs("length", args);
    return Value::Int(static_cast<int64_t>(PyLen(v)));
}

Value FDefault(const Value& v, const Args& args) {
    ArgBinder a("default", args, {"default_value", "boolean"});
    const bool boolean = Truthy(a.Get(1, Value::Bool(false)));
    if (v.is_undefined() || (boolean && !Truthy(v))) return a.Get(0, Value::Str(""));
    return v;
}

Value SortedPairs(std::vector<Value> pairs, size_t pos, bool ignore_case, bool reverse) {
    std::vector<Value> keys;
    keys.reserve(pairs.size());
    for (const Value& p : pairs) keys.push_back(GetPath(p, {Value::Int(static_cast<int64_t>(pos))}, nullptr, ignore_case));
    std::vector<size_t> order(pairs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return reverse ? PyLess(keys[y], keys[x]) : PyLess(keys[x], keys[y]);
    });
    std::vector<Value> out;
    out.reserve(order.size());
    for (size_t i : order) out.push_back(pairs[i]);
    return Value::List(std::move(out));
}

Value FDictsort(const Value& v, const Args& args) {
    ArgBinder a("dictsort", args, {"case_sensitive", "by", "reverse"});
    const Value by = a.Get(1, Value::Str("key"));
    size_t pos;
    if (by.is_str() && by.str().bytes == "key") {
        pos = 0;
    } else if (by.is_str() && by.str().bytes == "value") {
        pos = 1;
    } else {
        Fail("You can only sort by either \"key\" or \"value\"");
    }
    if (v.is_undefined()) FailUndefined(v);
    if (v.kind() != Kind::Dict) Fail(Cat("'", TypeName(v), "' object has no attribute 'items'"));
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.dict().items) pairs.push_back(Value::Tuple({k, val}));
    return SortedPairs(std::move(pairs), pos, IgnoreCase(a, 0), Truthy(a.Get(2, Value::Bool(false))));
}

Value FEscape(const Value& v, const Args& args) {
    NoArgs("escape", args);
    return Escape(v);
}

Value FForceescape(const Value& v, const Args& args) {
    NoArgs("forceescape", args);
    Text t = Str(v);
    t.markup = false;
    return Escape(Value::Str(std::move(t)));
}

Value FFirst(const Value& v, const Args& args) {
    NoArgs("first", args);
    if (v.kind() == Kind::Iter) {
        IterObj& it = v.iter();
        if (it.pos < it.items.size()) return it.items[it.pos++];
    } else if (v.kind() == Kind::List) {
        if (!v.list().items.empty()) return v.list().items.front();
    } else if (v.is_str()) {
        const Text& t = v.str();
        if (!t.bytes.empty()) {
            size_t pos = 0;
            DecodeUtf8(t.bytes, pos);
            return Value::Str(SubText(t, 0, pos));
        }
    } else {
        std::vector<Value> items = PyIterate(v);
        if (!items.empty()) return items.front();
    }
    return Value::Undefined("No first item, sequence was empty.");
}

Value FLast(const Value& v, const Args& args) {
    NoArgs("last", args);
    if (v.kind() == Kind::Iter) Fail(Cat("'", v.iter().type_name, "' object is not reversible"));
    if (v.kind() == Kind::Namespace || v.kind() == Kind::Func || v.kind() == Kind::Loop || v.is_number() ||
        v.is_none()) {
        Fail(Cat("'", TypeName(v), "' object is not reversible"));
    }
    if (v.is_str()) {
        const Text& t = v.str();
        if (!t.bytes.empty()) {
            size_t start = t.size() - 1;
            while (start > 0 && (static_cast<unsigned char>(t.bytes[start]) & 0xC0) == 0x80) --start;
            size_t pos = start;
            DecodeUtf8(t.bytes, pos);
            if (pos != t.size()) start = t.size() - 1;
            return Value::Str(SubText(t, start, t.size()));
        }
    } else {
        std::vector<Value> items = PyIterate(v);
        if (!items.empty()) return items.back();
    }
    return Value::Undefined("No last item, sequence was empty.");
}

Value FFloat(const Value& v, const Args& args) {
    ArgBinder a("float", args, {"default"});
    if (v.is_undefined()) FailUndefined(v);
    if (v.is_number()) return Value::Float(v.f());
    if (v.is_str()) {
        if (auto d = ParsePyFloat(v.str().bytes)) return Value::Float(*d);
    }
    return a.Get(0, Value::Float(0.0));
}

Value FFormat(const Value& v, const Args& args) {
    const Text fmt = Str(v);
    if (!args.kw.empty()) {
        std::vector<std::pair<Value, Value>> items;
        for (const auto& [k, val] : args.kw) items.emplace_back(Value::Str(k), val);
        return PercentFormat(fmt, Value::Dict(std::move(items)));
    }
    return PercentFormat(fmt, Value::Tuple(args.pos));
}

Value FIndent(const Value& v, const Args& args) {
    ArgBinder a("indent", args, {"width", "first", "blank"});
    Text indention;
    const Value width = a.Get(0, Value::Int(4));
    if (width.is_str()) {
        indention = width.str();
    } else {
        const int64_t w = ArgInt(width, "indent");
        if (w > 0) {
            GrowBy(0, static_cast<size_t>(w));
            indention = MakeText(std::string(static_cast<size_t>(w), ' '));
        }
    }
    if (v.is_undefined()) FailUndefined(v);
    if (!v.is_str()) Fail(Cat("unsupported operand type(s) for +=: '", TypeName(v), "' and 'str'"));
    TextBuilder with_nl;
    with_nl.Append(v.str());
    with_nl.Append("\n");
    const std::vector<Text> lines = PySplitLines(with_nl.Finish(), false);
    TextBuilder out;
    if (Truthy(a.Get(2, Value::Bool(false)))) {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i > 0) {
                out.Append("\n");
                out.Append(indention);
            }
            out.Append(lines[i]);
        }
    } else {
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i > 0) {
                out.Append("\n");
                if (!lines[i].bytes.empty()) out.Append(indention);
            }
            out.Append(lines[i]);
        }
    }
    Text body = out.Finish();
    if (Truthy(a.Get(1, Value::Bool(false)))) {
        TextBuilder b;
        b.Append(indention);
        b.Append(body);
        body = b.Finish();
    }
    body.markup = v.str().markup;
    return Value::Str(std::move(body));
}

Value FInt(const Value& v, const Args& args) {
    ArgBinder a("int", args, {"default", "base"});
    const Value dflt = a.Get(0, Value::Int(0));
    const int64_t base = a.Get(1) != nullptr ? ArgInt(*a.Get(1), "int") : 10;
    if (v.is_undefined()) FailUndefined(v);
    if (v.is_str()) {
        // int(s, base) with a bad base raises ValueError, which jinja2 catches.
        const bool base_ok = base == 0 || (base >= 2 && base <= 36);
        if (base_ok) {
            bool big = false;
            std::string digits;
            if (auto i = ParsePyInt(v.str().bytes, static_cast<int>(base), &big, &digits)) return Value::Int(*i);
            if (big) {
                const bool neg = digits[0] == '-';
                if (auto b = BigInt::FromDecimal(std::string_view(digits).substr(neg ? 1 : 0), neg)) {
                    return Value::Integer(*b);
                }
            }
        }
        // "42.23"|int is 42: jinja2 retries through float().
        if (auto d = ParsePyFloat(v.str().bytes)) {
            if (std::isnan(*d)) Fail("cannot convert float NaN to integer");
            if (std::isinf(*d)) Fail("cannot convert float infinity to integer");
            if (std::fabs(*d) >= 9.2e18) Fail("integer overflow: more than 64 bits is not supported");
            return Value::Int(static_cast<int64_t>(*d));
        }
        return dflt;
    }
    if (base != 10) return dflt;  // int(x, base) needs a str: TypeError, then int(float(x))
    if (v.kind() == Kind::BigInt) return v;
    if (v.is_integral()) return Value::Int(v.i());
    if (v.kind() == Kind::Float) {
        if (std::isnan(v.f())) Fail("cannot convert float NaN to integer");
        if (std::isinf(v.f())) Fail("cannot convert float infinity to integer");
        if (std::fabs(v.f()) >= 9.2e18) Fail("integer overflow: more than 64 bits is not supported");
        return Value::Int(static_cast<int64_t>(v.f()));
    }
    return dflt;
}

Value FItems(const Value& v, const Args& args) {
    NoArgs("items", args);
    if (v.is_undefined()) return Gen({});
    if (v.kind() != Kind::Dict) Fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict().items) out.push_back(Value::Tuple({k, val}));
    return Gen(std::move(out));
}

Value FJoin(const Value& v, const Args& args) {
    ArgBinder a("join", args, {"d", "attribute"});
    const Text sep = Str(a.Get(0, Value::Str("")));
    const std::vector<Value> parts = AttrParts(a.Get(1, Value::None()));
    TextBuilder out;
    bool first = true;
    for (const Value& item : PyIterate(v)) {
        if (!first) out.Append(sep);
        first = false;
        AppendStr(out, parts.empty() ? item : GetPath(item, parts));
    }
    return Value::Str(out.Finish());
}

Value FList(const Value& v, const Args& args) {
    NoArgs("list", args);
    return Value::List(PyIterate(v));
}

Value FLower(const Value& v, const Args& args) {
    NoArgs("lower", args);
    const Text s = Str(v);
    ChargeBytes(s.size());
    return StrResult(s, PyLower(s.bytes));
}

Value FUpper(const Value& v, const Args& args) {
    NoArgs("upper", args);
    const Text s = Str(v);
    ChargeBytes(s.size());
    return StrResult(s, PyUpper(s.bytes));
}

// jinja2's title: a word starts after whitespace or one of -({[<.
Value FTitle(const Value& v, const Args& args) {
    NoArgs("title", args);
    const Text s = Str(v);
    ChargeBytes(s.size());
    std::string out;
    const std::string& b = s.bytes;
    // Split into runs: separators ([-\s({\[<]+) and words; each word is
    // item[0].upper() + item[1:].lower().
    size_t pos = 0;
    auto is_sep = [](uint32_t cp) {
        return IsPyWhitespace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    };
    while (pos < b.size()) {
        size_t p = pos;
        const bool sep = is_sep(DecodeUtf8(b, p));
        size_t end = pos;
        while (end < b.size()) {
            size_t q = end;
            if (is_sep(DecodeUtf8(b, q)) != sep) break;
            end = q;
        }
        const std::string_view run(b.data() + pos, end - pos);
        if (sep) {
            out.append(run);
        } else {
            size_t first = 0;
            DecodeUtf8(run, first);
            out += PyUpper(run.substr(0, first));
            out += PyLower(run.substr(first));
        }
        pos = end;
    }
    return StrResult(s, std::move(out));
}

Value FMap(const Value& v, const Args& args) {
    std::vector<Value> out;
    if (!Truthy(v)) return Gen({});
    if (args.pos.empty()) {
        // map(attribute=..., default=...)
        const Value* attribute = nullptr;
        const Value* dflt = nullptr;
        for (const auto& [k, val] : args.kw) {
            if (k == "attribute") attribute = &val;
        }
        if (attribute == nullptr) Fail("map requires a filter argument");
        for (const auto& [k, val] : args.kw) {
            if (k == "default") {
                dflt = &val;
            } else if (k != "attribute") {
                Fail(Cat("Unexpected keyword argument '", k, "'"));
            }
        }
        if (dflt != nullptr && dflt->is_none()) dflt = nullptr;  // default=None replaces nothing
        const std::vector<Value> parts = AttrParts(*attribute);
        for (const Value& item : PyIterate(v)) out.push_back(GetPath(item, parts, dflt));
        return Gen(std::move(out));
    }
    const Text name = Str(args.pos[0]);
    Args rest;
    rest.pos.assign(args.pos.begin() + 1, args.pos.end());
    rest.kw = args.kw;
    for (const Value& item : PyIterate(v)) out.push_back(CallFilterByName(name.bytes, item, rest));
    return Gen(std::move(out));
}

Value SelectOrReject(const Value& v, const Args& args, bool select, bool attr) {
    const char* what = attr ? (select ? "selectattr" : "rejectattr") : (select ? "select" : "reject");
    size_t off = 0;
    std::vector<Value> parts;
    if (attr) {
        if (args.pos.empty()) Fail("Missing parameter for attribute name");
        parts = AttrParts(args.pos[0]);
        off = 1;
    }
    std::string test;
    Args rest;
    const bool has_test = args.pos.size() > off;
    if (has_test) {
        test = Str(args.pos[off]).bytes;
        rest.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(off) + 1, args.pos.end());
    }
    rest.kw = args.kw;
    if (!has_test && !args.kw.empty()) Fail(Cat(what, "() got unexpected keyword arguments"));
    std::vector<Value> out;
    if (!Truthy(v)) return Gen({});
    for (Value& item : PyIterate(v)) {
        const Value x = attr ? GetPath(item, parts) : item;
        const bool ok = has_test ? CallTestByName(test, x, rest) : Truthy(x);
        if (ok == select) out.push_back(std::move(item));
    }
    return Gen(std::move(out));
}

Value FSelect(const Value& v, const Args& args) { return SelectOrReject(v, args, true, false); }
Value FReject(const Value& v, const Args& args) { return SelectOrReject(v, args, false, false); }
Value FSelectattr(const Value& v, const Args& args) { return SelectOrReject(v, args, true, true); }
Value FRejectattr(const Value& v, const Args& args) { return SelectOrReject(v, args, false, true); }

Value MinOrMax(const Value& v, const Args& args, bool max) {
    ArgBinder a(max ? "max" : "min", args, {"case_sensitive", "attribute"});
    std::vector<Value> items = PyIterate(v);
    if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
    const std::vector<Value> parts = AttrParts(a.Get(1, Value::None()));
    const bool ignore = IgnoreCase(a, 0);
    size_t best = 0;
    Value best_key = GetPath(items[0], parts, nullptr, ignore);
    for (size_t i = 1; i < items.size(); ++i) {
        Value key = GetPath(items[i], parts, nullptr, ignore);
        if (max ? PyLess(best_key, key) : PyLess(key, best_key)) {
            best = i;
            best_key = std::move(key);
        }
    }
    return items[best];
}

Value FMax(const Value& v, const Args& args) { return MinOrMax(v, args, true); }
Value FMin(const Value& v, const Args& args) { return MinOrMax(v, args, false); }

Value FReplace(const Value& v, const Args& args) {
    ArgBinder a("replace", args, {"old", "new", "count"});
    const Value* count = a.Get(2);
    const int64_t n = count == nullptr || count->is_none() ? -1 : ArgInt(*count, "replace");
    Text s = Str(v);
    s.markup = false;  // str(s): plain text
    return Value::Str(PyReplace(s, Str(a.Required(0)), Str(a.Required(1)), n));
}

Value FReverse(const Value& v, const Args& args) {
    NoArgs("reverse", args);
    if (v.is_str()) return SliceOf(v, Value::None(), Value::None(), Value::Int(-1));
    if (v.kind() == Kind::List) {
        const ListObj& l = v.list();
        std::vector<Value> items(l.items.rbegin(), l.items.rend());
        const char* type = l.kind == ListKind::List    ? "list_reverseiterator"
                           : l.kind == ListKind::Range ? "range_iterator"
                           : l.kind == ListKind::Tuple ? "reversed"
                           : l.kind == ListKind::DictKeys ? "dict_reversekeyiterator"
                           : l.kind == ListKind::DictValues ? "dict_reversevalueiterator"
                                                            : "dict_reverseitemiterator";
        return Value::Iter(std::move(items), type);
    }
    if (v.kind() == Kind::Dict) {
        std::vector<Value> keys = PyIterate(v);
        std::reverse(keys.begin(), keys.end());
        return Value::Iter(std::move(keys), "dict_reversekeyiterator");
    }
    if (v.is_undefined()) return Value::Iter({}, "reversed");
    // Not reversible: jinja2 falls back to list(value) reversed.
    std::vector<Value> items = PyIterate(v);
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
}

Value FRound(const Value& v, const Args& args) {
    ArgBinder a("round", args, {"precision", "method"});
    const int64_t precision = a.Get(0) != nullptr ? ArgInt(*a.Get(0), "round") : 0;
    const Value method = a.Get(1, Value::Str("common"));
    const std::string m = method.is_str() ? method.str().bytes : "";
    if (m != "common" && m != "ceil" && m != "floor") Fail("method must be common, ceil or floor");
    if (v.is_undefined()) FailUndefined(v);
    if (!v.is_number()) Fail(Cat("type ", TypeName(v), " doesn't define __round__ method"));
    if (m == "common" && v.kind() == Kind::BigInt && precision >= 0) return v;
    if (m == "common") {
        if (v.is_integral()) {
            if (precision >= 0) return Value::Int(v.i());
            // round(int, -n): to a multiple of 10**n, half to even.
            if (precision < -18) return Value::Int(0);
            int64_t p = 1;
            for (int64_t i = 0; i < -precision; ++i) p *= 10;
            const int64_t x = v.i();
            int64_t q = FloorDiv(x, p);
            const int64_t r = x - q * p;
            if (2 * r > p || (2 * r == p && (q & 1) != 0)) ++q;
            return Value::Int(CheckedMul(q, p));
        }
        return Value::Float(PyRound(v.f(), precision));
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.f() * scale;
    return Value::Float((m == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value FSafe(const Value& v, const Args& args) {
    NoArgs("safe", args);
    Text t = Str(v);
    t.markup = true;
    return Value::Str(std::move(t));
}

Value FSort(const Value& v, const Args& args) {
    ArgBinder a("sort", args, {"reverse", "case_sensitive", "attribute"});
    const bool reverse = Truthy(a.Get(0, Value::Bool(false)));
    const bool ignore = IgnoreCase(a, 1);
    // make_multi_attrgetter: comma-separated attributes compared in turn.
    std::vector<std::vector<Value>> paths;
    const Value attribute = a.Get(2, Value::None());
    if (attribute.is_str()) {
        const std::string& s = attribute.str().bytes;
        size_t start = 0;
        while (true) {
            const size_t comma = s.find(',', start);
            paths.push_back(AttrParts(Value::Str(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start))));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    } else {
        paths.push_back(AttrParts(attribute));
    }
    std::vector<Value> items = PyIterate(v);
    std::vector<Value> keys;
    keys.reserve(items.size());
    for (const Value& item : items) {
        std::vector<Value> k;
        for (const auto& p : paths) k.push_back(GetPath(item, p, nullptr, ignore));
        keys.push_back(Value::List(std::move(k)));
    }
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return reverse ? PyLess(keys[y], keys[x]) : PyLess(keys[x], keys[y]);
    });
    std::vector<Value> out;
    out.reserve(items.size());
    for (size_t i : order) out.push_back(items[i]);
    return Value::List(std::move(out));
}

Value FString(const Value& v, const Args& args) {
    NoArgs("string", args);
    return Value::Str(Str(v));
}

Value FSum(const Value& v, const Args& args) {
    ArgBinder a("sum", args, {"attribute", "start"});
    const std::vector<Value> parts = AttrParts(a.Get(0, Value::None()));
    Value total = a.Get(1, Value::Int(0));
    if (total.is_str()) Fail("sum() can't sum strings [use ''.join(seq) instead]");
    for (const Value& item : PyIterate(v)) total = BinaryOp(BinOp::Add, total, parts.empty() ? item : GetPath(item, parts));
    return total;
}

Value FTojson(const Value& v, const Args& args) {
    ArgBinder a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    return ToJson(v, Truthy(a.Get(0, Value::Bool(false))), a.Get(1, Value::None()), a.Get(2, Value::None()),
                  Truthy(a.Get(3, Value::Bool(false))));
}

Value FTrim(const Value& v, const Args& args) {
    ArgBinder a("trim", args, {"chars"});
    return Value::Str(PyStrip(Str(v), a.Get(0, Value::None()), true, true));
}

Value FTruncate(const Value& v, const Args& args) {
    ArgBinder a("truncate", args, {"length", "killwords", "end", "leeway"});
    const int64_t length = a.Get(0) != nullptr ? ArgInt(*a.Get(0), "truncate") : 255;
    const bool killwords = Truthy(a.Get(1, Value::Bool(false)));
    const Text end = Str(a.Get(2, Value::Str("...")));
    const int64_t leeway = a.Get(3) != nullptr && !a.Get(3)->is_none() ? ArgInt(*a.Get(3), "truncate") : 5;
    const auto end_len = static_cast<int64_t>(CodePointCount(end.bytes));
    if (length < end_len) Fail(Cat("expected length >= ", end_len, ", got ", length));
    if (leeway < 0) Fail(Cat("expected leeway >= 0, got ", leeway));
    // jinja2 takes len() of the value itself, not of str(value).
    if (static_cast<int64_t>(PyLen(v)) <= length + leeway) return v;
    if (!v.is_str()) Fail(Cat("truncate of a ", TypeName(v), " is not supported"));
    const Text& s = v.str();
    Text head = CodePointSlice(s, Value::Int(0), Value::Int(length - end_len));
    if (!killwords) {
        const size_t sp = head.bytes.rfind(' ');
        if (sp != std::string::npos) head = SubText(head, 0, sp);
    }
    TextBuilder out;
    out.Append(head);
    out.Append(end);
    return Value::Str(out.Finish());
}

Value FUnique(const Value& v, const Args& args) {
    ArgBinder a("unique", args, {"case_sensitive", "attribute"});
    const std::vector<Value> parts = AttrParts(a.Get(1, Value::None()));
    const bool ignore = IgnoreCase(a, 0);
    std::vector<Value> seen;
    std::vector<Value> out;
    for (Value& item : PyIterate(v)) {
        Value key = GetPath(item, parts, nullptr, ignore);
        if (!IsHashable(key)) Fail(Cat("unhashable type: '", TypeName(key), "'"));
        bool dup = false;
        for (const Value& s : seen) {
            if (PyEqual(s, key)) {
                dup = true;
                break;
            }
        }
        if (!dup) {
            seen.push_back(std::move(key));
            out.push_back(std::move(item));
        }
    }
    return Gen(std::move(out));
}

Value FWordcount(const Value& v, const Args& args) {
    NoArgs("wordcount", args);
    const Text s = Str(v);
    ChargeBytes(s.size());
    int64_t n = 0;
    bool in_word = false;
    for (size_t pos = 0; pos < s.size();) {
        const uint32_t cp = DecodeUtf8(s.bytes, pos);
        const bool w = cp == '_' || IsAlpha(cp) || IsNumeric(cp);
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::Int(n);
}

// Sorted by name for lookup; fn == nullptr: jinja2 has it, this engine not.
const FilterDef kFilters[] = {
    {"abs", FAbs},
    {"attr", FAttr},
    {"batch", FBatch},
    {"capitalize", FCapitalize},
    {"center", FCenter},
    {"count", FLength},
    {"d", FDefault},
    {"default", FDefault},
    {"dictsort", FDictsort},
    {"e", FEscape},
    {"escape", FEscape},
    {"filesizeformat", nullptr},
    {"first", FFirst},
    {"float", FFloat},
    {"forceescape", FForceescape},
    {"format", FFormat},
    {"groupby", nullptr},
    {"indent", FIndent},
    {"int", FInt},
    {"items", FItems},
    {"join", FJoin},
    {"last", FLast},
    {"length", FLength},
    {"list", FList},
    {"lower", FLower},
    {"map", FMap},
    {"max", FMax},
    {"min", FMin},
    {"pprint", nullptr},
    {"random", nullptr},
    {"reject", FReject},
    {"rejectattr", FRejectattr},
    {"replace", FReplace},
    {"reverse", FReverse},
    {"round", FRound},
    {"safe", FSafe},
    {"select", FSelect},
    {"selectattr", FSelectattr},
    {"slice", nullptr},
    {"sort", FSort},
    {"string", FString},
    {"striptags", nullptr},
    {"sum", FSum},
    {"title", FTitle},
    {"tojson", FTojson},
    {"trim", FTrim},
    {"truncate", FTruncate},
    {"unique", FUnique},
    {"upper", FUpper},
    {"urlencode", nullptr},
    {"urlize", nullptr},
    {"wordcount", FWordcount},
    {"wordwrap", nullptr},
    {"xmlattr", nullptr},
};

}  // namespace

const FilterDef* FindFilter(std::string_view name) {
    for (const FilterDef& f : kFilters) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

Value ApplyFilter(const FilterDef& def, const Value& input, const Args& args) {
    if (def.fn == nullptr) Fail(Cat("the '", def.name, "' filter is not supported"));
    return def.fn(input, args);
}

Value CallFilterByName(std::string_view name, const Value& input, const Args& args) {
    const FilterDef* def = FindFilter(name);
    if (def == nullptr) Fail(Cat("No filter named '", name, "'."));
    return ApplyFilter(*def, input, args);
}

}  // namespace prepack::jinja
