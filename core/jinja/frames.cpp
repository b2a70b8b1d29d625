#include "core/jinja/frames.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace prepack::jinja {
namespace {

// How a frame's variable starts: read from outside (jinja2's resolve or
// alias), a parameter, or undefined (assigned before being read).
enum class Start : uint8_t { Resolve, Alias, Param, Undefined };

struct Symbols {
    const Symbols* parent = nullptr;
    std::map<std::string, Start> refs;
    std::set<std::string> stores;

    bool FindRef(const std::string& n) const {
        for (const Symbols* s = this; s != nullptr; s = s->parent) {
            if (s->refs.count(n) != 0) return true;
        }
        return false;
    }
    void Load(const std::string& n) {
        if (!FindRef(n)) refs[n] = Start::Resolve;
    }
    void Store(const std::string& n) {
        stores.insert(n);
        if (refs.count(n) == 0) refs[n] = parent != nullptr && parent->FindRef(n) ? Start::Alias : Start::Undefined;
    }
    void Param(const std::string& n) {
        stores.insert(n);
        refs[n] = Start::Param;
    }
    // After an if: a name assigned in only some branches starts from outside.
    void BranchUpdate(const std::vector<Symbols>& branches) {
        std::map<std::string, size_t> counts;
        for (const Symbols& b : branches) {
            for (const std::string& t : b.stores) {
                if (stores.count(t) == 0) ++counts[t];
            }
        }
        for (const Symbols& b : branches) {
            for (const auto& [n, s] : b.refs) refs[n] = s;
            stores.insert(b.stores.begin(), b.stores.end());
        }
        for (const auto& [n, count] : counts) {
            if (count == branches.size()) continue;
            refs[n] = parent != nullptr && parent->FindRef(n) ? Start::Alias : Start::Resolve;
        }
    }
    FrameLocals Undefined() const {
        FrameLocals out;
        for (const auto& [n, s] : refs) {
            if (s == Start::Undefined) out.push_back(n);
        }
        return out;
    }
};

void Loads(const Expr* e, Symbols& s);

void LoadArgs(const CallArgs& a, Symbols& s) {
    for (const auto& p : a.pos) Loads(p.get(), s);
    for (const auto& kv : a.kw) Loads(kv.second.get(), s);
    Loads(a.star.get(), s);
    Loads(a.starstar.get(), s);
}

// The names an expression reads, in evaluation order.
void Loads(const Expr* e, Symbols& s) {
    if (e == nullptr) return;
    switch (e->kind) {
        case ExprKind::Const: return;
        case ExprKind::Name: s.Load(static_cast<const NameExpr*>(e)->name); return;
        case ExprKind::GetAttr: Loads(static_cast<const GetAttrExpr*>(e)->obj.get(), s); return;
        case ExprKind::GetItem: {
            auto* g = static_cast<const GetItemExpr*>(e);
            Loads(g->obj.get(), s);
            Loads(g->key.get(), s);
            return;
        }
        case ExprKind::Slice: {
            auto* sl = static_cast<const SliceExpr*>(e);
            Loads(sl->start.get(), s);
            Loads(sl->stop.get(), s);
            Loads(sl->step.get(), s);
            return;
        }
        case ExprKind::Unary: Loads(static_cast<const UnaryExpr*>(e)->operand.get(), s); return;
        case ExprKind::Binary: {
            auto* b = static_cast<const BinaryExpr*>(e);
            Loads(b->left.get(), s);
            Loads(b->right.get(), s);
            return;
        }
        case ExprKind::Logic: {
            auto* b = static_cast<const LogicExpr*>(e);
            Loads(b->left.get(), s);
            Loads(b->right.get(), s);
            return;
        }
        case ExprKind::Compare: {
            auto* c = static_cast<const CompareExpr*>(e);
            Loads(c->first.get(), s);
            for (const auto& o : c->rest) Loads(o.expr.get(), s);
            return;
        }
        case ExprKind::Concat:
            for (const auto& i : static_cast<const ConcatExpr*>(e)->items) Loads(i.get(), s);
            return;
        case ExprKind::Cond: {
            // jinja2 visits the node's fields in order: test, expr1, expr2.
            auto* c = static_cast<const CondExpr*>(e);
            Loads(c->test.get(), s);
            Loads(c->then.get(), s);
            Loads(c->otherwise.get(), s);
            return;
        }
        case ExprKind::List:
            for (const auto& i : static_cast<const ListExpr*>(e)->items) Loads(i.get(), s);
            return;
        case ExprKind::Dict:
            for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
                Loads(k.get(), s);
                Loads(v.get(), s);
            }
            return;
        case ExprKind::Call: {
            auto* c = static_cast<const CallExpr*>(e);
            Loads(c->callee.get(), s);
            LoadArgs(c->args, s);
            return;
        }
        case ExprKind::Filter: {
            auto* f = static_cast<const FilterExpr*>(e);
            Loads(f->operand.get(), s);
            LoadArgs(f->args, s);
            return;
        }
        case ExprKind::Test: {
            auto* t = static_cast<const TestExpr*>(e);
            Loads(t->operand.get(), s);
            LoadArgs(t->args, s);
            return;
        }
    }
}

void StoreTarget(const Target& t, Symbols& s) {
    switch (t.kind) {
        case Target::Kind::Name: s.Store(t.name); return;
        case Target::Kind::NsAttr: s.Load(t.name); return;  // ns.attr = v reads ns
        case Target::Kind::Tuple:
            for (const Target& i : t.items) StoreTarget(i, s);
            return;
    }
}

void ParamTarget(const Target& t, Symbols& s) {
    if (t.kind == Target::Kind::Tuple) {
        for (const Target& i : t.items) ParamTarget(i, s);
    } else {
        s.Param(t.name);
    }
}

void VisitBody(const Body& body, Symbols& s);

// What a statement does in the frame it is in (nested frames are analysed
// afterwards, against this frame's complete symbols).
void Visit(const Stmt& st, Symbols& s);

void VisitIfFrom(const IfStmt& i, size_t branch, Symbols& s) {
    Loads(i.branches[branch].first.get(), s);
    Symbols body = s, elifs = s, els = s;
    VisitBody(i.branches[branch].second, body);
    if (branch + 1 < i.branches.size()) {
        // An elif is an If nested in the elif branch, with no else of its own.
        VisitIfFrom(i, branch + 1, elifs);
    } else {
        VisitBody(i.else_body, els);
    }
    s.BranchUpdate({body, elifs, els});
}

void Visit(const Stmt& st, Symbols& s) {
    switch (st.kind) {
        case StmtKind::Data:
        case StmtKind::Break:
        case StmtKind::Continue:
            return;
        case StmtKind::Print: Loads(static_cast<const PrintStmt&>(st).expr.get(), s); return;
        case StmtKind::If: {
            const auto& i = static_cast<const IfStmt&>(st);
            if (!i.branches.empty()) VisitIfFrom(i, 0, s);
            return;
        }
        case StmtKind::For: Loads(static_cast<const ForStmt&>(st).iter.get(), s); return;
        case StmtKind::Set: {
            const auto& set = static_cast<const SetStmt&>(st);
            Loads(set.value.get(), s);
            StoreTarget(set.target, s);
            return;
        }
        case StmtKind::SetBlock: StoreTarget(static_cast<const SetBlockStmt&>(st).target, s); return;
        case StmtKind::Macro: s.Store(static_cast<const MacroStmt&>(st).name); return;
        case StmtKind::FilterBlock: Loads(static_cast<const FilterBlockStmt&>(st).filter.get(), s); return;
        case StmtKind::With:
            for (const auto& v : static_cast<const WithStmt&>(st).values) Loads(v.get(), s);
            return;
        case StmtKind::Scope: return;
        case StmtKind::CallBlock: Loads(static_cast<const CallBlockStmt&>(st).call.get(), s); return;
    }
}

void VisitBody(const Body& body, Symbols& s) {
    for (const auto& st : body) Visit(*st, s);
}

void AnalyzeNested(Body& body, const Symbols& frame);

FrameLocals AnalyzeMacro(MacroStmt& m, const Symbols& parent) {
    Symbols s;
    s.parent = &parent;
    for (const auto& p : m.params) s.Param(p);
    if (m.uses_caller) s.Param("caller");
    if (m.uses_kwargs) s.Param("kwargs");
    if (m.uses_varargs) s.Param("varargs");
    for (const auto& d : m.defaults) Loads(d.get(), s);
    VisitBody(m.body, s);
    AnalyzeNested(m.body, s);
    return s.Undefined();
}

// The frames a body's statements open, each analysed with `frame` (complete)
// as its parent.
void AnalyzeNested(Body& body, const Symbols& frame) {
    for (auto& st : body) {
        switch (st->kind) {
            case StmtKind::If: {
                auto& i = static_cast<IfStmt&>(*st);
                for (auto& [test, b] : i.branches) AnalyzeNested(b, frame);
                AnalyzeNested(i.else_body, frame);
                break;
            }
            case StmtKind::For: {
                auto& f = static_cast<ForStmt&>(*st);
                Symbols s;
                s.parent = &frame;
                ParamTarget(f.target, s);
                VisitBody(f.body, s);
                AnalyzeNested(f.body, s);
                f.body_locals = s.Undefined();
                Symbols e;
                e.parent = &frame;
                VisitBody(f.else_body, e);
                AnalyzeNested(f.else_body, e);
                f.else_locals = e.Undefined();
                break;
            }
            case StmtKind::SetBlock: {
                auto& b = static_cast<SetBlockStmt&>(*st);
                Symbols s;
                s.parent = &frame;
                VisitBody(b.body, s);
                AnalyzeNested(b.body, s);
                b.locals = s.Undefined();
                break;
            }
            case StmtKind::Macro: {
                auto& m = static_cast<MacroStmt&>(*st);
                m.locals = AnalyzeMacro(m, frame);
                break;
            }
            case StmtKind::FilterBlock: {
                auto& fb = static_cast<FilterBlockStmt&>(*st);
                Symbols s;
                s.parent = &frame;
                Loads(fb.filter.get(), s);
                VisitBody(fb.body, s);
                AnalyzeNested(fb.body, s);
                fb.locals = s.Undefined();
                break;
            }
            case StmtKind::With: {
                auto& w = static_cast<WithStmt&>(*st);
                Symbols s;
                s.parent = &frame;
                for (const Target& t : w.targets) ParamTarget(t, s);
                VisitBody(w.body, s);
                AnalyzeNested(w.body, s);
                w.locals = s.Undefined();
                break;
            }
            case StmtKind::Scope: {
                auto& sc = static_cast<ScopeStmt&>(*st);
                Symbols s;
                s.parent = &frame;
                VisitBody(sc.body, s);
                AnalyzeNested(sc.body, s);
                sc.locals = s.Undefined();
                break;
            }
            case StmtKind::CallBlock: {
                auto& cb = static_cast<CallBlockStmt&>(*st);
                cb.caller->locals = AnalyzeMacro(*cb.caller, frame);
                break;
            }
            default: break;
        }
    }
}

}  // namespace

FrameLocals AnalyzeFrames(Body& root) {
    Symbols s;
    VisitBody(root, s);
    AnalyzeNested(root, s);
    return s.Undefined();
}

}  // namespace prepack::jinja
