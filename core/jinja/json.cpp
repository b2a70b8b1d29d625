#include "core/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"

namespace prepack::jinja {
namespace {

Value FromJsonAt(const nlohmann::ordered_json& j, bool content, int max_depth, int depth) {
    if (depth > max_depth) {
        Exhausted(Cat("the context nests deeper than max_depth (", max_depth, ")"));
    }
    using T = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case T::null: return Value::None();
        case T::boolean: return Value::Bool(j.get<bool>());
        case T::number_integer: return Value::Int(j.get<int64_t>());
        case T::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) {
                return Value::Integer(*BigInt::FromDecimal(std::to_string(u), false));
            }
            return Value::Int(static_cast<int64_t>(u));
        }
        case T::number_float: return Value::Float(j.get<double>());
        case T::string: return Value::Str(j.get_ref<const std::string&>(), content);
        case T::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& x : j) items.push_back(FromJsonAt(x, content, max_depth, depth + 1));
            return Value::List(std::move(items));
        }
        case T::object: {
            std::vector<std::pair<Value, Value>> items;
            items.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it) {
                items.emplace_back(Value::Str(it.key(), content), FromJsonAt(it.value(), content, max_depth, depth + 1));
            }
            return Value::Dict(std::move(items));
        }
        default: Fail("the context holds a JSON value of a kind templates cannot use (binary or discarded)");
    }
}

// json.dumps' encoder: options and whether any string written was content.
struct Encoder {
    bool ensure_ascii = false;
    bool sort_keys = false;
    bool indented = false;
    std::string indent;
    std::string_view item_sep = ", ";
    std::string_view key_sep = ": ";
    std::string out;
    bool content = false;
    int max_depth = 200;

    void Put(std::string_view s) {
        GrowBy(out.size(), s.size());
        out.append(s);
    }

    void String(const Text& t) {
        if (t.has_content()) content = true;
        const std::string& s = t.bytes;
        GrowBy(out.size(), s.size() + 2);
        out.push_back('"');
        char buf[16];
        for (size_t pos = 0; pos < s.size();) {
            const size_t start = pos;
            const uint32_t cp = DecodeUtf8(s, pos);
            switch (cp) {
                case '"': out += "\\\""; continue;
                case '\\': out += "\\\\"; continue;
                case '\n': out += "\\n"; continue;
                case '\r': out += "\\r"; continue;
                case '\t': out += "\\t"; continue;
                case '\b': out += "\\b"; continue;
                case '\f': out += "\\f"; continue;
                default: break;
            }
            if (cp < 0x20 || (ensure_ascii && cp == 0x7F)) {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
                out += buf;
            } else if (cp < 0x80 || !ensure_ascii) {
                out.append(s, start, pos - start);
            } else if (cp < 0x10000) {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
                out += buf;
            } else {
                const uint32_t v = cp - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                out += buf;
            }
            if (out.size() > s.size() + 2) GrowBy(out.size(), 0);
        }
        out.push_back('"');
    }

    static std::string Float(double d) {
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
        return FloatRepr(d);
    }

    void Newline(int level) {
        if (!indented) return;
        Put("\n");
        for (int i = 0; i < level; ++i) Put(indent);
    }

    [[noreturn]] static void NotSerializable(const Value& v) {
        Fail(Cat("Object of type ", TypeName(v), " is not JSON serializable"));
    }

    void Encode(const Value& v, int level) {
        if (level > max_depth + 1) Exhausted(Cat("tojson: values nested deeper than max_depth (", max_depth, ")"));
        switch (v.kind()) {
            case Kind::None: Put("null"); return;
            case Kind::Bool: Put(v.b() ? "true" : "false"); return;
            case Kind::Int: Put(std::to_string(v.i())); return;
            case Kind::BigInt: Put(v.big().ToString()); return;
            case Kind::Float: Put(Float(v.f())); return;
            case Kind::Str: String(v.str()); return;
            case Kind::List: {
                const ListObj& l = v.list();
                if (l.kind != ListKind::List && l.kind != ListKind::Tuple) NotSerializable(v);
                if (l.items.empty()) {
                    Put("[]");
                    return;
                }
                Put("[");
                for (size_t i = 0; i < l.items.size(); ++i) {
                    if (i > 0) Put(item_sep);
                    Newline(level + 1);
                    Encode(l.items[i], level + 1);
                }
                Newline(level);
                Put("]");
                return;
            }
            case Kind::Dict: {
                const auto& items = v.dict().items;
                if (items.empty()) {
                    Put("{}");
                    return;
                }
                std::vector<size_t> order(items.size());
                for (size_t i = 0; i < order.size(); ++i) order[i] = i;
                if (sort_keys) {
                    std::stable_sort(order.begin(), order.end(),
                                     [&](size_t a, size_t b) { return PyLess(items[a].first, items[b].first); });
                }
                Put("{");
                bool first = true;
                for (size_t i : order) {
                    const Value& k = items[i].first;
                    if (!first) Put(item_sep);
                    first = false;
                    Newline(level + 1);
                    switch (k.kind()) {
                        case Kind::Str: String(k.str()); break;
                        case Kind::Int: String(MakeText(std::to_string(k.i()))); break;
                        case Kind::BigInt: String(MakeText(k.big().ToString())); break;
                        case Kind::Float: String(MakeText(Float(k.f()))); break;
                        case Kind::Bool: String(MakeText(k.b() ? "true" : "false")); break;
                        case Kind::None: String(MakeText("null")); break;
                        default:
                            Fail(Cat("keys must be str, int, float, bool or None, not ", TypeName(k)));
                    }
                    Put(key_sep);
                    Encode(items[i].second, level + 1);
                }
                Newline(level);
                Put("}");
                return;
            }
            default: NotSerializable(v);
        }
    }
};

}  // namespace

Value FromJson(const nlohmann::ordered_json& j, bool content, int max_depth) {
    return FromJsonAt(j, content, max_depth, 0);
}

Value ToJson(const Value& v, bool ensure_ascii, const Value& indent, const Value& separators, bool sort_keys) {
    Encoder e;
    std::vector<Value> seps;  // keeps the separators e points into alive
    e.ensure_ascii = ensure_ascii;
    e.sort_keys = sort_keys;
    if (const Budget* b = CurrentBudget()) e.max_depth = b->limits().max_depth;
    if (!indent.is_none() && !indent.is_undefined()) {
        e.indented = true;
        e.item_sep = ",";
        if (indent.is_str()) {
            e.indent = indent.str().bytes;
            if (indent.str().has_content()) e.content = true;
        } else if (indent.is_integral()) {
            const int64_t n = indent.i();
            if (n > 0) {
                GrowBy(0, static_cast<size_t>(n));
                e.indent.assign(static_cast<size_t>(n), ' ');
            }
        } else {
            Fail(Cat("can't multiply sequence by non-int of type '", TypeName(indent), "'"));
        }
    }
    if (!separators.is_none() && !separators.is_undefined()) {
        seps = PyIterate(separators);
        const std::vector<Value>& parts = seps;
        if (parts.size() != 2) {
            Fail(Cat(parts.size() < 2 ? "not enough" : "too many", " values to unpack (expected 2",
                              parts.size() < 2 ? Cat(", got ", parts.size()) : "", ")"));
        }
        if (!parts[0].is_str() || !parts[1].is_str()) Fail("tojson separators must be strings");
        e.item_sep = parts[0].str().bytes;
        e.key_sep = parts[1].str().bytes;
        if (parts[0].str().has_content() || parts[1].str().has_content()) e.content = true;
    }
    e.Encode(v, 0);
    GrowBy(0, e.out.size());
    return Value::Str(MakeText(std::move(e.out), e.content));
}

}  // namespace prepack::jinja
