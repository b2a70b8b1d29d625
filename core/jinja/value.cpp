#include "core/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"
#include "core/jinja/unicode.h"

namespace prepack::jinja {
namespace {

int MaxDepth() {
    const Budget* b = CurrentBudget();
    return b != nullptr ? b->limits().max_depth : Limits{}.max_depth;
}

int DepthOf(const Value& v) {
    if (v.kind() == Kind::List) return v.list().depth;
    if (v.kind() == Kind::Dict) return v.dict().depth;
    return 0;
}

void CheckDepth(int depth) {
    if (depth > MaxDepth()) {
        Exhausted(Cat("containers nested deeper than max_depth (", MaxDepth(), ")"));
    }
}

void CheckItems(size_t n) {
    if (n > 0) GrowBy(0, n * kBytesPerItem);
}

// Appends to a repr/str being built, within the size bound.
void Put(std::string& out, std::string_view s) {
    GrowBy(out.size(), s.size());
    out.append(s);
}

}  // namespace

Value Value::None() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}
Value Value::Bool(bool b) {
    Value v;
    v.kind_ = Kind::Bool;
    v.u_.b = b;
    return v;
}
Value Value::Int(int64_t i) {
    Value v;
    v.kind_ = Kind::Int;
    v.u_.i = i;
    return v;
}
Value Value::Integer(BigInt b) {
    int64_t small;
    if (b.FitsInt64(&small)) return Int(small);
    Value v;
    v.kind_ = Kind::BigInt;
    v.p_ = std::make_shared<BigInt>(std::move(b));
    return v;
}
Value Value::Float(double f) {
    Value v;
    v.kind_ = Kind::Float;
    v.u_.f = f;
    return v;
}
Value Value::Str(Text t) {
    Value v;
    v.kind_ = Kind::Str;
    v.p_ = std::make_shared<Text>(std::move(t));
    return v;
}
Value Value::Str(std::string_view literal, bool content) { return Str(MakeText(std::string(literal), content)); }
Value Value::Undefined(std::string message, bool security) {
    Value v;
    v.p_ = std::make_shared<UndefObj>(UndefObj{std::move(message), security});
    return v;
}
Value Value::List(std::vector<Value> items, ListKind kind) {
    CheckItems(items.size());
    auto obj = std::make_shared<ListObj>();
    int depth = 0;
    for (const Value& item : items) depth = std::max(depth, DepthOf(item));
    obj->depth = depth + 1;
    CheckDepth(obj->depth);
    obj->items = std::move(items);
    obj->kind = kind;
    Value v;
    v.kind_ = Kind::List;
    v.p_ = std::move(obj);
    return v;
}
Value Value::Range(int64_t start, int64_t stop, int64_t step) {
    std::vector<Value> items;
    if (step > 0) {
        for (int64_t i = start; i < stop; i += step) {
            items.push_back(Int(i));
            if (stop - i <= step) break;
        }
    } else {
        for (int64_t i = start; i > stop; i += step) {
            items.push_back(Int(i));
            if (i - stop <= -step) break;
        }
    }
    Value v = List(std::move(items), ListKind::Range);
    auto& obj = const_cast<ListObj&>(v.list());
    obj.range_start = start;
    obj.range_stop = stop;
    obj.range_step = step;
    return v;
}
Value Value::Dict(std::vector<std::pair<Value, Value>> items) {
    CheckItems(items.size() * 2);
    auto obj = std::make_shared<DictObj>();
    int depth = 0;
    for (const auto& [k, val] : items) depth = std::max({depth, DepthOf(k), DepthOf(val)});
    obj->depth = depth + 1;
    CheckDepth(obj->depth);
    obj->items = std::move(items);
    Value v;
    v.kind_ = Kind::Dict;
    v.p_ = std::move(obj);
    return v;
}
Value Value::Iter(std::vector<Value> items, std::string type_name) {
    CheckItems(items.size());
    auto obj = std::make_shared<IterObj>();
    obj->items = std::move(items);
    obj->type_name = std::move(type_name);
    Value v;
    v.kind_ = Kind::Iter;
    v.p_ = std::move(obj);
    return v;
}
Value Value::Namespace() {
    Value v;
    v.kind_ = Kind::Namespace;
    v.p_ = std::make_shared<NamespaceObj>();
    return v;
}
Value Value::Func(std::shared_ptr<FuncObj> f) {
    Value v;
    v.kind_ = Kind::Func;
    v.p_ = std::move(f);
    return v;
}
Value Value::Object(std::shared_ptr<ObjectObj> o) {
    Value v;
    v.kind_ = Kind::Object;
    v.p_ = std::move(o);
    return v;
}
Value Value::Loop(std::shared_ptr<LoopObj> l) {
    Value v;
    v.kind_ = Kind::Loop;
    v.p_ = std::move(l);
    return v;
}

bool Value::is_list_kind(ListKind k) const { return kind_ == Kind::List && list().kind == k; }

const Value* DictObj::FindStr(std::string_view key) const {
    for (const auto& [k, v] : items) {
        if (k.kind() == Kind::Str && k.str().bytes == key) return &v;
    }
    return nullptr;
}

const Value* DictObj::Find(const Value& key) const {
    if (!IsHashable(key)) Fail(Cat("unhashable type: '", TypeName(key), "'"));
    if (key.kind() == Kind::Str) return FindStr(key.str().bytes);
    for (const auto& [k, v] : items) {
        if (PyEqual(k, key)) return &v;
    }
    return nullptr;
}

const Value* NamespaceObj::Find(std::string_view name) const {
    for (const auto& [k, v] : attrs) {
        if (k.kind() == Kind::Str && k.str().bytes == name) return &v;
    }
    return nullptr;
}

void NamespaceObj::Set(const Value& name, Value v) {
    for (auto& [k, old] : attrs) {
        if (k.kind() == Kind::Str && name.kind() == Kind::Str && k.str().bytes == name.str().bytes) {
            old = std::move(v);
            return;
        }
    }
    attrs.emplace_back(name, std::move(v));
}

bool Truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return v.b();
        case Kind::Int:
            return v.i() != 0;
        case Kind::BigInt:
            return true;  // never zero: zero fits an Int
        case Kind::Float:
            return v.f() != 0;
        case Kind::Str:
            return !v.str().bytes.empty();
        case Kind::List:
            return !v.list().items.empty();
        case Kind::Dict:
            return !v.dict().items.empty();
        case Kind::Loop:
            return !v.loop().items->empty();
        case Kind::Iter:
        case Kind::Namespace:
        case Kind::Func:
        case Kind::Object:
            return true;
    }
    return false;
}

bool IsHashable(const Value& v) {
    switch (v.kind()) {
        case Kind::List:
            if (v.list().kind == ListKind::Tuple) {
                for (const Value& item : v.list().items) {
                    if (!IsHashable(item)) return false;
                }
                return true;
            }
            return v.list().kind == ListKind::Range;
        case Kind::Dict:
            return false;
        default:
            return true;
    }
}

bool PyEqual(const Value& a, const Value& b) {
    if ((a.kind() == Kind::BigInt || b.kind() == Kind::BigInt) && a.is_number() && b.is_number()) {
        if (a.kind() == Kind::Float) return std::isfinite(a.f()) && b.big().CompareDouble(a.f()) == 0;
        if (b.kind() == Kind::Float) return std::isfinite(b.f()) && a.big().CompareDouble(b.f()) == 0;
        return BigInt::Compare(a.AsBig(), b.AsBig()) == 0;
    }
    if (a.is_number() && b.is_number()) {
        if (a.kind() == Kind::Float && b.kind() == Kind::Float) return a.f() == b.f();
        if (a.kind() == Kind::Float) return !std::isnan(a.f()) && CompareIntFloat(b.i(), a.f()) == 0;
        if (b.kind() == Kind::Float) return !std::isnan(b.f()) && CompareIntFloat(a.i(), b.f()) == 0;
        return a.i() == b.i();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None:
            return true;
        case Kind::Str: {
            const std::string& x = a.str().bytes;
            const std::string& y = b.str().bytes;
            if (x.size() != y.size()) return false;
            ChargeBytes(x.size());
            return x == y;
        }
        case Kind::List: {
            const ListObj& x = a.list();
            const ListObj& y = b.list();
            if (&x == &y) return true;
            // list == tuple is False in Python; the dict views compare as sets (not needed).
            const bool xt = x.kind == ListKind::Tuple, yt = y.kind == ListKind::Tuple;
            if (xt != yt) return false;
            if (x.kind == ListKind::Range || y.kind == ListKind::Range) {
                if (x.kind != y.kind) return false;
            }
            if (x.items.size() != y.items.size()) return false;
            for (size_t i = 0; i < x.items.size(); ++i) {
                if (!PyEqual(x.items[i], y.items[i])) return false;
            }
            return true;
        }
        case Kind::Dict: {
            const DictObj& x = a.dict();
            const DictObj& y = b.dict();
            if (&x == &y) return true;
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [k, v] : x.items) {
                const Value* other = y.Find(k);
                if (other == nullptr || !PyEqual(v, *other)) return false;
            }
            return true;
        }
        default:
            return a.identity() == b.identity();
    }
}

namespace {
const char* OpText(CmpOp op) {
    switch (op) {
        case CmpOp::Lt: return "<";
        case CmpOp::Le: return "<=";
        case CmpOp::Gt: return ">";
        case CmpOp::Ge: return ">=";
    }
    return "?";
}

template <typename T>
bool Apply(const T& x, const T& y, CmpOp op) {
    switch (op) {
        case CmpOp::Lt: return x < y;
        case CmpOp::Le: return x <= y;
        case CmpOp::Gt: return x > y;
        case CmpOp::Ge: return x >= y;
    }
    return false;
}
}  // namespace

bool PyCompare(const Value& a, const Value& b, CmpOp op) {
    if (a.is_undefined()) FailUndefined(a);
    if (b.is_undefined()) FailUndefined(b);
    if ((a.kind() == Kind::BigInt || b.kind() == Kind::BigInt) && a.is_number() && b.is_number()) {
        // Exact, as Python compares ints with floats; inf and nan as ever.
        int c;
        if (a.kind() == Kind::Float || b.kind() == Kind::Float) {
            const double d = a.kind() == Kind::Float ? a.f() : b.f();
            if (std::isnan(d)) return false;
            const BigInt& x = a.kind() == Kind::Float ? b.big() : a.big();
            c = std::isinf(d) ? (d > 0 ? -1 : 1) : x.CompareDouble(d);
            if (a.kind() == Kind::Float) c = -c;
        } else {
            c = BigInt::Compare(a.AsBig(), b.AsBig());
        }
        return Apply(c, 0, op);
    }
    if (a.is_number() && b.is_number()) {
        if (a.kind() != Kind::Float && b.kind() != Kind::Float) return Apply(a.i(), b.i(), op);
        if (a.kind() == Kind::Float && b.kind() == Kind::Float) return Apply(a.f(), b.f(), op);
        if (a.kind() == Kind::Float) {
            if (std::isnan(a.f())) return false;
            return Apply(-CompareIntFloat(b.i(), a.f()), 0, op);
        }
        if (std::isnan(b.f())) return false;
        return Apply(CompareIntFloat(a.i(), b.f()), 0, op);
    }
    if (a.kind() == Kind::Str && b.kind() == Kind::Str) {
        ChargeBytes(std::min(a.str().size(), b.str().size()));
        // UTF-8 byte order is code point order.
        return Apply(a.str().bytes.compare(b.str().bytes), 0, op);
    }
    if (a.kind() == Kind::List && b.kind() == Kind::List) {
        const ListObj& x = a.list();
        const ListObj& y = b.list();
        const bool same = (x.kind == ListKind::List && y.kind == ListKind::List) ||
                          (x.kind == ListKind::Tuple && y.kind == ListKind::Tuple);
        if (same) {
            const size_t n = std::min(x.items.size(), y.items.size());
            for (size_t i = 0; i < n; ++i) {
                if (!PyEqual(x.items[i], y.items[i])) return PyCompare(x.items[i], y.items[i], op);
            }
            return Apply(x.items.size(), y.items.size(), op);
        }
    }
    Fail(Cat("'", OpText(op), "' not supported between instances of '", TypeName(a), "' and '",
                      TypeName(b), "'"));
}

std::string TypeName(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int:
        case Kind::BigInt: return "int";
        case Kind::Float: return "float";
        case Kind::Str: return "str";
        case Kind::List:
            switch (v.list().kind) {
                case ListKind::List: return "list";
                case ListKind::Tuple: return "tuple";
                case ListKind::DictKeys: return "dict_keys";
                case ListKind::DictValues: return "dict_values";
                case ListKind::DictItems: return "dict_items";
                case ListKind::Range: return "range";
            }
            return "list";
        case Kind::Dict: return "dict";
        case Kind::Iter: return v.iter().type_name;
        case Kind::Namespace: return "Namespace";
        case Kind::Func:
            switch (v.func().kind) {
                case FuncKind::Macro: return "Macro";
                case FuncKind::Global:
                    return v.func().name == "range" || v.func().name == "dict" || v.func().name == "namespace" ||
                                   v.func().name == "cycler" || v.func().name == "joiner"
                               ? "type"
                               : "function";
                case FuncKind::Method: return "builtin_function_or_method";
                case FuncKind::LoopMethod: return "method";
            }
            return "function";
        case Kind::Loop: return "LoopContext";
        case Kind::Object: return v.object().type == ObjectObj::Type::Cycler ? "Cycler" : "Joiner";
    }
    return "object";
}

std::string ObjectTypeRepr(const Value& v) {
    switch (v.kind()) {
        case Kind::None: return "None";
        case Kind::Namespace: return "jinja2.utils.Namespace object";
        case Kind::Loop: return "jinja2.runtime.LoopContext object";
        case Kind::Object: return "jinja2.utils." + TypeName(v) + " object";
        case Kind::Func:
            if (v.func().kind == FuncKind::Macro) return "jinja2.runtime.Macro object";
            return TypeName(v) + " object";
        default: return TypeName(v) + " object";
    }
}

namespace {

void ReprStr(std::string& out, std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    GrowBy(out.size(), s.size() + 2);
    out.push_back(quote);
    char buf[16];
    for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        const uint32_t cp = DecodeUtf8(s, pos);
        if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(cp));
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp < 0x20 || cp == 0x7F) {
            std::snprintf(buf, sizeof buf, "\\x%02x", cp);
            out += buf;
        } else if (cp < 0x7F) {
            out.push_back(static_cast<char>(cp));
        } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
            // An invalid UTF-8 byte: Python would show the lone surrogate.
            std::snprintf(buf, sizeof buf, "\\udc%02x", cp - 0xDC00);
            out += buf;
        } else if (!IsPrintable(cp)) {
            AppendPyEscape(out, cp);
        } else {
            out.append(s.substr(start, pos - start));
        }
        if (out.size() > s.size() + 2) GrowBy(out.size(), 0);
    }
    out.push_back(quote);
}

void ReprInto(std::string& out, bool& content, const Value& v, int depth);

void ReprItems(std::string& out, bool& content, const std::vector<Value>& items, int depth) {
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) Put(out, ", ");
        ReprInto(out, content, items[i], depth + 1);
    }
}

void ReprPairs(std::string& out, bool& content, const std::vector<std::pair<Value, Value>>& items, int depth) {
    Put(out, "{");
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) Put(out, ", ");
        ReprInto(out, content, items[i].first, depth + 1);
        Put(out, ": ");
        ReprInto(out, content, items[i].second, depth + 1);
    }
    Put(out, "}");
}

// The text a function prints as, or "" when Python's would hold a memory
// address (which no template can depend on).
std::string FuncRepr(const FuncObj& f) {
    switch (f.kind) {
        case FuncKind::Macro: {
            if (f.anonymous) return "<Macro anonymous>";
            std::string s = "<Macro ";
            ReprStr(s, f.name);
            return s + ">";
        }
        case FuncKind::Global:
            if (f.name == "range" || f.name == "dict") return "<class '" + f.name + "'>";
            if (f.name == "namespace") return "<class 'jinja2.utils.Namespace'>";
            if (f.name == "cycler") return "<class 'jinja2.utils.Cycler'>";
            if (f.name == "joiner") return "<class 'jinja2.utils.Joiner'>";
            return "";
        default:
            return "";
    }
}

void ReprInto(std::string& out, bool& content, const Value& v, int depth) {
    if (depth > MaxDepth() + 1) {
        Exhausted(Cat("values nested deeper than max_depth (", MaxDepth(), ")"));
    }
    switch (v.kind()) {
        case Kind::Undefined: Put(out, "Undefined"); return;
        case Kind::None: Put(out, "None"); return;
        case Kind::Bool: Put(out, v.b() ? "True" : "False"); return;
        case Kind::Int: Put(out, std::to_string(v.i())); return;
        case Kind::BigInt: Put(out, v.big().ToString()); return;
        case Kind::Float: Put(out, FloatRepr(v.f())); return;
        case Kind::Str:
            if (v.str().has_content()) content = true;
            ChargeBytes(v.str().size());
            if (v.str().markup) Put(out, "Markup(");
            ReprStr(out, v.str().bytes);
            if (v.str().markup) Put(out, ")");
            return;
        case Kind::List: {
            const ListObj& l = v.list();
            switch (l.kind) {
                case ListKind::List:
                    Put(out, "[");
                    ReprItems(out, content, l.items, depth);
                    Put(out, "]");
                    return;
                case ListKind::Tuple:
                    Put(out, "(");
                    ReprItems(out, content, l.items, depth);
                    Put(out, l.items.size() == 1 ? ",)" : ")");
                    return;
                case ListKind::DictKeys:
                case ListKind::DictValues:
                case ListKind::DictItems:
                    Put(out, TypeName(v));
                    Put(out, "([");
                    ReprItems(out, content, l.items, depth);
                    Put(out, "])");
                    return;
                case ListKind::Range:
                    Put(out, Cat("range(", l.range_start, ", ", l.range_stop));
                    Put(out, l.range_step == 1 ? ")" : Cat(", ", l.range_step, ")"));
                    return;
            }
            return;
        }
        case Kind::Dict: ReprPairs(out, content, v.dict().items, depth); return;
        case Kind::Namespace:
            Put(out, "<Namespace ");
            ReprPairs(out, content, v.ns().attrs, depth);
            Put(out, ">");
            return;
        case Kind::Loop:
            Put(out, Cat("<LoopContext ", v.loop().index0 + 1, "/", v.loop().items->size(), ">"));
            return;
        case Kind::Func: {
            std::string r = FuncRepr(v.func());
            if (r.empty()) {
                Fail(Cat("cannot print ", TypeName(v), " '", v.func().name,
                                  "' (Python would print its memory address)"));
            }
            Put(out, r);
            return;
        }
        case Kind::Iter:
            Fail(Cat("cannot print a ", v.iter().type_name,
                              " (Python would print its memory address); convert it with |list"));
        case Kind::Object:
            Fail(Cat("cannot print a ", TypeName(v), " (Python would print its memory address)"));
    }
}

}  // namespace

void AppendRepr(TextBuilder& out, const Value& v) {
    std::string s;
    bool content = false;
    ReprInto(s, content, v, 0);
    out.Append(s, content);
}

void AppendStr(TextBuilder& out, const Value& v) {
    switch (v.kind()) {
        case Kind::Str: out.Append(v.str()); return;
        case Kind::Undefined: return;
        default: AppendRepr(out, v); return;
    }
}

Text ToText(const Value& v) {
    if (v.kind() == Kind::Str) return v.str();
    TextBuilder b;
    AppendStr(b, v);
    return b.Finish();
}

size_t PyLen(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return 0;
        case Kind::Str: return CodePointCount(v.str().bytes);
        case Kind::List: return v.list().items.size();
        case Kind::Dict: return v.dict().items.size();
        case Kind::Loop: return v.loop().items->size();
        default: Fail(Cat("object of type '", TypeName(v), "' has no len()"));
    }
}

std::vector<Value> PyIterate(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return {};
        case Kind::Str: {
            const Text& t = v.str();
            GrowBy(0, t.size() * kBytesPerItem);
            std::vector<Value> out;
            out.reserve(t.size());
            for (size_t pos = 0; pos < t.size();) {
                const size_t start = pos;
                DecodeUtf8(t.bytes, pos);
                Text ch = SubText(t, start, pos);
                ch.markup = false;  // iterating a Markup gives plain str characters
                out.push_back(Value::Str(std::move(ch)));
            }
            return out;
        }
        case Kind::List: return v.list().items;
        case Kind::Dict: {
            std::vector<Value> keys;
            keys.reserve(v.dict().items.size());
            for (const auto& kv : v.dict().items) keys.push_back(kv.first);
            return keys;
        }
        case Kind::Iter: {
            IterObj& it = v.iter();
            std::vector<Value> rest(it.items.begin() + static_cast<std::ptrdiff_t>(it.pos), it.items.end());
            it.pos = it.items.size();
            return rest;
        }
        default: Fail(Cat("'", TypeName(v), "' object is not iterable"));
    }
}

void FailUndefined(const Value& v) {
    const UndefObj* u = v.undef();
    if (u == nullptr) Fail("undefined value");
    Fail(u->message);
}

}  // namespace prepack::jinja
