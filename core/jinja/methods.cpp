// Methods of str, dict, list and tuple as the sandbox lets templates call
// them, and the attributes of a for loop's `loop`.
#include <algorithm>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/strings.h"
#include "core/jinja/unicode.h"

namespace prepack::jinja {
namespace {

struct MethodName {
    std::string_view name;
    MethodStatus status;
};

constexpr MethodStatus S = MethodStatus::Supported;
constexpr MethodStatus U = MethodStatus::Unsupported;
constexpr MethodStatus X = MethodStatus::Unsafe;

constexpr MethodName kStrMethods[] = {
    {"capitalize", S}, {"casefold", U}, {"center", S}, {"count", S}, {"encode", U}, {"endswith", S},
    {"expandtabs", U}, {"find", S}, {"format", S}, {"format_map", U}, {"index", S}, {"isalnum", S},
    {"isalpha", S}, {"isascii", S}, {"isdecimal", S}, {"isdigit", S}, {"isidentifier", U}, {"islower", S},
    {"isnumeric", S}, {"isprintable", U}, {"isspace", S}, {"istitle", U}, {"isupper", S}, {"join", S},
    {"ljust", S}, {"lower", S}, {"lstrip", S}, {"maketrans", U}, {"partition", S}, {"removeprefix", S},
    {"removesuffix", S}, {"replace", S}, {"rfind", S}, {"rindex", S}, {"rjust", S}, {"rpartition", S},
    {"rsplit", S}, {"rstrip", S}, {"split", S}, {"splitlines", S}, {"startswith", S}, {"strip", S},
    {"swapcase", S}, {"title", S}, {"translate", U}, {"upper", S}, {"zfill", S},
};
constexpr MethodName kDictMethods[] = {
    {"clear", X}, {"copy", S}, {"fromkeys", U}, {"get", S}, {"items", S}, {"keys", S},
    {"pop", X}, {"popitem", X}, {"setdefault", X}, {"update", X}, {"values", S},
};
constexpr MethodName kListMethods[] = {
    {"append", X}, {"clear", X}, {"copy", S}, {"count", S}, {"extend", X}, {"index", S},
    {"insert", X}, {"pop", X}, {"remove", X}, {"reverse", X}, {"sort", X},
};
constexpr MethodName kTupleMethods[] = {{"count", S}, {"index", S}};
constexpr MethodName kNumberMethods[] = {
    {"as_integer_ratio", U}, {"bit_count", U}, {"bit_length", U}, {"conjugate", U}, {"denominator", U},
    {"from_bytes", U}, {"fromhex", U}, {"hex", U}, {"imag", U}, {"is_integer", U}, {"numerator", U},
    {"real", U}, {"to_bytes", U},
};

template <size_t N>
MethodStatus Find(const MethodName (&table)[N], std::string_view name) {
    for (const MethodName& m : table) {
        if (m.name == name) return m.status;
    }
    return MethodStatus::None;
}

Value StrList(std::vector<Text> parts) {
    std::vector<Value> items;
    items.reserve(parts.size());
    for (Text& t : parts) items.push_back(Value::Str(std::move(t)));
    return Value::List(std::move(items));
}

// startswith / endswith with a str or a tuple of str.
bool AffixMatch(const Text& s, const Value& affix, const Value& start, const Value& end, bool prefix,
                std::string_view what) {
    const Text window = CodePointSlice(s, start, end);
    auto one = [&](const Value& a) {
        if (!a.is_str()) {
            Fail(Cat(what, " first arg must be str or a tuple of str, not ", TypeName(a)));
        }
        const std::string& w = window.bytes;
        const std::string& x = a.str().bytes;
        if (x.size() > w.size()) return false;
        return prefix ? w.compare(0, x.size(), x) == 0 : w.compare(w.size() - x.size(), x.size(), x) == 0;
    };
    if (affix.is_list_kind(ListKind::Tuple)) {
        for (const Value& a : affix.list().items) {
            if (!a.is_str()) Fail(Cat("tuple for ", what, " must only contain str, not ", TypeName(a)));
            if (one(a)) return true;
        }
        return false;
    }
    if (affix.is_undefined()) FailUndefined(affix);
    if (!affix.is_str()) {
        Fail(Cat(what, " first arg must be str or a tuple of str, not ", TypeName(affix)));
    }
    return one(affix);
}

Value JoinStrings(const Text& sep, const Value& iterable) {
    std::vector<Value> items = PyIterate(iterable);
    TextBuilder out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_str()) {
            Fail(Cat("sequence item ", i, ": expected str instance, ", TypeName(items[i]), " found"));
        }
        if (i > 0) out.Append(sep);
        if (sep.markup && !items[i].str().markup) {
            out.Append(Escape(items[i]).str());
        } else {
            out.Append(items[i].str());
        }
    }
    Text t = out.Finish();
    t.markup = sep.markup;
    return Value::Str(std::move(t));
}

Value PartitionOf(const Text& s, const Value& sep_value, bool last) {
    const Text& sep = ArgStr(sep_value, last ? "rpartition" : "partition");
    if (sep.bytes.empty()) Fail("empty separator");
    const size_t f = last ? s.bytes.rfind(sep.bytes) : s.bytes.find(sep.bytes);
    std::vector<Value> parts;
    if (f == std::string::npos) {
        Text empty;
        empty.markup = s.markup;
        if (last) {
            parts = {Value::Str(empty), Value::Str(empty), Value::Str(s)};
        } else {
            parts = {Value::Str(s), Value::Str(empty), Value::Str(empty)};
        }
    } else {
        parts = {Value::Str(SubText(s, 0, f)), Value::Str(SubText(s, f, f + sep.size())),
                 Value::Str(SubText(s, f + sep.size(), s.size()))};
    }
    return Value::Tuple(std::move(parts));
}

Value StrMethod(const Value& self, std::string_view name, const Args& args) {
    const Text& s = self.str();
    const std::string what = Cat("str.", name);
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        ArgBinder a(what, args, {"chars"});
        return Value::Str(PyStrip(s, a.Get(0, Value::None()), name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        ArgBinder a(what, args, {"sep", "maxsplit"});
        const int64_t maxsplit = a.Get(1) != nullptr ? ArgInt(*a.Get(1), what) : -1;
        return Value::List(PySplit(s, a.Get(0, Value::None()), maxsplit, name == "rsplit"));
    }
    if (name == "splitlines") {
        ArgBinder a(what, args, {"keepends"});
        return StrList(PySplitLines(s, Truthy(a.Get(0, Value::Bool(false)))));
    }
    if (name == "startswith" || name == "endswith") {
        ArgBinder a(what, args, {"prefix", "start", "end"});
        return Value::Bool(AffixMatch(s, a.Required(0), a.Get(1, Value::None()), a.Get(2, Value::None()),
                                      name == "startswith", name));
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "swapcase") {
        NoArgs(what, args);
        ChargeBytes(s.size());
        std::string out = name == "upper"        ? PyUpper(s.bytes)
                          : name == "lower"      ? PyLower(s.bytes)
                          : name == "title"      ? PyTitle(s.bytes)
                          : name == "capitalize" ? PyCapitalize(s.bytes)
                                                 : PySwapcase(s.bytes);
        return Value::Str(Rewritten(s, std::move(out)));
    }
    if (name == "replace") {
        ArgBinder a(what, args, {"old", "new", "count"});
        const int64_t count = a.Get(2) != nullptr ? ArgInt(*a.Get(2), what) : -1;
        Text old = ArgStr(a.Required(0), what);
        Text repl = ArgStr(a.Required(1), what);
        if (s.markup) {  // Markup.replace escapes its arguments
            if (!old.markup) old = Escape(Value::Str(old)).str();
            if (!repl.markup) repl = Escape(Value::Str(repl)).str();
        }
        return Value::Str(PyReplace(s, old, repl, count));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        ArgBinder a(what, args, {"sub", "start", "end"});
        const int64_t i = PyFind(s, ArgStr(a.Required(0), what), a.Get(1, Value::None()), a.Get(2, Value::None()),
                                 name[0] == 'r');
        if (i < 0 && (name == "index" || name == "rindex")) Fail("substring not found");
        return Value::Int(i);
    }
    if (name == "count") {
        ArgBinder a(what, args, {"sub", "start", "end"});
        return Value::Int(PyCount(s, ArgStr(a.Required(0), what), a.Get(1, Value::None()), a.Get(2, Value::None())));
    }
    if (name == "join") {
        ArgBinder a(what, args, {"iterable"});
        return JoinStrings(s, a.Required(0));
    }
    if (name == "format") return StrFormat(s, args);
    if (name.substr(0, 2) == "is") {
        NoArgs(what, args);
        ChargeBytes(s.size());
        const std::string& b = s.bytes;
        if (name == "isalpha") return Value::Bool(PyAll(b, IsAlpha));
        if (name == "isdecimal") return Value::Bool(PyAll(b, IsDecimal));
        if (name == "isdigit") return Value::Bool(PyAll(b, IsDigit));
        if (name == "isnumeric") return Value::Bool(PyAll(b, IsNumeric));
        if (name == "isspace") return Value::Bool(PyAll(b, IsPyWhitespace));
        if (name == "isascii") return Value::Bool(IsAscii(b));
        if (name == "islower") return Value::Bool(PyIsLower(b));
        if (name == "isupper") return Value::Bool(PyIsUpper(b));
        if (name == "isalnum") {
            return Value::Bool(PyAll(b, [](uint32_t c) { return IsAlpha(c) || IsNumeric(c); }));
        }
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        ArgBinder a(what, args, {"width", "fillchar"});
        const int64_t width = ArgInt(a.Required(0), what);
        Text fill = MakeText(" ");
        if (const Value* f = a.Get(1)) {
            fill = ArgStr(*f, what);
            if (CodePointCount(fill.bytes) != 1) Fail("The fill character must be exactly one character long");
        }
        return Value::Str(PyPad(s, width, fill, name == "center" ? '^' : name == "ljust" ? '<' : '>'));
    }
    if (name == "zfill") {
        ArgBinder a(what, args, {"width"});
        const int64_t width = ArgInt(a.Required(0), what);
        const auto len = static_cast<int64_t>(CodePointCount(s.bytes));
        if (width <= len) return self;
        GrowBy(s.size(), static_cast<size_t>(width - len));
        TextBuilder out;
        size_t rest = 0;
        if (!s.bytes.empty() && (s.bytes[0] == '+' || s.bytes[0] == '-')) {
            out.AppendRange(s, 0, 1);
            rest = 1;
        }
        out.Append(std::string(static_cast<size_t>(width - len), '0'));
        out.AppendRange(s, rest, s.size());
        return Value::Str(out.Finish());
    }
    if (name == "partition" || name == "rpartition") {
        ArgBinder a(what, args, {"sep"});
        return PartitionOf(s, a.Required(0), name == "rpartition");
    }
    if (name == "removeprefix" || name == "removesuffix") {
        ArgBinder a(what, args, {"affix"});
        const std::string& x = ArgStr(a.Required(0), what).bytes;
        const std::string& b = s.bytes;
        if (name == "removeprefix" && b.compare(0, x.size(), x) == 0 && x.size() <= b.size()) {
            return Value::Str(SubText(s, x.size(), b.size()));
        }
        if (name == "removesuffix" && !x.empty() && x.size() <= b.size() &&
            b.compare(b.size() - x.size(), x.size(), x) == 0) {
            return Value::Str(SubText(s, 0, b.size() - x.size()));
        }
        return self;
    }
    Fail(Cat(what, " is not supported"));
}

Value DictView(const DictObj& d, ListKind kind) {
    std::vector<Value> items;
    items.reserve(d.items.size());
    for (const auto& [k, v] : d.items) {
        if (kind == ListKind::DictKeys) {
            items.push_back(k);
        } else if (kind == ListKind::DictValues) {
            items.push_back(v);
        } else {
            items.push_back(Value::Tuple({k, v}));
        }
    }
    return Value::List(std::move(items), kind);
}

Value DictMethod(const Value& self, std::string_view name, const Args& args) {
    const DictObj& d = self.dict();
    const std::string what = Cat("dict.", name);
    if (name != "get" && name != "items" && name != "keys" && name != "values" && name != "copy") {
        Fail(Cat(what, " is not supported"));
    }
    if (name == "get") {
        ArgBinder a(what, args, {"key", "default"});
        const Value* v = d.Find(a.Required(0));
        return v != nullptr ? *v : a.Get(1, Value::None());
    }
    NoArgs(what, args);
    if (name == "copy") return Value::Dict(d.items);  // a new dict (the sandbox never changes either)
    if (name == "items") return DictView(d, ListKind::DictItems);
    if (name == "keys") return DictView(d, ListKind::DictKeys);
    if (name == "values") return DictView(d, ListKind::DictValues);
    Fail(Cat(what, " is not supported"));
}

Value SeqMethod(const Value& self, std::string_view name, const Args& args) {
    const std::vector<Value>& items = self.list().items;
    const std::string what = Cat(TypeName(self), ".", name);
    if (name == "copy" && self.list().kind == ListKind::List) {
        NoArgs(what, args);
        return Value::List(items);
    }
    if (name != "count" && name != "index") Fail(Cat(what, " is not supported"));
    if (name == "count") {
        ArgBinder a(what, args, {"value"});
        const Value& x = a.Required(0);
        return Value::Int(std::count_if(items.begin(), items.end(), [&](const Value& v) { return PyEqual(v, x); }));
    }
    if (name == "index") {
        ArgBinder a(what, args, {"value", "start", "stop"});
        const Value& x = a.Required(0);
        const auto n = static_cast<int64_t>(items.size());
        auto norm = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
        const int64_t b = a.Get(1) != nullptr ? norm(ArgInt(*a.Get(1), what)) : 0;
        const int64_t e = a.Get(2) != nullptr ? norm(ArgInt(*a.Get(2), what)) : n;
        for (int64_t i = b; i < e; ++i) {
            if (PyEqual(items[static_cast<size_t>(i)], x)) return Value::Int(i);
        }
        TextBuilder r;
        AppendRepr(r, x);
        Fail(self.list().kind == ListKind::Tuple ? "tuple.index(x): x not in tuple"
                                                 : Cat(r.view(), " is not in list"));
    }
    Fail(Cat(what, " is not supported"));
}

}  // namespace

MethodStatus LookupMethod(const Value& self, std::string_view name) {
    switch (self.kind()) {
        case Kind::Str: return Find(kStrMethods, name);
        case Kind::Dict: return Find(kDictMethods, name);
        case Kind::List:
            switch (self.list().kind) {
                case ListKind::List: return Find(kListMethods, name);
                case ListKind::Tuple: return Find(kTupleMethods, name);
                case ListKind::Range:
                    if (name == "count" || name == "index") return MethodStatus::Supported;
                    return name == "start" || name == "stop" || name == "step" ? MethodStatus::Unsupported
                                                                               : MethodStatus::None;
                default: return MethodStatus::None;
            }
        case Kind::Bool:
        case Kind::Int:
        case Kind::Float: return Find(kNumberMethods, name);
        case Kind::Object:
            if (self.object().type == ObjectObj::Type::Cycler && (name == "next" || name == "reset")) {
                return MethodStatus::Supported;
            }
            return MethodStatus::None;
        default: return MethodStatus::None;
    }
}

Value ObjectAttr(const Value& self, std::string_view name) {
    const ObjectObj& o = self.object();
    if (o.type == ObjectObj::Type::Cycler) {
        if (name == "items") return Value::Tuple(o.items);
        if (name == "pos") return Value::Int(static_cast<int64_t>(o.pos));
        if (name == "current") return o.items[o.pos];
    } else {
        if (name == "sep") return o.sep;
        if (name == "used") return Value::Bool(o.used);
    }
    return Value();
}

Value BoundMethod(const Value& self, std::string_view name) {
    auto f = std::make_shared<FuncObj>();
    f->kind = FuncKind::Method;
    f->name = std::string(name);
    f->self = self;
    return Value::Func(std::move(f));
}

Value CallMethod(const Value& self, std::string_view name, const Args& args) {
    switch (self.kind()) {
        case Kind::Str: return StrMethod(self, name, args);
        case Kind::Dict: return DictMethod(self, name, args);
        case Kind::List: return SeqMethod(self, name, args);
        case Kind::Object: {
            ObjectObj& o = self.object();
            NoArgs(Cat("Cycler.", name), args);
            if (name == "reset") {
                o.pos = 0;
                return Value::None();
            }
            Value v = o.items[o.pos];
            o.pos = (o.pos + 1) % o.items.size();
            return v;
        }
        default: Fail(Cat(TypeName(self), ".", name, " is not supported"));
    }
}

Value LoopAttr(const Value& loop, std::string_view name) {
    const LoopObj& l = loop.loop();
    const auto n = static_cast<int64_t>(l.items->size());
    const auto i = static_cast<int64_t>(l.index0);
    if (name == "index") return Value::Int(i + 1);
    if (name == "index0") return Value::Int(i);
    if (name == "revindex") return Value::Int(n - i);
    if (name == "revindex0") return Value::Int(n - i - 1);
    if (name == "first") return Value::Bool(i == 0);
    if (name == "last") return Value::Bool(i == n - 1);
    if (name == "length") return Value::Int(n);
    if (name == "depth") return Value::Int(l.depth);
    if (name == "depth0") return Value::Int(l.depth - 1);
    if (name == "previtem") {
        if (i == 0) return Value::Undefined("there is no previous item");
        return (*l.items)[l.index0 - 1];
    }
    if (name == "nextitem") {
        if (i + 1 >= n) return Value::Undefined("there is no next item");
        return (*l.items)[l.index0 + 1];
    }
    if (name == "cycle" || name == "changed") {
        auto f = std::make_shared<FuncObj>();
        f->kind = FuncKind::LoopMethod;
        f->name = std::string(name);
        f->self = loop;
        return Value::Func(std::move(f));
    }
    return Value();  // no such attribute
}

Value CallLoopMethod(const FuncObj& f, const Args& args) {
    LoopObj& l = f.self.loop();
    if (!args.kw.empty()) Fail(Cat("loop.", f.name, "() takes no keyword arguments"));
    if (f.name == "cycle") {
        if (args.pos.empty()) Fail("no items for cycling given");
        return args.pos[l.index0 % args.pos.size()];
    }
    Value now = Value::Tuple(args.pos);
    if (!l.changed_called || !PyEqual(l.last_changed, now)) {
        l.changed_called = true;
        l.last_changed = std::move(now);
        return Value::Bool(true);
    }
    return Value::Bool(false);
}

}  // namespace prepack::jinja
