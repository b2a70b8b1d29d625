// The parsed template: expression and statement trees mirroring jinja2's
// nodes. Every node keeps the byte offset of its token for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/jinja/value.h"

namespace prepack::jinja {

struct FilterDef;  // builtins.h
struct TestDef;

// ---- Expressions -------------------------------------------------------------

enum class ExprKind : uint8_t {
    Const, Name, GetAttr, GetItem, Slice, Unary, Binary, Logic, Compare, Concat, Cond, List, Dict, Call, Filter,
    Test,
};

struct Expr {
    Expr(ExprKind k, size_t off) : kind(k), offset(off) {}
    virtual ~Expr() = default;
    ExprKind kind;
    int height = 1;  // of the tree below: evaluating it recurses this deep
    size_t offset;
};
using ExprPtr = std::unique_ptr<Expr>;

struct ConstExpr : Expr {
    ConstExpr(size_t off, Value v) : Expr(ExprKind::Const, off), value(std::move(v)) {}
    Value value;
};

struct NameExpr : Expr {
    NameExpr(size_t off, std::string n) : Expr(ExprKind::Name, off), name(std::move(n)) {}
    std::string name;
};

struct GetAttrExpr : Expr {  // obj.name
    GetAttrExpr(size_t off, ExprPtr o, std::string n) : Expr(ExprKind::GetAttr, off), obj(std::move(o)), name(std::move(n)) {}
    ExprPtr obj;
    std::string name;
};

struct GetItemExpr : Expr {  // obj[key]; key may be a SliceExpr
    GetItemExpr(size_t off, ExprPtr o, ExprPtr k) : Expr(ExprKind::GetItem, off), obj(std::move(o)), key(std::move(k)) {}
    ExprPtr obj, key;
};

struct SliceExpr : Expr {  // [start:stop:step], each optional
    explicit SliceExpr(size_t off) : Expr(ExprKind::Slice, off) {}
    ExprPtr start, stop, step;
};

enum class UnOp : uint8_t { Neg, Pos, Not };
struct UnaryExpr : Expr {
    UnaryExpr(size_t off, UnOp o, ExprPtr e) : Expr(ExprKind::Unary, off), op(o), operand(std::move(e)) {}
    UnOp op;
    ExprPtr operand;
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
struct BinaryExpr : Expr {
    BinaryExpr(size_t off, BinOp o, ExprPtr l, ExprPtr r)
        : Expr(ExprKind::Binary, off), op(o), left(std::move(l)), right(std::move(r)) {}
    BinOp op;
    ExprPtr left, right;
};

struct LogicExpr : Expr {  // and / or: Python's, returning an operand
    LogicExpr(size_t off, bool a, ExprPtr l, ExprPtr r)
        : Expr(ExprKind::Logic, off), is_and(a), left(std::move(l)), right(std::move(r)) {}
    bool is_and;
    ExprPtr left, right;
};

enum class CmpKind : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
struct CompareExpr : Expr {  // a < b <= c: chained as Python
    struct Operand {
        CmpKind op;
        size_t offset;
        ExprPtr expr;
    };
    CompareExpr(size_t off, ExprPtr f) : Expr(ExprKind::Compare, off), first(std::move(f)) {}
    ExprPtr first;
    std::vector<Operand> rest;
};

struct ConcatExpr : Expr {  // a ~ b ~ c
    explicit ConcatExpr(size_t off) : Expr(ExprKind::Concat, off) {}
    std::vector<ExprPtr> items;
};

struct CondExpr : Expr {  // then if test else otherwise (otherwise optional)
    explicit CondExpr(size_t off) : Expr(ExprKind::Cond, off) {}
    ExprPtr test, then, otherwise;
};

struct ListExpr : Expr {  // [a, b] or (a, b)
    ListExpr(size_t off, bool t) : Expr(ExprKind::List, off), tuple(t) {}
    bool tuple;
    std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
    explicit DictExpr(size_t off) : Expr(ExprKind::Dict, off) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct CallArgs {
    std::vector<ExprPtr> pos;
    std::vector<std::pair<std::string, ExprPtr>> kw;
    ExprPtr star, starstar;  // *args, **kwargs
};

struct CallExpr : Expr {
    CallExpr(size_t off, ExprPtr c) : Expr(ExprKind::Call, off), callee(std::move(c)) {}
    ExprPtr callee;
    CallArgs args;
};

struct FilterExpr : Expr {  // operand | name(args); operand null inside a filter block or set block
    FilterExpr(size_t off, ExprPtr o, std::string n) : Expr(ExprKind::Filter, off), operand(std::move(o)), name(std::move(n)) {}
    ExprPtr operand;
    std::string name;
    const FilterDef* def = nullptr;  // null: unknown, fails when evaluated
    CallArgs args;
};

struct TestExpr : Expr {  // operand is name(args)
    TestExpr(size_t off, ExprPtr o, std::string n) : Expr(ExprKind::Test, off), operand(std::move(o)), name(std::move(n)) {}
    ExprPtr operand;
    std::string name;
    const TestDef* def = nullptr;
    CallArgs args;
};

// ---- Statements --------------------------------------------------------------

enum class StmtKind : uint8_t {
    Data, Print, If, For, Set, SetBlock, Macro, FilterBlock, With, Scope, Break, Continue, CallBlock,
};

struct Stmt {
    Stmt(StmtKind k, size_t off) : kind(k), offset(off) {}
    virtual ~Stmt() = default;
    StmtKind kind;
    size_t offset;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Names a frame assigns before anything in it reads them: jinja2 makes them
// the frame's own variables from its start, so until the assignment runs
// they are undefined there and in the frames nested in it (an outer or
// context value of that name is hidden). See frames.cpp.
using FrameLocals = std::vector<std::string>;

// An assignment target: a name, a (nested) tuple of targets, or ns.attr.
struct Target {
    enum class Kind : uint8_t { Name, Tuple, NsAttr };
    Kind kind = Kind::Name;
    size_t offset = 0;
    std::string name;
    std::string attr;
    std::vector<Target> items;
};

struct DataStmt : Stmt {  // template text
    DataStmt(size_t off, Value t) : Stmt(StmtKind::Data, off), text(std::move(t)) {}
    Value text;
};

struct PrintStmt : Stmt {  // {{ expr }}
    PrintStmt(size_t off, ExprPtr e) : Stmt(StmtKind::Print, off), expr(std::move(e)) {}
    ExprPtr expr;
};

struct IfStmt : Stmt {
    explicit IfStmt(size_t off) : Stmt(StmtKind::If, off) {}
    std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
    Body else_body;
};

struct ForStmt : Stmt {
    explicit ForStmt(size_t off) : Stmt(StmtKind::For, off) {}
    Target target;
    ExprPtr iter;
    ExprPtr filter;  // for x in y if filter
    Body body, else_body;
    bool recursive = false;  // `loop(items)` renders the loop again over items
    FrameLocals body_locals, else_locals;
};

struct SetStmt : Stmt {
    explicit SetStmt(size_t off) : Stmt(StmtKind::Set, off) {}
    Target target;
    ExprPtr value;
};

struct SetBlockStmt : Stmt {  // {% set x | filter %}...{% endset %}
    explicit SetBlockStmt(size_t off) : Stmt(StmtKind::SetBlock, off) {}
    Target target;
    ExprPtr filter;  // may be null
    Body body;
    FrameLocals locals;
};

struct MacroStmt : Stmt {
    explicit MacroStmt(size_t off) : Stmt(StmtKind::Macro, off) {}
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // for the last defaults.size() params
    Body body;
    bool uses_varargs = false;  // the body names `varargs` / `kwargs` / `caller`
    bool uses_kwargs = false;
    bool uses_caller = false;
    FrameLocals locals;
};

// {% call(params) macro(args) %}body{% endcall %}: `caller` is a macro made of
// the body, passed to the call as the keyword argument `caller`.
struct CallBlockStmt : Stmt {
    explicit CallBlockStmt(size_t off) : Stmt(StmtKind::CallBlock, off) {}
    std::unique_ptr<MacroStmt> caller;
    ExprPtr call;
};

struct FilterBlockStmt : Stmt {  // {% filter upper %}...{% endfilter %}
    explicit FilterBlockStmt(size_t off) : Stmt(StmtKind::FilterBlock, off) {}
    ExprPtr filter;
    Body body;
    FrameLocals locals;
};

struct WithStmt : Stmt {
    explicit WithStmt(size_t off) : Stmt(StmtKind::With, off) {}
    std::vector<Target> targets;
    std::vector<ExprPtr> values;
    Body body;
    FrameLocals locals;
};

// A body rendered in a frame of its own ({% generation %}).
struct ScopeStmt : Stmt {
    explicit ScopeStmt(size_t off) : Stmt(StmtKind::Scope, off) {}
    Body body;
    FrameLocals locals;
};

struct LoopControlStmt : Stmt {  // break / continue
    LoopControlStmt(size_t off, bool brk) : Stmt(brk ? StmtKind::Break : StmtKind::Continue, off) {}
};

}  // namespace prepack::jinja
