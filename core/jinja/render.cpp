#include "core/jinja/render.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <utility>
#include <vector>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/json.h"
#include "core/jinja/ops.h"
#include "core/jinja/stack_guard.h"

namespace prepack::jinja {

// The variables of one frame. Names point into the AST or the context,
// which both outlive the render.
struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string_view, Value>> vars;

    const Value* Find(std::string_view name) const {
        for (const auto& [k, v] : vars) {
            if (k == name) return &v;
        }
        return nullptr;
    }
    void Set(std::string_view name, Value v) {
        for (auto& [k, old] : vars) {
            if (k == name) {
                old = std::move(v);
                return;
            }
        }
        vars.emplace_back(name, std::move(v));
    }
};

namespace {

using ScopePtr = std::shared_ptr<Scope>;

enum class Flow : uint8_t { Normal, Break, Continue };

// A frame's scope, with its locals (ast.h's FrameLocals) undefined until assigned.
ScopePtr Child(const ScopePtr& parent, const FrameLocals* locals = nullptr) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    if (locals != nullptr) {
        for (const std::string& n : *locals) s->vars.emplace_back(n, Value::Undefined(Cat("'", n, "' is undefined")));
    }
    return s;
}

class Renderer {
public:
    Renderer(std::string_view source, const RenderOptions& options) : source_(source), options_(options) {
        env_.now = options.now != 0 ? options.now : std::time(nullptr);
    }

    // Values can reference one another in cycles only through the mutable
    // objects (namespaces) and the frames macros close over; emptying those
    // at the end frees everything, also after an error.
    ~Renderer() {
        for (const Value& ns : namespaces_) ns.ns().attrs.clear();
        for (const Value& o : objects_) {
            o.object().items.clear();
            o.object().sep = Value();
        }
        for (const ScopePtr& s : macro_scopes_) s->vars.clear();
        if (root_) root_->vars.clear();
    }

    Rendered Run(const Body& body, const FrameLocals& locals, const nlohmann::ordered_json& context) {
        root_ = std::make_shared<Scope>();
        if (!context.is_null()) {
            if (!context.is_object()) Fail("the render context must be a JSON object");
            for (auto it = context.begin(); it != context.end(); ++it) {
                const bool trusted = std::find(options_.trusted_keys.begin(), options_.trusted_keys.end(), it.key()) !=
                                     options_.trusted_keys.end();
                root_->Set(it.key(), FromJson(it.value(), !trusted, options_.limits.max_depth));
            }
        }
        TextBuilder out;
        out_ = &out;
        ExecBody(body, Child(root_, &locals));
        Text t = out.Finish();
        return Rendered{std::move(t.bytes), std::move(t.content)};
    }

private:
    // ---- names ----

    Value Lookup(const ScopePtr& scope, std::string_view name) {
        for (const Scope* s = scope.get(); s != nullptr; s = s->parent.get()) {
            if (const Value* v = s->Find(name)) return *v;
        }
        Value g = LookupGlobal(name);
        if (!g.is_undefined()) return g;
        return Value::Undefined(Cat("'", name, "' is undefined"));
    }

    void Assign(const Target& t, const Value& v, const ScopePtr& scope) {
        switch (t.kind) {
            case Target::Kind::Name: scope->Set(t.name, v); return;
            case Target::Kind::NsAttr: {
                Value ns = Lookup(scope, t.name);
                if (ns.kind() != Kind::Namespace) {
                    FailAt(t.offset, "cannot assign attribute on non-namespace object");
                }
                ns.ns().Set(Value::Str(t.attr), v);
                return;
            }
            case Target::Kind::Tuple: {
                std::vector<Value> items;
                try {
                    items = PyIterate(v);
                } catch (Error& e) {
                    if (e.offset == kNoOffset) e.offset = t.offset;
                    throw;
                }
                if (items.size() < t.items.size()) {
                    FailAt(t.offset, Cat("not enough values to unpack (expected ", t.items.size(), ", got ",
                                                  items.size(), ")"));
                }
                if (items.size() > t.items.size()) {
                    FailAt(t.offset, Cat("too many values to unpack (expected ", t.items.size(), ")"));
                }
                for (size_t i = 0; i < items.size(); ++i) Assign(t.items[i], items[i], scope);
                return;
            }
        }
    }

    // ---- statements ----

    Flow ExecBody(const Body& body, const ScopePtr& scope) {
        for (const StmtPtr& s : body) {
            const Flow f = Exec(*s, scope);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow Exec(const Stmt& s, const ScopePtr& scope) {
        try {
            return ExecImpl(s, scope);
        } catch (Error& e) {
            if (e.offset == kNoOffset) e.offset = s.offset;
            throw;
        }
    }

    // Renders `body` into a string of its own (macro, set block, filter block).
    class Capture {
    public:
        explicit Capture(Renderer& r) : r_(r), saved_(r.out_) { r_.out_ = &buf_; }
        ~Capture() { r_.out_ = saved_; }
        Capture(const Capture&) = delete;
        Capture& operator=(const Capture&) = delete;
        Text Finish() { return buf_.Finish(); }

    private:
        Renderer& r_;
        TextBuilder* saved_;
        TextBuilder buf_;
    };

    Flow ExecImpl(const Stmt& s, const ScopePtr& scope) {
        if (stack_.Exceeded()) Exhausted(Cat("template nested too deep for the stack (max_depth ", options_.limits.max_depth, ")"));
        switch (s.kind) {
            case StmtKind::Data: out_->Append(static_cast<const DataStmt&>(s).text.str()); return Flow::Normal;
            case StmtKind::Print: AppendStr(*out_, Eval(*static_cast<const PrintStmt&>(s).expr, scope)); return Flow::Normal;
            case StmtKind::If: {
                const auto& i = static_cast<const IfStmt&>(s);
                for (const auto& [test, body] : i.branches) {
                    if (Truthy(Eval(*test, scope))) return ExecBody(body, scope);
                }
                return ExecBody(i.else_body, scope);
            }
            case StmtKind::For: return ExecFor(static_cast<const ForStmt&>(s), scope);
            case StmtKind::Set: {
                const auto& st = static_cast<const SetStmt&>(s);
                Assign(st.target, Eval(*st.value, scope), scope);
                return Flow::Normal;
            }
            case StmtKind::SetBlock: {
                const auto& st = static_cast<const SetBlockStmt&>(s);
                Text text;
                {
                    Capture cap(*this);
                    const Flow f = ExecBody(st.body, Child(scope, &st.locals));
                    if (f != Flow::Normal) return f;
                    text = cap.Finish();
                }
                Value v = Value::Str(std::move(text));
                if (st.filter) v = EvalFilterChain(*st.filter, scope, v);
                Assign(st.target, v, scope);
                return Flow::Normal;
            }
            case StmtKind::Macro: {
                const auto& m = static_cast<const MacroStmt&>(s);
                auto f = std::make_shared<FuncObj>();
                f->kind = FuncKind::Macro;
                f->name = m.name;
                f->macro = &m;
                f->scope = scope;
                macro_scopes_.push_back(scope);
                scope->Set(m.name, Value::Func(std::move(f)));
                return Flow::Normal;
            }
            case StmtKind::FilterBlock: {
                const auto& fb = static_cast<const FilterBlockStmt&>(s);
                Text text;
                {
                    Capture cap(*this);
                    const Flow f = ExecBody(fb.body, Child(scope, &fb.locals));
                    if (f != Flow::Normal) return f;
                    text = cap.Finish();
                }
                AppendStr(*out_, EvalFilterChain(*fb.filter, scope, Value::Str(std::move(text))));
                return Flow::Normal;
            }
            case StmtKind::With: {
                const auto& w = static_cast<const WithStmt&>(s);
                std::vector<Value> values;
                for (const auto& v : w.values) values.push_back(Eval(*v, scope));
                ScopePtr inner = Child(scope, &w.locals);
                for (size_t i = 0; i < values.size(); ++i) Assign(w.targets[i], values[i], inner);
                return ExecBody(w.body, inner);
            }
            case StmtKind::Scope: {
                const auto& sc = static_cast<const ScopeStmt&>(s);
                return ExecBody(sc.body, Child(scope, &sc.locals));
            }
            case StmtKind::CallBlock: {
                const auto& cb = static_cast<const CallBlockStmt&>(s);
                auto caller = std::make_shared<FuncObj>();
                caller->kind = FuncKind::Macro;
                caller->name = "caller";
                caller->anonymous = true;
                caller->macro = cb.caller.get();
                caller->scope = scope;
                macro_scopes_.push_back(scope);
                const auto& call = static_cast<const CallExpr&>(*cb.call);
                Value result;
                try {
                    Value callee = Eval(*call.callee, scope);
                    Args args = EvalArgs(call.args, scope);
                    args.kw.emplace_back("caller", Value::Func(std::move(caller)));
                    result = CallValue(callee, std::move(args));
                } catch (Error& e) {
                    if (e.offset == kNoOffset) e.offset = call.offset;
                    throw;
                }
                AppendStr(*out_, result);
                return Flow::Normal;
            }
            case StmtKind::Break: return Flow::Break;
            case StmtKind::Continue: return Flow::Continue;
        }
        return Flow::Normal;
    }

    Flow ExecFor(const ForStmt& f, const ScopePtr& scope) { return RunFor(f, scope, Eval(*f.iter, scope), 1); }

    // The loop over `iterable` (also a recursive loop's `loop(items)`).
    Flow RunFor(const ForStmt& f, const ScopePtr& scope, const Value& iterable, int depth) {
        std::vector<Value> items = PyIterate(iterable);
        if (f.filter) {
            std::vector<Value> kept;
            for (Value& item : items) {
                CurrentBudget()->Iteration();
                ScopePtr s = Child(scope);
                Assign(f.target, item, s);
                if (Truthy(Eval(*f.filter, s))) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        // jinja2 runs `else` unless some iteration reached the end of the
        // body (so also when each one ended in break or continue).
        bool completed = false;
        auto shared = std::make_shared<const std::vector<Value>>(std::move(items));
        auto loop = std::make_shared<LoopObj>();
        loop->items = shared;
        loop->depth = depth;
        if (f.recursive) {
            loop->recurse = &f;
            loop->scope = scope;
            macro_scopes_.push_back(scope);  // the loop object refers to its frame
        }
        const Value loop_value = Value::Loop(loop);
        for (size_t i = 0; i < shared->size(); ++i) {
            CurrentBudget()->Iteration();
            loop->index0 = i;
            ScopePtr s = Child(scope, &f.body_locals);
            s->Set("loop", loop_value);
            Assign(f.target, (*shared)[i], s);
            const Flow flow = ExecBody(f.body, s);
            if (flow == Flow::Break) break;
            if (flow == Flow::Normal) completed = true;
        }
        if (!completed && !f.else_body.empty()) return ExecBody(f.else_body, Child(scope, &f.else_locals));
        return Flow::Normal;
    }

    // ---- expressions ----

    Value Eval(const Expr& e, const ScopePtr& scope) {
        try {
            return EvalImpl(e, scope);
        } catch (Error& err) {
            if (err.offset == kNoOffset) err.offset = e.offset;
            throw;
        }
    }

    Value EvalImpl(const Expr& e, const ScopePtr& scope) {
        if (stack_.Exceeded()) Exhausted(Cat("template nested too deep for the stack (max_depth ", options_.limits.max_depth, ")"));
        switch (e.kind) {
            case ExprKind::Const: return static_cast<const ConstExpr&>(e).value;
            case ExprKind::Name: return Lookup(scope, static_cast<const NameExpr&>(e).name);
            case ExprKind::GetAttr: {
                const auto& g = static_cast<const GetAttrExpr&>(e);
                return GetAttr(Eval(*g.obj, scope), g.name);
            }
            case ExprKind::GetItem: {
                const auto& g = static_cast<const GetItemExpr&>(e);
                Value obj = Eval(*g.obj, scope);
                if (g.key->kind == ExprKind::Slice) {
                    const auto& sl = static_cast<const SliceExpr&>(*g.key);
                    auto part = [&](const ExprPtr& p) { return p ? Eval(*p, scope) : Value::None(); };
                    Value start = part(sl.start), stop = part(sl.stop), step = part(sl.step);
                    return SliceOf(obj, start, stop, step);
                }
                return GetItem(obj, Eval(*g.key, scope));
            }
            case ExprKind::Slice: Fail("slice objects are not supported here");
            case ExprKind::Unary: {
                const auto& u = static_cast<const UnaryExpr&>(e);
                return UnaryOp(u.op, Eval(*u.operand, scope));
            }
            case ExprKind::Binary: {
                const auto& b = static_cast<const BinaryExpr&>(e);
                Value left = Eval(*b.left, scope);
                Value right = Eval(*b.right, scope);
                return BinaryOp(b.op, left, right);
            }
            case ExprKind::Logic: {
                const auto& l = static_cast<const LogicExpr&>(e);
                Value left = Eval(*l.left, scope);
                if (Truthy(left) != l.is_and) return left;
                return Eval(*l.right, scope);
            }
            case ExprKind::Compare: return EvalCompare(static_cast<const CompareExpr&>(e), scope);
            case ExprKind::Concat: {
                TextBuilder b;
                for (const auto& item : static_cast<const ConcatExpr&>(e).items) AppendStr(b, Eval(*item, scope));
                return Value::Str(b.Finish());
            }
            case ExprKind::Cond: {
                const auto& c = static_cast<const CondExpr&>(e);
                if (Truthy(Eval(*c.test, scope))) return Eval(*c.then, scope);
                if (c.otherwise) return Eval(*c.otherwise, scope);
                return Value::Undefined(Cat("the inline if-expression on line ", LineOf(source_, c.offset),
                                                     " evaluated to false and no else section was defined."));
            }
            case ExprKind::List: {
                const auto& l = static_cast<const ListExpr&>(e);
                std::vector<Value> items;
                items.reserve(l.items.size());
                for (const auto& item : l.items) items.push_back(Eval(*item, scope));
                return Value::List(std::move(items), l.tuple ? ListKind::Tuple : ListKind::List);
            }
            case ExprKind::Dict: {
                std::vector<std::pair<Value, Value>> items;
                for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
                    Value key = Eval(*k, scope);
                    Value val = Eval(*v, scope);
                    if (!IsHashable(key)) FailAt(k->offset, Cat("unhashable type: '", TypeName(key), "'"));
                    bool replaced = false;
                    for (auto& [ek, ev] : items) {
                        if (PyEqual(ek, key)) {
                            ev = val;
                            replaced = true;
                            break;
                        }
                    }
                    if (!replaced) items.emplace_back(std::move(key), std::move(val));
                }
                return Value::Dict(std::move(items));
            }
            case ExprKind::Call: return EvalCall(static_cast<const CallExpr&>(e), scope);
            case ExprKind::Filter: {
                const auto& f = static_cast<const FilterExpr&>(e);
                return EvalFilterChain(f, scope, Value());
            }
            case ExprKind::Test: {
                const auto& t = static_cast<const TestExpr&>(e);
                Value operand = Eval(*t.operand, scope);
                Args args = EvalArgs(t.args, scope);
                if (t.def == nullptr) Fail(Cat("No test named '", t.name, "' found."));
                return Value::Bool(ApplyTest(*t.def, operand, args));
            }
        }
        Fail("unknown expression");
    }

    // A filter (chain); the innermost filter with no operand takes `input`
    // (a filter block's or set block's body).
    Value EvalFilterChain(const Expr& e, const ScopePtr& scope, const Value& input) {
        if (e.kind != ExprKind::Filter) return Eval(e, scope);
        const auto& f = static_cast<const FilterExpr&>(e);
        try {
            Value operand = f.operand ? EvalFilterChain(*f.operand, scope, input) : input;
            Args args = EvalArgs(f.args, scope);
            if (f.def == nullptr) Fail(Cat("No filter named '", f.name, "' found."));
            return ApplyFilter(*f.def, operand, args);
        } catch (Error& err) {
            if (err.offset == kNoOffset) err.offset = f.offset;
            throw;
        }
    }

    Value EvalCompare(const CompareExpr& c, const ScopePtr& scope) {
        Value left = Eval(*c.first, scope);
        for (const auto& o : c.rest) {
            Value right = Eval(*o.expr, scope);
            bool ok;
            try {
                switch (o.op) {
                    case CmpKind::Eq: ok = PyEqual(left, right); break;
                    case CmpKind::Ne: ok = !PyEqual(left, right); break;
                    case CmpKind::Lt: ok = PyCompare(left, right, CmpOp::Lt); break;
                    case CmpKind::Le: ok = PyCompare(left, right, CmpOp::Le); break;
                    case CmpKind::Gt: ok = PyCompare(left, right, CmpOp::Gt); break;
                    case CmpKind::Ge: ok = PyCompare(left, right, CmpOp::Ge); break;
                    case CmpKind::In: ok = Contains(right, left); break;
                    case CmpKind::NotIn: ok = !Contains(right, left); break;
                    default: ok = false;
                }
            } catch (Error& err) {
                if (err.offset == kNoOffset) err.offset = o.offset;
                throw;
            }
            if (!ok) return Value::Bool(false);
            left = std::move(right);
        }
        return Value::Bool(true);
    }

    Args EvalArgs(const CallArgs& a, const ScopePtr& scope) {
        Args args;
        args.pos.reserve(a.pos.size());
        for (const auto& p : a.pos) args.pos.push_back(Eval(*p, scope));
        for (const auto& [k, v] : a.kw) args.kw.emplace_back(k, Eval(*v, scope));
        if (a.star) {
            for (Value& v : PyIterate(Eval(*a.star, scope))) args.pos.push_back(std::move(v));
        }
        if (a.starstar) {
            Value d = Eval(*a.starstar, scope);
            if (d.kind() != Kind::Dict) Fail(Cat("argument after ** must be a mapping, not ", TypeName(d)));
            for (const auto& [k, v] : d.dict().items) {
                if (!k.is_str()) Fail("keywords must be strings");
                for (const auto& kv : args.kw) {
                    if (kv.first == k.str().bytes) Fail(Cat("got multiple values for keyword argument '", kv.first, "'"));
                }
                args.kw.emplace_back(k.str().bytes, v);
            }
        }
        return args;
    }

    Value EvalCall(const CallExpr& c, const ScopePtr& scope) {
        // obj.method(...) without building a bound method first.
        if (c.callee->kind == ExprKind::GetAttr) {
            const auto& g = static_cast<const GetAttrExpr&>(*c.callee);
            Value obj = Eval(*g.obj, scope);
            const Kind k = obj.kind();
            if ((k == Kind::Str || k == Kind::Dict || k == Kind::List) &&
                LookupMethod(obj, g.name) == MethodStatus::Supported) {
                Args args = EvalArgs(c.args, scope);
                return CallMethod(obj, g.name, args);
            }
            Value callee;
            try {
                callee = GetAttr(obj, g.name);
            } catch (Error& err) {
                if (err.offset == kNoOffset) err.offset = g.offset;
                throw;
            }
            return CallValue(callee, EvalArgs(c.args, scope));
        }
        Value callee = Eval(*c.callee, scope);
        return CallValue(callee, EvalArgs(c.args, scope));
    }

    Value CallValue(const Value& callee, Args args) {
        if (callee.is_undefined()) FailUndefined(callee);
        if (callee.kind() == Kind::Loop) return CallLoop(callee.loop(), args);
        if (callee.kind() == Kind::Object && callee.object().type == ObjectObj::Type::Joiner) {
            NoArgs("Joiner", args);
            ObjectObj& j = callee.object();
            if (!j.used) {
                j.used = true;
                return Value::Str("");
            }
            return j.sep;
        }
        if (callee.kind() != Kind::Func) Fail(Cat("'", TypeName(callee), "' object is not callable"));
        const FuncObj& f = callee.func();
        switch (f.kind) {
            case FuncKind::Macro: return CallMacro(f, std::move(args));
            case FuncKind::Global: {
                Value v = CallGlobal(f, args, env_);
                if (v.kind() == Kind::Namespace) namespaces_.push_back(v);
                if (v.kind() == Kind::Object) objects_.push_back(v);
                return v;
            }
            case FuncKind::Method: return CallMethod(f.self, f.name, args);
            case FuncKind::LoopMethod: return CallLoopMethod(f, args);
        }
        Fail("unknown function");
    }

    class MacroDepth {
    public:
        explicit MacroDepth(Renderer& r) : r_(r) {
            if (++r_.macro_depth_ > r_.options_.limits.max_depth) {
                Exhausted(Cat("macro calls nested deeper than max_depth (", r_.options_.limits.max_depth, ")"));
            }
        }
        ~MacroDepth() { --r_.macro_depth_; }
        MacroDepth(const MacroDepth&) = delete;
        MacroDepth& operator=(const MacroDepth&) = delete;

    private:
        Renderer& r_;
    };

    // loop(items) in a recursive loop: the loop's body over items, one level deeper.
    Value CallLoop(const LoopObj& l, const Args& args) {
        if (l.recurse == nullptr) Fail("The loop must have the 'recursive' marker to be called recursively.");
        if (!args.kw.empty() || args.pos.size() != 1) Fail("loop() takes exactly one argument");
        CurrentBudget()->Iteration();
        MacroDepth depth(*this);
        Capture cap(*this);
        RunFor(*l.recurse, l.scope, args.pos[0], l.depth + 1);
        return Value::Str(cap.Finish());
    }

    Value CallMacro(const FuncObj& f, Args args) {
        CurrentBudget()->Iteration();
        MacroDepth depth(*this);
        const MacroStmt& m = *f.macro;
        ScopePtr s = Child(f.scope, &m.locals);
        const size_t n = m.params.size();
        std::vector<const Value*> bound(n, nullptr);
        for (size_t i = 0; i < std::min(n, args.pos.size()); ++i) bound[i] = &args.pos[i];
        std::vector<bool> used(args.kw.size(), false);
        for (size_t i = args.pos.size(); i < n; ++i) {
            for (size_t k = 0; k < args.kw.size(); ++k) {
                if (!used[k] && args.kw[k].first == m.params[i]) {
                    bound[i] = &args.kw[k].second;
                    used[k] = true;
                    break;
                }
            }
        }
        // `caller`: the call block's body, when the macro uses it.
        Value caller = Value::Undefined("No caller defined");
        const bool caller_param = std::find(m.params.begin(), m.params.end(), "caller") != m.params.end();
        if (m.uses_caller && !caller_param) {
            for (size_t k = 0; k < args.kw.size(); ++k) {
                if (!used[k] && args.kw[k].first == "caller") {
                    caller = args.kw[k].second;
                    used[k] = true;
                    break;
                }
            }
        }
        std::vector<std::pair<Value, Value>> extra_kw;
        for (size_t k = 0; k < args.kw.size(); ++k) {
            if (used[k]) continue;
            if (!m.uses_kwargs && args.kw[k].first == "caller") {
                Fail(Cat("macro '", m.name,
                         "' was invoked with two values for the special caller argument. This is most likely a bug."));
            }
            if (!m.uses_kwargs) {
                Fail(Cat("macro '", m.name, "' takes no keyword argument '", args.kw[k].first, "'"));
            }
            extra_kw.emplace_back(Value::Str(args.kw[k].first), args.kw[k].second);
        }
        if (args.pos.size() > n && !m.uses_varargs) {
            Fail(Cat("macro '", m.name, "' takes not more than ", n, " argument(s)"));
        }
        for (size_t i = 0; i < n; ++i) {
            if (bound[i] != nullptr) s->Set(m.params[i], *bound[i]);
        }
        const size_t first_default = n - m.defaults.size();
        for (size_t i = 0; i < n; ++i) {
            if (bound[i] != nullptr) continue;
            if (i >= first_default) {
                s->Set(m.params[i], Eval(*m.defaults[i - first_default], s));
            } else {
                s->Set(m.params[i], Value::Undefined(Cat("parameter '", m.params[i], "' was not provided")));
            }
        }
        if (m.uses_varargs) {
            std::vector<Value> rest;
            for (size_t i = n; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
            s->Set("varargs", Value::Tuple(std::move(rest)));
        }
        if (m.uses_kwargs) s->Set("kwargs", Value::Dict(std::move(extra_kw)));
        if (m.uses_caller && !caller_param) s->Set("caller", caller);
        Capture cap(*this);
        ExecBody(m.body, s);
        return Value::Str(cap.Finish());
    }

    std::string_view source_;
    const RenderOptions& options_;
    CallEnv env_;
    StackGuard stack_;
    TextBuilder* out_ = nullptr;
    ScopePtr root_;
    int macro_depth_ = 0;
    std::vector<Value> namespaces_;
    std::vector<Value> objects_;  // cyclers and joiners
    std::vector<ScopePtr> macro_scopes_;
};

}  // namespace

size_t LineOf(std::string_view source, size_t offset) {
    offset = std::min(offset, source.size());
    return static_cast<size_t>(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(offset), '\n')) + 1;
}

Rendered RenderBody(const Body& body, const FrameLocals& locals, std::string_view source,
                    const nlohmann::ordered_json& context, const RenderOptions& options) {
    Renderer r(source, options);
    return r.Run(body, locals, context);
}

}  // namespace prepack::jinja
