#include "core/jinja/ops.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"

namespace prepack::jinja {
namespace {

const char* OpSymbol(BinOp op) {
    switch (op) {
        case BinOp::Add: return "+";
        case BinOp::Sub: return "-";
        case BinOp::Mul: return "*";
        case BinOp::Div: return "/";
        case BinOp::FloorDiv: return "//";
        case BinOp::Mod: return "%";
        case BinOp::Pow: return "** or pow()";
    }
    return "?";
}

[[noreturn]] void Unsupported(BinOp op, const Value& a, const Value& b) {
    Fail(Cat("unsupported operand type(s) for ", OpSymbol(op), ": '", TypeName(a), "' and '", TypeName(b),
                      "'"));
}

bool IsSeq(const Value& v, ListKind k) { return v.kind() == Kind::List && v.list().kind == k; }

// seq * n for a str, list or tuple.
Value Repeat(const Value& seq, int64_t n) {
    if (n < 0) n = 0;
    const auto count = static_cast<uint64_t>(n);
    if (seq.kind() == Kind::Str) {
        const Text& t = seq.str();
        if (t.size() != 0 && count > 0) {
            if (count > SIZE_MAX / t.size()) GrowBy(SIZE_MAX, 1);
            GrowBy(0, t.size() * count);
        }
        TextBuilder b;
        for (uint64_t i = 0; i < count && t.size() != 0; ++i) b.Append(t);
        Text out = b.Finish();
        out.markup = t.markup;
        return Value::Str(std::move(out));
    }
    const ListObj& l = seq.list();
    if (!l.items.empty() && count > 0) {
        if (count > SIZE_MAX / (l.items.size() * kBytesPerItem)) GrowBy(SIZE_MAX, 1);
        GrowBy(0, l.items.size() * count * kBytesPerItem);
    }
    std::vector<Value> items;
    for (uint64_t i = 0; i < count && !l.items.empty(); ++i) items.insert(items.end(), l.items.begin(), l.items.end());
    return Value::List(std::move(items), l.kind);
}

Text EscapeText(const Text& t) {
    Value e = Escape(Value::Str(t));
    return e.str();
}

Value FloatResult(double r) {
    if (std::isinf(r)) Fail("(34, 'Numerical result out of range')");
    return Value::Float(r);
}

// int + - * of any size: 64-bit when it fits, BigInt past it.
Value IntArith(BinOp op, const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) {
        int64_t r;
        bool overflow = false;
        switch (op) {
            case BinOp::Add: overflow = __builtin_add_overflow(a.i(), b.i(), &r); break;
            case BinOp::Sub: overflow = __builtin_sub_overflow(a.i(), b.i(), &r); break;
            default: overflow = __builtin_mul_overflow(a.i(), b.i(), &r); break;
        }
        if (!overflow) return Value::Int(r);
    }
    const BigInt x = a.AsBig(), y = b.AsBig();
    switch (op) {
        case BinOp::Add: return Value::Integer(BigInt::Add(x, y));
        case BinOp::Sub: return Value::Integer(BigInt::Sub(x, y));
        default: return Value::Integer(BigInt::Mul(x, y));
    }
}

// int // int and int % int (Python's floor semantics), any size.
Value IntDivMod(const Value& a, const Value& b, bool want_mod) {
    if (a.is_integral() && b.is_integral() && !(b.i() == -1 && a.i() == INT64_MIN)) {
        return Value::Int(want_mod ? FloorMod(a.i(), b.i()) : FloorDiv(a.i(), b.i()));
    }
    BigInt q, r;
    BigInt::DivMod(a.AsBig(), b.AsBig(), &q, &r);
    return Value::Integer(want_mod ? r : q);
}

Value Pow(const Value& a, const Value& b) {
    if (a.is_int() && b.is_int()) {
        const bool neg_exp = b.kind() == Kind::BigInt ? b.big().negative() : b.i() < 0;
        if (!neg_exp) {
            if (a.is_integral() && b.is_integral()) {
                // 64-bit while it fits.
                int64_t r = 1, base = a.i();
                int64_t e = b.i();
                bool overflow = false;
                while (e > 0 && !overflow) {
                    if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
                    e >>= 1;
                    if (e > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
                }
                if (!overflow) return Value::Int(r);
            }
            const BigInt base = a.AsBig();
            const bool trivial = base.is_zero() || BigInt::Compare(base, BigInt::FromInt(1)) == 0 ||
                                 BigInt::Compare(base, BigInt::FromInt(-1)) == 0;
            if (trivial) {
                // 0, 1 and -1 to any power.
                if (base.is_zero()) return Value::Int(b.is_integral() && b.i() == 0 ? 1 : 0);
                if (!base.negative()) return Value::Int(1);
                BigInt rem;
                BigInt::DivMod(b.AsBig(), BigInt::FromInt(2), nullptr, &rem);
                return Value::Int(rem.is_zero() ? 1 : -1);
            }
            // Anything else to a BigInt power is far past the 4300 digits
            // BigInt holds; BigInt::Mul fails before a large product.
            if (b.kind() == Kind::BigInt) {
                Fail("integer too large: more than 4300 digits (Python cannot print it either)");
            }
            return Value::Integer(BigInt::Pow(base, static_cast<uint64_t>(b.i())));
        }
        if (!a.is_integral() || a.i() != 0) return Value::Float(std::pow(a.f(), b.f()));
        Fail("0.0 cannot be raised to a negative power");
    }
    const double x = a.f(), y = b.f();
    if (x == 0 && y < 0) Fail("0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) {
        Fail("a negative number to a fractional power gives a complex number, which is not supported");
    }
    const double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) Fail("(34, 'Numerical result out of range')");
    return Value::Float(r);
}

}  // namespace

Value ConcatStr(const Text& a, const Text& b) {
    TextBuilder out;
    out.Append(a);
    out.Append(b);
    return Value::Str(out.Finish());
}

Value BinaryOp(BinOp op, const Value& a, const Value& b) {
    if (a.is_undefined()) FailUndefined(a);
    if (b.is_undefined()) FailUndefined(b);
    const bool nums = a.is_number() && b.is_number();
    const bool ints = a.is_int() && b.is_int();
    switch (op) {
        case BinOp::Add:
            if (ints) return IntArith(op, a, b);
            if (nums) return Value::Float(a.f() + b.f());
            if (a.is_str() && b.is_str()) {
                // markupsafe.Markup escapes the plain string added to it.
                if (a.str().markup != b.str().markup) {
                    Value r = a.str().markup ? ConcatStr(a.str(), EscapeText(b.str()))
                                             : ConcatStr(EscapeText(a.str()), b.str());
                    const_cast<Text&>(r.str()).markup = true;
                    return r;
                }
                Value r = ConcatStr(a.str(), b.str());
                const_cast<Text&>(r.str()).markup = a.str().markup;
                return r;
            }
            if ((IsSeq(a, ListKind::List) && IsSeq(b, ListKind::List)) ||
                (IsSeq(a, ListKind::Tuple) && IsSeq(b, ListKind::Tuple))) {
                std::vector<Value> items = a.list().items;
                GrowBy(items.size() * kBytesPerItem, b.list().items.size() * kBytesPerItem);
                items.insert(items.end(), b.list().items.begin(), b.list().items.end());
                return Value::List(std::move(items), a.list().kind);
            }
            if (a.is_str() || IsSeq(a, ListKind::List) || IsSeq(a, ListKind::Tuple)) {
                Fail(Cat("can only concatenate ", TypeName(a), " (not \"", TypeName(b), "\") to ",
                                  TypeName(a)));
            }
            Unsupported(op, a, b);
        case BinOp::Sub:
            if (ints) return IntArith(op, a, b);
            if (nums) return Value::Float(a.f() - b.f());
            Unsupported(op, a, b);
        case BinOp::Mul: {
            if (ints) return IntArith(op, a, b);
            if (nums) return Value::Float(a.f() * b.f());
            auto is_seq = [](const Value& v) {
                return v.is_str() || IsSeq(v, ListKind::List) || IsSeq(v, ListKind::Tuple);
            };
            if ((is_seq(a) && b.kind() == Kind::BigInt) || (is_seq(b) && a.kind() == Kind::BigInt)) {
                Fail("cannot fit 'int' into an index-sized integer");
            }
            if (is_seq(a) && b.is_integral()) return Repeat(a, b.i());
            if (is_seq(b) && a.is_integral()) return Repeat(b, a.i());
            if (is_seq(a) && !b.is_integral()) {
                Fail(Cat("can't multiply sequence by non-int of type '", TypeName(b), "'"));
            }
            if (is_seq(b) && !a.is_integral()) {
                Fail(Cat("can't multiply sequence by non-int of type '", TypeName(a), "'"));
            }
            Unsupported(op, a, b);
        }
        case BinOp::Div:
            if (nums) {
                if (ints ? (b.is_integral() && b.i() == 0) : b.f() == 0) {
                    Fail(ints ? "division by zero" : "float division by zero");
                }
                return FloatResult(a.f() / b.f());
            }
            Unsupported(op, a, b);
        case BinOp::FloorDiv:
            if (ints) {
                if (b.is_integral() && b.i() == 0) Fail("integer division or modulo by zero");
                return IntDivMod(a, b, false);
            }
            if (nums) {
                if (b.f() == 0) Fail("float floor division by zero");
                return Value::Float(FloatFloorDiv(a.f(), b.f()));
            }
            Unsupported(op, a, b);
        case BinOp::Mod:
            if (a.is_str()) return PercentFormat(a.str(), b);
            if (ints) {
                if (b.is_integral() && b.i() == 0) Fail("integer modulo by zero");
                return IntDivMod(a, b, true);
            }
            if (nums) {
                if (b.f() == 0) Fail("float modulo");
                return Value::Float(FloatMod(a.f(), b.f()));
            }
            Unsupported(op, a, b);
        case BinOp::Pow:
            if (nums) return Pow(a, b);
            Unsupported(op, a, b);
    }
    Unsupported(op, a, b);
}

Value UnaryOp(UnOp op, const Value& a) {
    if (op == UnOp::Not) return Value::Bool(!Truthy(a));
    if (a.is_undefined()) FailUndefined(a);
    if (a.is_int()) return op == UnOp::Neg ? IntArith(BinOp::Sub, Value::Int(0), a) : Value::Integer(a.AsBig());
    if (a.kind() == Kind::Float) return Value::Float(op == UnOp::Neg ? -a.f() : a.f());
    Fail(Cat("bad operand type for unary ", op == UnOp::Neg ? "-" : "+", ": '", TypeName(a), "'"));
}

bool Contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::Undefined: return false;
        case Kind::Str:
            if (!item.is_str()) {
                Fail(Cat("'in <string>' requires string as left operand, not ", TypeName(item)));
            }
            ChargeBytes(container.str().size());
            return container.str().bytes.find(item.str().bytes) != std::string::npos;
        case Kind::List:
            for (const Value& v : container.list().items) {
                if (PyEqual(v, item)) return true;
            }
            return false;
        case Kind::Dict: return container.dict().Find(item) != nullptr;
        case Kind::Iter: {
            IterObj& it = container.iter();
            while (it.pos < it.items.size()) {
                if (PyEqual(it.items[it.pos++], item)) return true;
            }
            return false;
        }
        default: Fail(Cat("argument of type '", TypeName(container), "' is not iterable"));
    }
}

namespace {

Value NoAttribute(const Value& obj, std::string_view name) {
    return Value::Undefined(Cat("'", ObjectTypeRepr(obj), "' has no attribute '", name, "'"));
}

// "list object has no element 5": jinja2's hint for a missing non-str item.
Value NoElement(const Value& obj, const Value& key) {
    TextBuilder b;
    AppendRepr(b, key);
    return Value::Undefined(Cat(ObjectTypeRepr(obj), " has no element ", b.view()));
}

Value UnsafeAttribute(const Value& obj, std::string_view name) {
    return Value::Undefined(
        Cat("access to attribute '", name, "' of '", TypeName(obj), "' object is unsafe."), true);
}

bool IsDunder(std::string_view name) {
    return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

// Python's own attribute of obj (a method, a namespace attribute, a loop
// attribute), or nullopt when it has none of that name.
std::optional<Value> PyAttribute(const Value& obj, std::string_view name) {
    if (IsDunder(name)) return UnsafeAttribute(obj, name);  // every object has dunders; the sandbox hides them
    switch (obj.kind()) {
        case Kind::Namespace:
            if (const Value* v = obj.ns().Find(name)) return *v;
            return std::nullopt;
        case Kind::Loop: {
            Value v = LoopAttr(obj, name);
            if (v.is_undefined() && v.undef() == nullptr) return std::nullopt;
            return v;
        }
        case Kind::Object: {
            Value v = ObjectAttr(obj, name);
            if (!(v.is_undefined() && v.undef() == nullptr)) return v;
            break;
        }
        default: break;
    }
    switch (LookupMethod(obj, name)) {
        case MethodStatus::None: return std::nullopt;
        case MethodStatus::Supported: return BoundMethod(obj, name);
        case MethodStatus::Unsafe: return UnsafeAttribute(obj, name);
        case MethodStatus::Unsupported:
            // A method Python has: there (true, defined) until it is called,
            // which then fails. Number attributes are values, not methods.
            if (obj.is_str() || obj.kind() == Kind::Dict || obj.kind() == Kind::List) return BoundMethod(obj, name);
            Fail(Cat(TypeName(obj), ".", name, " is not supported"));
    }
    return std::nullopt;
}

// Python index of an int key into a sequence of n items, or nullopt.
std::optional<size_t> Index(const Value& key, size_t n) {
    int64_t i = key.i();
    if (i < 0) i += static_cast<int64_t>(n);
    if (i < 0 || static_cast<uint64_t>(i) >= n) return std::nullopt;
    return static_cast<size_t>(i);
}

}  // namespace

Value GetAttr(const Value& obj, std::string_view name) {
    // Every object (an Undefined too) has dunder attributes; the sandbox hides them.
    if (IsDunder(name)) return UnsafeAttribute(obj, name);
    if (obj.is_undefined()) FailUndefined(obj);
    if (std::optional<Value> attr = PyAttribute(obj, name)) return *attr;
    if (obj.kind() == Kind::Dict) {
        if (const Value* v = obj.dict().FindStr(name)) return *v;
    }
    return NoAttribute(obj, name);
}

Value GetItem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) FailUndefined(obj);
    switch (obj.kind()) {
        case Kind::Str:
            if (key.is_integral()) {
                const Text& t = obj.str();
                if (IsAscii(t.bytes)) {
                    if (auto i = Index(key, t.size())) return Value::Str(SubText(t, *i, *i + 1));
                } else {
                    const std::vector<size_t> starts = CodePointStarts(t.bytes);
                    if (auto i = Index(key, starts.size() - 1)) {
                        return Value::Str(SubText(t, starts[*i], starts[*i + 1]));
                    }
                }
                return NoElement(obj, key);
            }
            break;
        case Kind::List: {
            const ListObj& l = obj.list();
            const bool view = l.kind == ListKind::DictKeys || l.kind == ListKind::DictValues ||
                              l.kind == ListKind::DictItems;
            if (key.is_integral() && !view) {
                if (auto i = Index(key, l.items.size())) return l.items[*i];
                return NoElement(obj, key);
            }
            break;
        }
        case Kind::Dict:
            if (IsHashable(key)) {
                if (const Value* v = obj.dict().Find(key)) return *v;
            }
            break;
        default: break;
    }
    if (key.is_str()) {
        const std::string& name = key.str().bytes;
        if (std::optional<Value> attr = PyAttribute(obj, name)) return *attr;
        return NoAttribute(obj, name);
    }
    return NoElement(obj, key);
}

namespace {

// PySlice_AdjustIndices: the indices a slice selects from n items.
std::vector<size_t> SliceIndices(size_t n, const Value& start, const Value& stop, const Value& step) {
    const auto len = static_cast<int64_t>(n);
    int64_t st = step.is_none() ? 1 : step.i();
    if (st == 0) Fail("slice step cannot be zero");
    const int64_t lower = st > 0 ? 0 : -1;
    const int64_t upper = st > 0 ? len : len - 1;
    auto adjust = [&](const Value& v, int64_t dflt) {
        if (v.is_none()) return dflt;
        int64_t i = v.i();
        if (i < 0) {
            i += len;
            if (i < lower) i = lower;
        } else if (i > upper) {
            i = upper;
        }
        return i;
    };
    const int64_t b = adjust(start, st > 0 ? lower : upper);
    const int64_t e = adjust(stop, st > 0 ? upper : lower);
    std::vector<size_t> idx;
    if (st > 0) {
        for (int64_t i = b; i < e; i += st) idx.push_back(static_cast<size_t>(i));
    } else {
        for (int64_t i = b; i > e; i += st) idx.push_back(static_cast<size_t>(i));
    }
    return idx;
}

}  // namespace

Value SliceOf(const Value& obj, const Value& start, const Value& stop, const Value& step) {
    if (obj.is_undefined()) FailUndefined(obj);
    auto bound_ok = [](const Value& v) { return v.is_none() || v.is_integral(); };
    const bool sliceable = obj.is_str() || IsSeq(obj, ListKind::List) || IsSeq(obj, ListKind::Tuple);
    if (!sliceable || !bound_ok(start) || !bound_ok(stop) || !bound_ok(step)) {
        if (obj.is_list_kind(ListKind::Range)) Fail("slicing a range is not supported");
        auto repr = [](const Value& v) {
            TextBuilder b;
            AppendRepr(b, v);
            return std::string(b.view());
        };
        return Value::Undefined(Cat(ObjectTypeRepr(obj), " has no element slice(", repr(start), ", ",
                                             repr(stop), ", ", repr(step), ")"));
    }
    if (obj.is_str()) {
        const Text& t = obj.str();
        const bool ascii = IsAscii(t.bytes);
        std::vector<size_t> starts;
        if (!ascii) starts = CodePointStarts(t.bytes);
        const size_t n = ascii ? t.size() : starts.size() - 1;
        auto byte_of = [&](size_t i) { return ascii ? i : starts[i]; };
        const bool unit = step.is_none() || step.i() == 1;
        if (unit) {
            // A contiguous substring: content ranges carried over exactly.
            const std::vector<size_t> idx = SliceIndices(n, start, stop, step);
            if (idx.empty()) return Value::Str(Text{});
            return Value::Str(SubText(t, byte_of(idx.front()), byte_of(idx.back() + 1)));
        }
        TextBuilder b;
        for (size_t i : SliceIndices(n, start, stop, step)) b.AppendRange(t, byte_of(i), byte_of(i + 1));
        Text out = b.Finish();
        out.markup = t.markup;
        return Value::Str(std::move(out));
    }
    const ListObj& l = obj.list();
    std::vector<Value> items;
    for (size_t i : SliceIndices(l.items.size(), start, stop, step)) items.push_back(l.items[i]);
    return Value::List(std::move(items), l.kind);
}

}  // namespace prepack::jinja
