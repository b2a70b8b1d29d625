// jinja2's builtin tests (jinja2/tests.py semantics).
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/ops.h"
#include "core/jinja/unicode.h"

namespace prepack::jinja {
namespace {

const Value& One(std::string_view name, const Args& args) {
    if (!args.kw.empty() || args.pos.size() != 1) {
        Fail(Cat("test_", name, "() takes exactly one argument besides the value (", args.pos.size(),
                          " given)"));
    }
    return args.pos[0];
}

bool Mod2(const Value& v, int64_t want) {
    return PyEqual(BinaryOp(BinOp::Mod, v, Value::Int(2)), Value::Int(want));
}

bool TOdd(const Value& v, const Args& a) { NoArgs("test_odd", a); return Mod2(v, 1); }
bool TEven(const Value& v, const Args& a) { NoArgs("test_even", a); return Mod2(v, 0); }
bool TDivisibleby(const Value& v, const Args& a) {
    return PyEqual(BinaryOp(BinOp::Mod, v, One("divisibleby", a)), Value::Int(0));
}
bool TDefined(const Value& v, const Args& a) { NoArgs("test_defined", a); return !v.is_undefined(); }
bool TUndefined(const Value& v, const Args& a) { NoArgs("test_undefined", a); return v.is_undefined(); }
bool TFilter(const Value& v, const Args& a) {
    NoArgs("test_filter", a);
    return v.is_str() && FindFilter(v.str().bytes) != nullptr;
}
bool TTest(const Value& v, const Args& a) {
    NoArgs("test_test", a);
    return v.is_str() && FindTest(v.str().bytes) != nullptr;
}
bool TNone(const Value& v, const Args& a) { NoArgs("test_none", a); return v.is_none(); }
bool TBoolean(const Value& v, const Args& a) { NoArgs("test_boolean", a); return v.kind() == Kind::Bool; }
bool TFalse(const Value& v, const Args& a) { NoArgs("test_false", a); return v.kind() == Kind::Bool && !v.b(); }
bool TTrue(const Value& v, const Args& a) { NoArgs("test_true", a); return v.kind() == Kind::Bool && v.b(); }
bool TInteger(const Value& v, const Args& a) {
    NoArgs("test_integer", a);
    return v.kind() == Kind::Int || v.kind() == Kind::BigInt;
}
bool TFloat(const Value& v, const Args& a) { NoArgs("test_float", a); return v.kind() == Kind::Float; }
bool TLower(const Value& v, const Args& a) { NoArgs("test_lower", a); return PyIsLower(ToText(v).bytes); }
bool TUpper(const Value& v, const Args& a) { NoArgs("test_upper", a); return PyIsUpper(ToText(v).bytes); }
bool TString(const Value& v, const Args& a) { NoArgs("test_string", a); return v.is_str(); }
bool TMapping(const Value& v, const Args& a) { NoArgs("test_mapping", a); return v.kind() == Kind::Dict; }
bool TNumber(const Value& v, const Args& a) { NoArgs("test_number", a); return v.is_number(); }
// len() and __getitem__ both exist.
bool TSequence(const Value& v, const Args& a) {
    NoArgs("test_sequence", a);
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::Str:
        case Kind::Dict:
            return true;
        case Kind::List: {
            const ListKind k = v.list().kind;
            return k == ListKind::List || k == ListKind::Tuple || k == ListKind::Range;
        }
        default: return false;
    }
}
// iter() works.
bool TIterable(const Value& v, const Args& a) {
    NoArgs("test_iterable", a);
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::Str:
        case Kind::List:
        case Kind::Dict:
        case Kind::Iter:
        case Kind::Loop:
            return true;
        default: return false;
    }
}
bool TCallable(const Value& v, const Args& a) {
    NoArgs("test_callable", a);
    return v.kind() == Kind::Func || v.kind() == Kind::Undefined || v.kind() == Kind::Loop ||
           (v.kind() == Kind::Object && v.object().type == ObjectObj::Type::Joiner);
}
bool TSameas(const Value& v, const Args& a) {
    const Value& other = One("sameas", a);
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::None: return true;
        case Kind::Bool: return v.b() == other.b();
        case Kind::Int:
            // CPython shares the small ints; beyond them identity is an accident.
            if (v.i() >= -5 && v.i() <= 256) return v.i() == other.i();
            Fail("'sameas' on integers outside [-5, 256] depends on Python object identity; not supported");
        case Kind::Float:
        case Kind::Str:
            Fail("'sameas' on floats and strings depends on Python object identity; not supported");
        default: return v.identity() == other.identity();
    }
}
bool TEscaped(const Value& v, const Args& a) { NoArgs("test_escaped", a); return v.is_str() && v.str().markup; }
bool TIn(const Value& v, const Args& a) { return Contains(One("in", a), v); }
bool TEq(const Value& v, const Args& a) { return PyEqual(v, One("eq", a)); }
bool TNe(const Value& v, const Args& a) { return !PyEqual(v, One("ne", a)); }
bool TLt(const Value& v, const Args& a) { return PyCompare(v, One("lt", a), CmpOp::Lt); }
bool TLe(const Value& v, const Args& a) { return PyCompare(v, One("le", a), CmpOp::Le); }
bool TGt(const Value& v, const Args& a) { return PyCompare(v, One("gt", a), CmpOp::Gt); }
bool TGe(const Value& v, const Args& a) { return PyCompare(v, One("ge", a), CmpOp::Ge); }

const TestDef kTests[] = {
    {"!=", TNe},
    {"<", TLt},
    {"<=", TLe},
    {"==", TEq},
    {">", TGt},
    {">=", TGe},
    {"boolean", TBoolean},
    {"callable", TCallable},
    {"defined", TDefined},
    {"divisibleby", TDivisibleby},
    {"eq", TEq},
    {"equalto", TEq},
    {"escaped", TEscaped},
    {"even", TEven},
    {"false", TFalse},
    {"filter", TFilter},
    {"float", TFloat},
    {"ge", TGe},
    {"greaterthan", TGt},
    {"gt", TGt},
    {"in", TIn},
    {"integer", TInteger},
    {"iterable", TIterable},
    {"le", TLe},
    {"lessthan", TLt},
    {"lower", TLower},
    {"lt", TLt},
    {"mapping", TMapping},
    {"ne", TNe},
    {"none", TNone},
    {"number", TNumber},
    {"odd", TOdd},
    {"sameas", TSameas},
    {"sequence", TSequence},
    {"string", TString},
    {"test", TTest},
    {"true", TTrue},
    {"undefined", TUndefined},
    {"upper", TUpper},
};

}  // namespace

const TestDef* FindTest(std::string_view name) {
    for (const TestDef& t : kTests) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

bool ApplyTest(const TestDef& def, const Value& input, const Args& args) {
    if (def.fn == nullptr) Fail(Cat("the '", def.name, "' test is not supported"));
    return def.fn(input, args);
}

bool CallTestByName(std::string_view name, const Value& input, const Args& args) {
    const TestDef* def = FindTest(name);
    if (def == nullptr) Fail(Cat("No test named '", name, "'."));
    return ApplyTest(*def, input, args);
}

}  // namespace prepack::jinja
