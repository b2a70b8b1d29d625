// The globals a template can call: jinja2's range (with the sandbox's
// MAX_RANGE), dict and namespace, and transformers' raise_exception and
// strftime_now.
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {

constexpr std::string_view kGlobals[] = {"range",  "dict",   "namespace", "raise_exception", "strftime_now",
                                         "cycler", "joiner", "lipsum"};
// jinja2.sandbox.MAX_RANGE.
constexpr int64_t kMaxRange = 100000;

// Python's len(range(start, stop, step)).
int64_t RangeLen(int64_t start, int64_t stop, int64_t step) {
    if (step > 0 && start < stop) {
        return static_cast<int64_t>((static_cast<unsigned __int128>(static_cast<__int128>(stop) - start) - 1) /
                                        static_cast<unsigned __int128>(step) +
                                    1);
    }
    if (step < 0 && start > stop) {
        return static_cast<int64_t>((static_cast<unsigned __int128>(static_cast<__int128>(start) - stop) - 1) /
                                        static_cast<unsigned __int128>(-static_cast<__int128>(step)) +
                                    1);
    }
    return 0;
}

Value Range(const Args& args) {
    if (!args.kw.empty()) Fail("range() takes no keyword arguments");
    if (args.pos.empty()) Fail("range expected at least 1 argument, got 0");
    if (args.pos.size() > 3) Fail(Cat("range expected at most 3 arguments, got ", args.pos.size()));
    int64_t v[3];
    for (size_t i = 0; i < args.pos.size(); ++i) v[i] = ArgInt(args.pos[i], "range");
    int64_t start = 0, stop, step = 1;
    if (args.pos.size() == 1) {
        stop = v[0];
    } else {
        start = v[0];
        stop = v[1];
        if (args.pos.size() == 3) step = v[2];
    }
    if (step == 0) Fail("range() arg 3 must not be zero");
    if (RangeLen(start, stop, step) > kMaxRange) {
        Exhausted("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    return Value::Range(start, stop, step);
}

// dict(*args, **kwargs)'s items, in Python's order (a repeated key keeps its
// first position and takes the last value).
std::vector<std::pair<Value, Value>> DictItems(std::string_view what, const Args& args) {
    if (args.pos.size() > 1) Fail(Cat(what, " expected at most 1 argument, got ", args.pos.size()));
    std::vector<std::pair<Value, Value>> items;
    auto put = [&](const Value& k, const Value& v) {
        if (!IsHashable(k)) Fail(Cat("unhashable type: '", TypeName(k), "'"));
        for (auto& [ek, ev] : items) {
            if (PyEqual(ek, k)) {
                ev = v;
                return;
            }
        }
        GrowBy(items.size() * 2 * kBytesPerItem, 2 * kBytesPerItem);
        items.emplace_back(k, v);
    };
    if (args.pos.size() == 1) {
        const Value& src = args.pos[0];
        if (src.kind() == Kind::Dict) {
            for (const auto& [k, v] : src.dict().items) put(k, v);
        } else {
            const std::vector<Value> seq = PyIterate(src);
            for (size_t i = 0; i < seq.size(); ++i) {
                const std::vector<Value> pair = PyIterate(seq[i]);
                if (pair.size() != 2) {
                    Fail(Cat("dictionary update sequence element #", i, " has length ", pair.size(),
                                      "; 2 is required"));
                }
                put(pair[0], pair[1]);
            }
        }
    }
    for (const auto& [k, v] : args.kw) put(Value::Str(k), v);
    return items;
}

}  // namespace

Value LookupGlobal(std::string_view name) {
    for (std::string_view g : kGlobals) {
        if (g == name) {
            auto f = std::make_shared<FuncObj>();
            f->kind = FuncKind::Global;
            f->name = std::string(name);
            return Value::Func(std::move(f));
        }
    }
    return Value();
}

Value CallGlobal(const FuncObj& f, const Args& args, const CallEnv& env) {
    const std::string& name = f.name;
    if (name == "range") return Range(args);
    if (name == "dict") return Value::Dict(DictItems("dict", args));
    if (name == "namespace") {
        Value ns = Value::Namespace();
        for (auto& [k, v] : DictItems("namespace", args)) ns.ns().Set(k, std::move(v));
        return ns;
    }
    if (name == "raise_exception") {
        ArgBinder a("raise_exception", args, {"message"});
        Error e;
        e.code = absl::StatusCode::kInvalidArgument;
        e.message = ToText(a.Required(0)).bytes;
        e.verbatim = true;
        throw e;
    }
    if (name == "cycler") {
        if (!args.kw.empty()) Fail("cycler() takes no keyword arguments");
        if (args.pos.empty()) Fail("at least one item has to be provided");
        auto o = std::make_shared<ObjectObj>();
        o->type = ObjectObj::Type::Cycler;
        o->items = args.pos;
        return Value::Object(std::move(o));
    }
    if (name == "joiner") {
        ArgBinder a("joiner", args, {"sep"});
        auto o = std::make_shared<ObjectObj>();
        o->type = ObjectObj::Type::Joiner;
        o->sep = a.Get(0, Value::Str(", "));
        return Value::Object(std::move(o));
    }
    if (name == "strftime_now") {
        ArgBinder a("strftime_now", args, {"format"});
        const Text& fmt = ArgStr(a.Required(0), "strftime_now");
        return Value::Str(MakeText(StrftimeUtc(fmt.bytes, env.now), fmt.has_content()));
    }
    Fail(Cat(name, "() is not supported"));
}

}  // namespace prepack::jinja
