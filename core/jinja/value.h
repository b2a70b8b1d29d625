// The values a template computes with, modelled on the Python objects jinja2
// works with: None and Undefined apart, int and float apart, str with content
// ranges, list and tuple apart (they print differently), dicts in insertion
// order, and the few jinja2 objects (namespace, loop, macro) templates use.
// Lists and dicts are immutable once built (the sandbox forbids list.append,
// dict.update, ...), so they are shared freely; a namespace is the one
// mutable object (`{% set ns.x = ... %}`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/jinja/bigint.h"
#include "core/jinja/text.h"

namespace prepack::jinja {

struct Scope;      // render.cpp: variables of one frame
struct MacroStmt;  // ast.h
struct ForStmt;

enum class Kind : uint8_t { Undefined, None, Bool, Int, BigInt, Float, Str, List, Dict, Iter, Namespace, Func, Loop, Object };

// What a List value is in Python: these print and behave differently.
enum class ListKind : uint8_t { List, Tuple, DictKeys, DictValues, DictItems, Range };

struct ListObj;
struct DictObj;
struct IterObj;
struct NamespaceObj;
struct FuncObj;
struct LoopObj;
struct UndefObj;
struct ObjectObj;

class Value {
public:
    Value() = default;  // Undefined with no hint

    static Value None();
    static Value Bool(bool b);
    static Value Int(int64_t i);
    // An int of any size: Int when it fits 64 bits, BigInt otherwise.
    static Value Integer(BigInt b);
    static Value Float(double f);
    static Value Str(Text t);
    static Value Str(std::string_view literal, bool content = false);
    // An Undefined whose use fails with `message` (jinja2's hint).
    static Value Undefined(std::string message, bool security = false);
    // Fails (RESOURCE_EXHAUSTED) when the items nest deeper than max_depth
    // or are more than max_output_bytes / kBytesPerItem.
    static Value List(std::vector<Value> items, ListKind kind = ListKind::List);
    static Value Tuple(std::vector<Value> items) { return List(std::move(items), ListKind::Tuple); }
    static Value Range(int64_t start, int64_t stop, int64_t step);
    static Value Dict(std::vector<std::pair<Value, Value>> items);  // keys already unique
    static Value Iter(std::vector<Value> items, std::string type_name);
    static Value Namespace();
    static Value Func(std::shared_ptr<FuncObj> f);
    static Value Loop(std::shared_ptr<LoopObj> l);
    static Value Object(std::shared_ptr<ObjectObj> o);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_str() const { return kind_ == Kind::Str; }
    // bool, int and float: Python's numbers (bool is an int).
    bool is_number() const {
        return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::BigInt || kind_ == Kind::Float;
    }
    // bool or an int that fits 64 bits (i() is its value).
    bool is_integral() const { return kind_ == Kind::Bool || kind_ == Kind::Int; }
    // Any Python int, however large.
    bool is_int() const { return is_integral() || kind_ == Kind::BigInt; }

    bool b() const { return u_.b; }
    int64_t i() const { return kind_ == Kind::Bool ? (u_.b ? 1 : 0) : u_.i; }
    // float(v) for a number; fails for an int beyond the double range.
    double f() const {
        return kind_ == Kind::Float ? u_.f : kind_ == Kind::BigInt ? big().ToDouble() : static_cast<double>(i());
    }
    const BigInt& big() const { return *static_cast<const BigInt*>(p_.get()); }
    // The int as a BigInt (is_int()).
    BigInt AsBig() const { return kind_ == Kind::BigInt ? big() : BigInt::FromInt(i()); }
    const Text& str() const { return *static_cast<const Text*>(p_.get()); }
    const ListObj& list() const { return *static_cast<const ListObj*>(p_.get()); }
    const DictObj& dict() const { return *static_cast<const DictObj*>(p_.get()); }
    IterObj& iter() const { return *static_cast<IterObj*>(p_.get()); }
    NamespaceObj& ns() const { return *static_cast<NamespaceObj*>(p_.get()); }
    const FuncObj& func() const { return *static_cast<const FuncObj*>(p_.get()); }
    LoopObj& loop() const { return *static_cast<LoopObj*>(p_.get()); }
    ObjectObj& object() const { return *static_cast<ObjectObj*>(p_.get()); }
    // nullptr for a plain Undefined.
    const UndefObj* undef() const { return static_cast<const UndefObj*>(p_.get()); }
    const void* identity() const { return p_.get(); }
    // list(), tuple() or a dict view / range.
    bool is_list_kind(ListKind k) const;

private:
    Kind kind_ = Kind::Undefined;
    union {
        bool    b;
        int64_t i;
        double  f;
    } u_{};
    std::shared_ptr<void> p_;
};

struct ListObj {
    std::vector<Value> items;
    ListKind kind = ListKind::List;
    int depth = 1;  // container nesting, bounded so that no recursion over it overflows
    int64_t range_start = 0, range_stop = 0, range_step = 1;
};

struct DictObj {
    std::vector<std::pair<Value, Value>> items;
    int depth = 1;
    // Lookup with Python's key equality (1 == 1.0 == True); fails for an
    // unhashable key.
    const Value* Find(const Value& key) const;
    const Value* FindStr(std::string_view key) const;
};

// A Python iterator (the generators map/select/... return, reversed()):
// always true, no len(), exhausted by the first iteration.
struct IterObj {
    std::vector<Value> items;
    size_t pos = 0;
    std::string type_name;
};

struct NamespaceObj {
    std::vector<std::pair<Value, Value>> attrs;
    const Value* Find(std::string_view name) const;
    void Set(const Value& name, Value v);
};

enum class FuncKind : uint8_t { Macro, Global, Method, LoopMethod };

struct FuncObj {
    FuncKind kind = FuncKind::Global;
    std::string name;            // macro, global or method name
    int id = 0;                  // which global
    bool anonymous = false;      // a call block's `caller`: prints as <Macro anonymous>
    Value self;                  // bound method's object
    const MacroStmt* macro = nullptr;
    std::shared_ptr<Scope> scope;  // the macro's defining frame
};

struct LoopObj {
    std::shared_ptr<const std::vector<Value>> items;
    size_t index0 = 0;
    Value last_changed;
    bool changed_called = false;
    int depth = 1;                     // of a recursive loop
    const ForStmt* recurse = nullptr;  // set for `for ... recursive`
    std::shared_ptr<Scope> scope;      // where that loop runs
};

// jinja2's cycler() and joiner(): small mutable helper objects.
struct ObjectObj {
    enum class Type : uint8_t { Cycler, Joiner };
    Type type = Type::Cycler;
    std::vector<Value> items;  // cycler
    size_t pos = 0;
    Value sep;                 // joiner
    bool used = false;
};

struct UndefObj {
    std::string message;
    bool security = false;  // sandbox refusal: SecurityError when used
};

// ---- Python semantics --------------------------------------------------------

bool Truthy(const Value& v);
bool IsHashable(const Value& v);
// ==, exact across int/float/bool; containers element-wise.
bool PyEqual(const Value& a, const Value& b);
enum class CmpOp : uint8_t { Lt, Le, Gt, Ge };
// <, <=, >, >=; fails with Python's TypeError message for unorderable types.
bool PyCompare(const Value& a, const Value& b, CmpOp op);
// a < b for sorting.
inline bool PyLess(const Value& a, const Value& b) { return PyCompare(a, b, CmpOp::Lt); }

// type(v).__name__ ("str", "dict", "NoneType", ...).
std::string TypeName(const Value& v);
// jinja2's object_type_repr: "None" or "dict object".
std::string ObjectTypeRepr(const Value& v);

// str(v) appended: a str keeps its content ranges; anything printed as a repr
// is content as a whole when any string in it is.
void AppendStr(TextBuilder& out, const Value& v);
Text ToText(const Value& v);
// repr(v).
void AppendRepr(TextBuilder& out, const Value& v);

// len(v); fails as Python's TypeError.
size_t PyLen(const Value& v);
// The items iterating v gives (str: characters; dict: keys; iterator:
// its remaining items, which it then no longer has).
std::vector<Value> PyIterate(const Value& v);

// Fails as jinja2's UndefinedError does, with the Undefined's hint.
[[noreturn]] void FailUndefined(const Value& v);

}  // namespace prepack::jinja
