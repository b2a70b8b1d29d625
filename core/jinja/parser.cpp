#include "core/jinja/parser.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/jinja/cat.h"
#include "absl/strings/str_join.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/frames.h"
#include "core/jinja/lexer.h"
#include "core/jinja/stack_guard.h"

namespace prepack::jinja {
namespace {

using EndTokens = std::vector<std::string_view>;

// Tags jinja2 knows that this engine does not implement.
bool IsUnsupportedTag(std::string_view name) {
    static constexpr std::string_view kTags[] = {"block", "extends", "include", "import", "from", "autoescape"};
    return std::find(std::begin(kTags), std::end(kTags), name) != std::end(kTags);
}

class Parser {
public:
    Parser(std::vector<Token> tokens, const Limits& limits) : toks_(std::move(tokens)), limits_(limits) {}

    Body ParseAll() {
        Body body = Subparse(nullptr);
        return body;
    }

private:
    // ---- token stream ----
    const Token& Cur() const { return toks_[pos_]; }
    const Token& Peek() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
    const Token& Next() {
        const Token& t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    bool SkipOp(std::string_view op) {
        if (!Cur().IsOp(op)) return false;
        Next();
        return true;
    }
    bool SkipName(std::string_view name) {
        if (!Cur().IsName(name)) return false;
        Next();
        return true;
    }
    [[noreturn]] void FailExpected(const std::string& what) {
        if (Cur().type == Tok::Eof) {
            FailAt(Cur().offset, Cat("unexpected end of template, expected '", what, "'."));
        }
        FailAt(Cur().offset, Cat("expected token '", what, "', got '", DescribeToken(Cur()), "'"));
    }
    const Token& ExpectOp(std::string_view op) {
        if (!Cur().IsOp(op)) FailExpected(std::string(op));
        return Next();
    }
    const Token& ExpectName() {
        if (Cur().type != Tok::Name) FailExpected("name");
        return Next();
    }
    const Token& ExpectNamed(std::string_view name) {
        if (!Cur().IsName(name)) FailExpected(std::string(name));
        return Next();
    }
    const Token& ExpectType(Tok type, std::string_view what) {
        if (Cur().type != type) FailExpected(std::string(what));
        return Next();
    }

    // Nesting of the parser's recursion (statements, parentheses, unary
    // operators), bounded by max_depth, and the stack it really uses.
    class DepthGuard {
    public:
        explicit DepthGuard(Parser& p) : p_(p) {
            if (++p_.depth_ > p_.limits_.max_depth || p_.stack_.Exceeded()) {
                ExhaustedAt(p_.Cur().offset,
                            Cat("template nested deeper than max_depth (", p_.limits_.max_depth, ")"));
            }
        }
        ~DepthGuard() { --p_.depth_; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;

    private:
        Parser& p_;
    };

    // Height of a new node's tree: evaluating and destroying it recurses
    // that deep, so long left-leaning chains (a + b + c ...) count too.
    template <typename T>
    std::unique_ptr<T> Finish(std::unique_ptr<T> e, int child_height) {
        const int h = child_height + 1;
        if (h > limits_.max_depth) {
            ExhaustedAt(e->offset, Cat("expression nested deeper than max_depth (", limits_.max_depth, ")"));
        }
        e->height = h;
        return e;
    }
    static int HeightOf(const Expr* e) { return e == nullptr ? 0 : e->height; }
    int ArgsHeight(const CallArgs& a) const {
        int h = std::max(HeightOf(a.star.get()), HeightOf(a.starstar.get()));
        for (const auto& e : a.pos) h = std::max(h, HeightOf(e.get()));
        for (const auto& kv : a.kw) h = std::max(h, HeightOf(kv.second.get()));
        return h;
    }

    // ---- templates and statements ----

    // Statements until a {% tag %} named in `end` (left as the current token).
    Body Subparse(const EndTokens* end) {
        if (end != nullptr) end_stack_.push_back(*end);
        Body body;
        while (Cur().type != Tok::Eof) {
            const Token& t = Cur();
            if (t.type == Tok::Data) {
                body.push_back(std::make_unique<DataStmt>(t.offset, Value::Str(t.value)));
                Next();
            } else if (t.type == Tok::VarBegin) {
                Next();
                ExprPtr e = ParseTuple(false, true, nullptr, false);
                body.push_back(std::make_unique<PrintStmt>(e->offset, std::move(e)));
                ExpectType(Tok::VarEnd, "end of print statement");
            } else if (t.type == Tok::BlockBegin) {
                Next();
                if (end != nullptr && Cur().type == Tok::Name &&
                    std::find(end->begin(), end->end(), Cur().value) != end->end()) {
                    end_stack_.pop_back();
                    return body;
                }
                ParseStatement(body);
                ExpectType(Tok::BlockEnd, "end of statement block");
            } else {
                FailAt(t.offset, Cat("unexpected '", DescribeToken(t), "'"));
            }
        }
        if (end != nullptr) end_stack_.pop_back();
        return body;
    }

    [[noreturn]] void FailUnknownTag(const std::string* name, size_t offset) {
        std::vector<std::string> parts;
        parts.push_back(name == nullptr ? "Unexpected end of template."
                                        : Cat("Encountered unknown tag '", *name, "'."));
        if (!end_stack_.empty()) {
            std::vector<std::string> looking;
            for (std::string_view t : end_stack_.back()) looking.push_back(Cat("'", t, "'"));
            bool expected = false;
            for (const auto& ends : end_stack_) {
                for (std::string_view t : ends) expected |= name != nullptr && t == *name;
            }
            const std::string currently = absl::StrJoin(looking, " or ");
            if (expected) {
                parts.push_back(Cat("You probably made a nesting mistake. Jinja is expecting this tag, but "
                                             "currently looking for ",
                                             currently, "."));
            } else {
                parts.push_back(Cat("Jinja was looking for the following tags: ", currently, "."));
            }
        }
        if (!tag_stack_.empty()) {
            parts.push_back(Cat("The innermost block that needs to be closed is '", tag_stack_.back(), "'."));
        }
        FailAt(offset, absl::StrJoin(parts, " "));
    }

    // The body of a block statement up to one of `end`; with drop_needle the
    // end tag's name is consumed too.
    Body ParseStatements(const EndTokens& end, bool drop_needle) {
        SkipOp(":");
        ExpectType(Tok::BlockEnd, "end of statement block");
        Body body = Subparse(&end);
        if (Cur().type == Tok::Eof) {
            end_stack_.push_back(end);
            FailUnknownTag(nullptr, Cur().offset);
        }
        if (drop_needle) Next();
        return body;
    }

    // Appends the statement (or, for {% print a, b %}, statements).
    void ParseStatement(Body& out) {
        DepthGuard guard(*this);
        const Token& t = Cur();
        if (t.type != Tok::Name) FailAt(t.offset, "tag name expected");
        const std::string name = t.value;
        const size_t off = t.offset;
        tag_stack_.push_back(name);
        StmtPtr s;
        if (name == "for") {
            s = ParseFor();
        } else if (name == "if") {
            s = ParseIf();
        } else if (name == "set") {
            s = ParseSet();
        } else if (name == "macro") {
            s = ParseMacro();
        } else if (name == "filter") {
            s = ParseFilterBlock();
        } else if (name == "with") {
            s = ParseWith();
        } else if (name == "print") {
            ParsePrint(out);
        } else if (name == "break" || name == "continue") {
            Next();
            if (loop_depth_ == 0) {
                FailAt(off, name == "break" ? "'break' outside loop" : "'continue' not properly in loop");
            }
            s = std::make_unique<LoopControlStmt>(off, name == "break");
        } else if (name == "call") {
            s = ParseCallBlock();
        } else if (name == "generation") {
            // transformers' AssistantTracker: renders its body as is.
            Next();
            auto g = std::make_unique<ScopeStmt>(off);
            const int saved = loop_depth_;
            loop_depth_ = 0;  // a call block body is a function of its own
            g->body = ParseStatements({"endgeneration"}, true);
            loop_depth_ = saved;
            s = std::move(g);
        } else if (IsUnsupportedTag(name)) {
            FailAt(off, Cat("the '", name, "' tag is not supported"));
        } else {
            tag_stack_.pop_back();
            FailUnknownTag(&name, off);
        }
        tag_stack_.pop_back();
        if (s) out.push_back(std::move(s));
    }

    StmtPtr ParseFor() {
        auto s = std::make_unique<ForStmt>(Next().offset);
        static const EndTokens kIn = {"in"};
        s->target = ParseAssignTarget(true, false, &kIn, false);
        ExpectNamed("in");
        static const EndTokens kRecursive = {"recursive"};
        s->iter = ParseTuple(false, false, &kRecursive, false);
        if (SkipName("if")) s->filter = ParseExpression(true);
        s->recursive = SkipName("recursive");
        ++loop_depth_;
        s->body = ParseStatements({"endfor", "else"}, false);
        --loop_depth_;
        if (Next().value != "endfor") s->else_body = ParseStatements({"endfor"}, true);
        return s;
    }

    StmtPtr ParseIf() {
        auto s = std::make_unique<IfStmt>(Next().offset);
        while (true) {
            ExprPtr test = ParseTuple(false, false, nullptr, false);
            Body body = ParseStatements({"elif", "else", "endif"}, false);
            s->branches.emplace_back(std::move(test), std::move(body));
            const Token& t = Next();
            if (t.value == "elif") continue;
            if (t.value == "else") s->else_body = ParseStatements({"endif"}, true);
            break;
        }
        return s;
    }

    StmtPtr ParseSet() {
        const size_t off = Next().offset;
        Target target = ParseAssignTarget(true, false, nullptr, true);
        if (SkipOp("=")) {
            auto s = std::make_unique<SetStmt>(off);
            s->target = std::move(target);
            s->value = ParseTuple(false, true, nullptr, false);
            return s;
        }
        auto s = std::make_unique<SetBlockStmt>(off);
        s->target = std::move(target);
        if (Cur().IsOp("|")) s->filter = ParseFilter(nullptr, false);
        s->body = ParseStatements({"endset"}, true);
        return s;
    }

    StmtPtr ParseMacro() {
        auto s = std::make_unique<MacroStmt>(Next().offset);
        s->name = ExpectName().value;
        ParseSignature(*s);
        ParseMacroBody(*s, "endmacro");
        return s;
    }

    StmtPtr ParseCallBlock() {
        auto s = std::make_unique<CallBlockStmt>(Next().offset);
        s->caller = std::make_unique<MacroStmt>(s->offset);
        s->caller->name = "caller";
        if (Cur().IsOp("(")) ParseSignature(*s->caller);
        const size_t call_off = Cur().offset;
        s->call = ParseExpression(true);
        if (s->call->kind != ExprKind::Call) FailAt(call_off, "expected call");
        ParseMacroBody(*s->caller, "endcall");
        return s;
    }

    // (a, b=default, ...)
    void ParseSignature(MacroStmt& m) {
        MacroStmt* s = &m;
        ExpectOp("(");
        while (!Cur().IsOp(")")) {
            if (!s->params.empty()) ExpectOp(",");
            const Token& p = ExpectName();
            s->params.push_back(p.value);
            if (SkipOp("=")) {
                s->defaults.push_back(ParseExpression(true));
            } else if (!s->defaults.empty()) {
                FailAt(p.offset, "non-default argument follows default argument");
            } else if (p.value == "caller") {
                FailAt(p.offset, "When defining macros or call blocks the special \"caller\" argument must be "
                                 "omitted or be given a default.");
            }
        }
        ExpectOp(")");
    }

    // A macro's body is a function of its own: no loop to break out of.
    void ParseMacroBody(MacroStmt& m, std::string_view end) {
        const int saved = loop_depth_;
        loop_depth_ = 0;
        macros_.push_back(&m);
        m.body = ParseStatements({end}, true);
        macros_.pop_back();
        loop_depth_ = saved;
    }

    StmtPtr ParseFilterBlock() {
        auto s = std::make_unique<FilterBlockStmt>(Next().offset);
        s->filter = ParseFilter(nullptr, true);
        s->body = ParseStatements({"endfilter"}, true);
        return s;
    }

    StmtPtr ParseWith() {
        auto s = std::make_unique<WithStmt>(Next().offset);
        while (Cur().type != Tok::BlockEnd) {
            if (!s->targets.empty()) ExpectOp(",");
            s->targets.push_back(ParseAssignTarget(true, false, nullptr, false));
            ExpectOp("=");
            s->values.push_back(ParseExpression(true));
        }
        s->body = ParseStatements({"endwith"}, true);
        return s;
    }

    void ParsePrint(Body& out) {
        Next();
        size_t n = 0;
        while (Cur().type != Tok::BlockEnd) {
            if (n++ > 0) ExpectOp(",");
            ExprPtr e = ParseExpression(true);
            out.push_back(std::make_unique<PrintStmt>(e->offset, std::move(e)));
        }
    }

    // ---- assignment targets ----

    Target ParseAssignTarget(bool with_tuple, bool name_only, const EndTokens* extra_end, bool with_namespace) {
        Target t;
        t.offset = Cur().offset;
        if (with_namespace && Cur().type == Tok::Name && Peek().IsOp(".")) {
            t.kind = Target::Kind::NsAttr;
            t.name = Next().value;
            Next();  // .
            t.attr = ExpectName().value;
            return t;
        }
        if (name_only) {
            t.name = ExpectName().value;
            return t;
        }
        ExprPtr e = with_tuple ? ParseTuple(true, true, extra_end, false) : ParsePrimary();
        return ToTarget(*e);
    }

    Target ToTarget(const Expr& e) {
        Target t;
        t.offset = e.offset;
        if (e.kind == ExprKind::Name) {
            t.name = static_cast<const NameExpr&>(e).name;
            return t;
        }
        if (e.kind == ExprKind::List && static_cast<const ListExpr&>(e).tuple) {
            t.kind = Target::Kind::Tuple;
            for (const auto& item : static_cast<const ListExpr&>(e).items) t.items.push_back(ToTarget(*item));
            return t;
        }
        static constexpr const char* kNames[] = {"const", "name",  "getattr", "getitem", "slice", "unary",
                                                 "binexpr", "and/or", "compare", "concat", "condexpr", "list",
                                                 "dict",  "call",  "filter",  "test"};
        FailAt(e.offset, Cat("can't assign to '", kNames[static_cast<int>(e.kind)], "'"));
    }

    // ---- expressions ----

    bool IsTupleEnd(const EndTokens* extra_end) const {
        const Token& t = Cur();
        if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || t.IsOp(")")) return true;
        if (extra_end != nullptr && t.type == Tok::Name) {
            return std::find(extra_end->begin(), extra_end->end(), t.value) != extra_end->end();
        }
        return false;
    }

    ExprPtr ParseTuple(bool simplified, bool with_condexpr, const EndTokens* extra_end, bool explicit_parens) {
        const size_t off = Cur().offset;
        std::vector<ExprPtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) ExpectOp(",");
            if (IsTupleEnd(extra_end)) break;
            args.push_back(simplified ? ParsePrimary() : ParseExpression(with_condexpr));
            if (Cur().IsOp(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parens) {
                FailAt(Cur().offset, Cat("Expected an expression, got '", DescribeToken(Cur()), "'"));
            }
        }
        auto t = std::make_unique<ListExpr>(off, true);
        int h = 0;
        for (auto& a : args) h = std::max(h, HeightOf(a.get()));
        t->items = std::move(args);
        return Finish(std::move(t), h);
    }

    ExprPtr ParseExpression(bool with_condexpr) {
        DepthGuard guard(*this);
        return with_condexpr ? ParseCondExpr() : ParseOr();
    }

    ExprPtr ParseCondExpr() {
        ExprPtr expr1 = ParseOr();
        while (Cur().IsName("if")) {
            const size_t off = Next().offset;
            auto c = std::make_unique<CondExpr>(off);
            c->test = ParseOr();
            if (SkipName("else")) {
                DepthGuard guard(*this);
                c->otherwise = ParseCondExpr();
            }
            c->then = std::move(expr1);
            auto h = std::max({HeightOf(c->test.get()), HeightOf(c->then.get()), HeightOf(c->otherwise.get())});
            expr1 = Finish(std::move(c), h);
        }
        return expr1;
    }

    ExprPtr ParseOr() {
        ExprPtr left = ParseAnd();
        while (Cur().IsName("or")) {
            const size_t off = Next().offset;
            ExprPtr right = ParseAnd();
            const int h = std::max(HeightOf(left.get()), HeightOf(right.get()));
            left = Finish(std::make_unique<LogicExpr>(off, false, std::move(left), std::move(right)), h);
        }
        return left;
    }

    ExprPtr ParseAnd() {
        ExprPtr left = ParseNot();
        while (Cur().IsName("and")) {
            const size_t off = Next().offset;
            ExprPtr right = ParseNot();
            const int h = std::max(HeightOf(left.get()), HeightOf(right.get()));
            left = Finish(std::make_unique<LogicExpr>(off, true, std::move(left), std::move(right)), h);
        }
        return left;
    }

    ExprPtr ParseNot() {
        if (Cur().IsName("not")) {
            const size_t off = Next().offset;
            DepthGuard guard(*this);
            ExprPtr operand = ParseNot();
            const int h = HeightOf(operand.get());
            return Finish(std::make_unique<UnaryExpr>(off, UnOp::Not, std::move(operand)), h);
        }
        return ParseCompare();
    }

    ExprPtr ParseCompare() {
        const size_t off = Cur().offset;
        ExprPtr expr = ParseMath1();
        std::unique_ptr<CompareExpr> cmp;
        while (true) {
            const Token& t = Cur();
            CmpKind op;
            if (t.IsOp("==")) {
                op = CmpKind::Eq;
            } else if (t.IsOp("!=")) {
                op = CmpKind::Ne;
            } else if (t.IsOp("<")) {
                op = CmpKind::Lt;
            } else if (t.IsOp("<=")) {
                op = CmpKind::Le;
            } else if (t.IsOp(">")) {
                op = CmpKind::Gt;
            } else if (t.IsOp(">=")) {
                op = CmpKind::Ge;
            } else if (t.IsName("in")) {
                op = CmpKind::In;
            } else if (t.IsName("not") && Peek().IsName("in")) {
                op = CmpKind::NotIn;
                Next();
            } else {
                break;
            }
            const size_t op_off = Next().offset;
            if (!cmp) cmp = std::make_unique<CompareExpr>(off, std::move(expr));
            cmp->rest.push_back({op, op_off, ParseMath1()});
        }
        if (!cmp) return expr;
        int h = HeightOf(cmp->first.get());
        for (const auto& o : cmp->rest) h = std::max(h, HeightOf(o.expr.get()));
        return Finish(std::move(cmp), h);
    }

    ExprPtr ParseMath1() {
        ExprPtr left = ParseConcat();
        while (Cur().IsOp("+") || Cur().IsOp("-")) {
            const Token& t = Next();
            const BinOp op = t.value == "+" ? BinOp::Add : BinOp::Sub;
            ExprPtr right = ParseConcat();
            const int h = std::max(HeightOf(left.get()), HeightOf(right.get()));
            left = Finish(std::make_unique<BinaryExpr>(t.offset, op, std::move(left), std::move(right)), h);
        }
        return left;
    }

    ExprPtr ParseConcat() {
        const size_t off = Cur().offset;
        ExprPtr first = ParseMath2();
        if (!Cur().IsOp("~")) return first;
        auto c = std::make_unique<ConcatExpr>(off);
        int h = HeightOf(first.get());
        c->items.push_back(std::move(first));
        while (SkipOp("~")) {
            c->items.push_back(ParseMath2());
            h = std::max(h, HeightOf(c->items.back().get()));
        }
        return Finish(std::move(c), h);
    }

    ExprPtr ParseMath2() {
        ExprPtr left = ParsePow();
        while (true) {
            const Token& t = Cur();
            BinOp op;
            if (t.IsOp("*")) {
                op = BinOp::Mul;
            } else if (t.IsOp("/")) {
                op = BinOp::Div;
            } else if (t.IsOp("//")) {
                op = BinOp::FloorDiv;
            } else if (t.IsOp("%")) {
                op = BinOp::Mod;
            } else {
                break;
            }
            const size_t off = Next().offset;
            ExprPtr right = ParsePow();
            const int h = std::max(HeightOf(left.get()), HeightOf(right.get()));
            left = Finish(std::make_unique<BinaryExpr>(off, op, std::move(left), std::move(right)), h);
        }
        return left;
    }

    // jinja2's ** is left-associative: 2 ** 3 ** 2 is 64.
    ExprPtr ParsePow() {
        ExprPtr left = ParseUnary(true);
        while (Cur().IsOp("**")) {
            const size_t off = Next().offset;
            ExprPtr right = ParseUnary(true);
            const int h = std::max(HeightOf(left.get()), HeightOf(right.get()));
            left = Finish(std::make_unique<BinaryExpr>(off, BinOp::Pow, std::move(left), std::move(right)), h);
        }
        return left;
    }

    ExprPtr ParseUnary(bool with_filter) {
        ExprPtr node;
        if (Cur().IsOp("-") || Cur().IsOp("+")) {
            const Token& t = Next();
            const UnOp op = t.value == "-" ? UnOp::Neg : UnOp::Pos;
            DepthGuard guard(*this);
            ExprPtr operand = ParseUnary(false);
            const int h = HeightOf(operand.get());
            node = Finish(std::make_unique<UnaryExpr>(t.offset, op, std::move(operand)), h);
        } else {
            node = ParsePrimary();
        }
        node = ParsePostfix(std::move(node));
        if (with_filter) node = ParseFilterExpr(std::move(node));
        return node;
    }

    ExprPtr ParsePrimary() {
        const Token& t = Cur();
        const size_t off = t.offset;
        switch (t.type) {
            case Tok::Name: {
                const std::string& n = t.value;
                ExprPtr e;
                if (n == "true" || n == "True" || n == "false" || n == "False") {
                    e = std::make_unique<ConstExpr>(off, Value::Bool(n == "true" || n == "True"));
                } else if (n == "none" || n == "None") {
                    e = std::make_unique<ConstExpr>(off, Value::None());
                } else {
                    for (MacroStmt* m : macros_) {
                        if (n == "varargs") m->uses_varargs = true;
                        if (n == "kwargs") m->uses_kwargs = true;
                        if (n == "caller") m->uses_caller = true;
                    }
                    e = std::make_unique<NameExpr>(off, n);
                }
                Next();
                return Finish(std::move(e), 0);
            }
            case Tok::String: {
                std::string s;
                while (Cur().type == Tok::String) s += Next().value;
                return Finish(std::make_unique<ConstExpr>(off, Value::Str(s)), 0);
            }
            case Tok::Int: {
                const Token& tok = Next();
                Value v = Value::Int(tok.ival);
                if (!tok.value.empty()) {
                    auto b = BigInt::FromDecimal(tok.value, false);
                    if (!b) FailAt(off, "bad integer literal");
                    v = Value::Integer(*b);
                }
                return Finish(std::make_unique<ConstExpr>(off, std::move(v)), 0);
            }
            case Tok::Float: {
                const double v = Next().fval;
                return Finish(std::make_unique<ConstExpr>(off, Value::Float(v)), 0);
            }
            case Tok::Op:
                if (t.value == "(") {
                    Next();
                    ExprPtr e = ParseTuple(false, true, nullptr, true);
                    ExpectOp(")");
                    return e;
                }
                if (t.value == "[") return ParseList();
                if (t.value == "{") return ParseDict();
                break;
            default:
                break;
        }
        FailAt(off, Cat("unexpected '", DescribeToken(t), "'"));
    }

    ExprPtr ParseList() {
        auto l = std::make_unique<ListExpr>(ExpectOp("[").offset, false);
        int h = 0;
        while (!Cur().IsOp("]")) {
            if (!l->items.empty()) ExpectOp(",");
            if (Cur().IsOp("]")) break;
            l->items.push_back(ParseExpression(true));
            h = std::max(h, HeightOf(l->items.back().get()));
        }
        ExpectOp("]");
        return Finish(std::move(l), h);
    }

    ExprPtr ParseDict() {
        auto d = std::make_unique<DictExpr>(ExpectOp("{").offset);
        int h = 0;
        while (!Cur().IsOp("}")) {
            if (!d->items.empty()) ExpectOp(",");
            if (Cur().IsOp("}")) break;
            ExprPtr key = ParseExpression(true);
            ExpectOp(":");
            ExprPtr value = ParseExpression(true);
            h = std::max({h, HeightOf(key.get()), HeightOf(value.get())});
            d->items.emplace_back(std::move(key), std::move(value));
        }
        ExpectOp("}");
        return Finish(std::move(d), h);
    }

    ExprPtr ParsePostfix(ExprPtr node) {
        while (true) {
            if (Cur().IsOp(".") || Cur().IsOp("[")) {
                node = ParseSubscript(std::move(node));
            } else if (Cur().IsOp("(")) {
                node = ParseCall(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr ParseFilterExpr(ExprPtr node) {
        while (true) {
            if (Cur().IsOp("|")) {
                node = ParseFilter(std::move(node), false);
            } else if (Cur().IsName("is")) {
                node = ParseTest(std::move(node));
            } else if (Cur().IsOp("(")) {
                node = ParseCall(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr ParseSubscript(ExprPtr node) {
        const Token& t = Next();
        if (t.value == ".") {
            const Token& attr = Next();
            if (attr.type == Tok::Name) {
                const int h = HeightOf(node.get());
                return Finish(std::make_unique<GetAttrExpr>(attr.offset, std::move(node), attr.value), h);
            }
            if (attr.type != Tok::Int) FailAt(attr.offset, "expected name or number");
            auto key = Finish(std::make_unique<ConstExpr>(attr.offset, Value::Int(attr.ival)), 0);
            const int h = HeightOf(node.get());
            return Finish(std::make_unique<GetItemExpr>(attr.offset, std::move(node), std::move(key)), h);
        }
        const size_t off = t.offset;
        std::vector<ExprPtr> args;
        while (!Cur().IsOp("]")) {
            if (!args.empty()) ExpectOp(",");
            args.push_back(ParseSubscribed());
        }
        ExpectOp("]");
        ExprPtr key;
        if (args.size() == 1) {
            key = std::move(args[0]);
        } else {
            auto tup = std::make_unique<ListExpr>(off, true);
            int h = 0;
            for (auto& a : args) h = std::max(h, HeightOf(a.get()));
            tup->items = std::move(args);
            key = Finish(std::move(tup), h);
        }
        const int h = std::max(HeightOf(node.get()), HeightOf(key.get()));
        return Finish(std::make_unique<GetItemExpr>(off, std::move(node), std::move(key)), h);
    }

    ExprPtr ParseSubscribed() {
        const size_t off = Cur().offset;
        auto slice = std::make_unique<SliceExpr>(off);
        if (Cur().IsOp(":")) {
            Next();
        } else {
            ExprPtr node = ParseExpression(true);
            if (!Cur().IsOp(":")) return node;
            Next();
            slice->start = std::move(node);
        }
        if (!Cur().IsOp(":") && !Cur().IsOp("]") && !Cur().IsOp(",")) slice->stop = ParseExpression(true);
        if (Cur().IsOp(":")) {
            Next();
            if (!Cur().IsOp("]") && !Cur().IsOp(",")) slice->step = ParseExpression(true);
        }
        const int h = std::max({HeightOf(slice->start.get()), HeightOf(slice->stop.get()), HeightOf(slice->step.get())});
        return Finish(std::move(slice), h);
    }

    ExprPtr ParseCall(ExprPtr node) {
        const size_t off = Cur().offset;
        auto c = std::make_unique<CallExpr>(off, std::move(node));
        ParseCallArgs(c->args);
        const int h = std::max(HeightOf(c->callee.get()), ArgsHeight(c->args));
        return Finish(std::move(c), h);
    }

    void ParseCallArgs(CallArgs& a) {
        const size_t off = ExpectOp("(").offset;
        bool require_comma = false;
        auto ensure = [&](bool ok) {
            if (!ok) FailAt(off, "invalid syntax for function call expression");
        };
        while (!Cur().IsOp(")")) {
            if (require_comma) {
                ExpectOp(",");
                if (Cur().IsOp(")")) break;  // trailing comma
            }
            if (Cur().IsOp("*")) {
                ensure(a.star == nullptr && a.starstar == nullptr);
                Next();
                a.star = ParseExpression(true);
            } else if (Cur().IsOp("**")) {
                ensure(a.starstar == nullptr);
                Next();
                a.starstar = ParseExpression(true);
            } else if (Cur().type == Tok::Name && Peek().IsOp("=")) {
                ensure(a.starstar == nullptr);
                std::string key = Next().value;
                Next();
                a.kw.emplace_back(std::move(key), ParseExpression(true));
            } else {
                ensure(a.star == nullptr && a.starstar == nullptr && a.kw.empty());
                a.pos.push_back(ParseExpression(true));
            }
            require_comma = true;
        }
        ExpectOp(")");
    }

    // `node | name(args) | ...`; with start_inline the first filter has no
    // leading '|' ({% filter name %}). node is null in filter / set blocks.
    ExprPtr ParseFilter(ExprPtr node, bool start_inline) {
        while (Cur().IsOp("|") || start_inline) {
            if (!start_inline) Next();
            start_inline = false;
            const Token& t = ExpectName();
            const size_t off = t.offset;
            std::string name = t.value;
            while (Cur().IsOp(".")) {
                Next();
                name += "." + ExpectName().value;
            }
            auto f = std::make_unique<FilterExpr>(off, std::move(node), name);
            f->def = FindFilter(name);
            if (Cur().IsOp("(")) ParseCallArgs(f->args);
            const int h = std::max(HeightOf(f->operand.get()), ArgsHeight(f->args));
            node = Finish(std::move(f), h);
        }
        return node;
    }

    ExprPtr ParseTest(ExprPtr node) {
        const size_t is_off = Next().offset;  // is
        const bool negated = SkipName("not");
        const Token& t = ExpectName();
        const size_t off = t.offset;
        std::string name = t.value;
        while (Cur().IsOp(".")) {
            Next();
            name += "." + ExpectName().value;
        }
        auto test = std::make_unique<TestExpr>(off, std::move(node), name);
        test->def = FindTest(name);
        const Token& c = Cur();
        if (c.IsOp("(")) {
            ParseCallArgs(test->args);
        } else if ((c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Int || c.type == Tok::Float ||
                    c.IsOp("[") || c.IsOp("{")) &&
                   !c.IsName("else") && !c.IsName("or") && !c.IsName("and")) {
            if (c.IsName("is")) FailAt(c.offset, "You cannot chain multiple tests with is");
            ExprPtr arg = ParsePostfix(ParsePrimary());
            test->args.pos.push_back(std::move(arg));
        }
        const int h = std::max(HeightOf(test->operand.get()), ArgsHeight(test->args));
        ExprPtr out = Finish(std::move(test), h);
        if (negated) {
            const int hn = HeightOf(out.get());
            out = Finish(std::make_unique<UnaryExpr>(is_off, UnOp::Not, std::move(out)), hn);
        }
        return out;
    }

    std::vector<Token> toks_;
    size_t pos_ = 0;
    Limits limits_;
    StackGuard stack_;
    int depth_ = 0;
    int loop_depth_ = 0;
    std::vector<std::string> tag_stack_;
    std::vector<EndTokens> end_stack_;
    std::vector<MacroStmt*> macros_;
};

// jinja2 reports unknown filters and tests when it compiles the template,
// except inside `if` statements and conditional expressions (a "soft"
// frame), where it waits until they run; statements with a frame of their
// own (for, macro, with bodies, ...) are strict again.
void CheckNames(const Body& body, bool soft);

void CheckArgs(const CallArgs& a, bool soft);

void CheckExpr(const Expr* e, bool soft) {
    if (e == nullptr) return;
    switch (e->kind) {
        case ExprKind::Const:
        case ExprKind::Name:
            return;
        case ExprKind::GetAttr: CheckExpr(static_cast<const GetAttrExpr*>(e)->obj.get(), soft); return;
        case ExprKind::GetItem: {
            auto* g = static_cast<const GetItemExpr*>(e);
            CheckExpr(g->obj.get(), soft);
            CheckExpr(g->key.get(), soft);
            return;
        }
        case ExprKind::Slice: {
            auto* s = static_cast<const SliceExpr*>(e);
            CheckExpr(s->start.get(), soft);
            CheckExpr(s->stop.get(), soft);
            CheckExpr(s->step.get(), soft);
            return;
        }
        case ExprKind::Unary: CheckExpr(static_cast<const UnaryExpr*>(e)->operand.get(), soft); return;
        case ExprKind::Binary: {
            auto* b = static_cast<const BinaryExpr*>(e);
            CheckExpr(b->left.get(), soft);
            CheckExpr(b->right.get(), soft);
            return;
        }
        case ExprKind::Logic: {
            auto* b = static_cast<const LogicExpr*>(e);
            CheckExpr(b->left.get(), soft);
            CheckExpr(b->right.get(), soft);
            return;
        }
        case ExprKind::Compare: {
            auto* c = static_cast<const CompareExpr*>(e);
            CheckExpr(c->first.get(), soft);
            for (const auto& o : c->rest) CheckExpr(o.expr.get(), soft);
            return;
        }
        case ExprKind::Concat:
            for (const auto& i : static_cast<const ConcatExpr*>(e)->items) CheckExpr(i.get(), soft);
            return;
        case ExprKind::Cond: {
            auto* c = static_cast<const CondExpr*>(e);
            CheckExpr(c->test.get(), true);
            CheckExpr(c->then.get(), true);
            CheckExpr(c->otherwise.get(), true);
            return;
        }
        case ExprKind::List:
            for (const auto& i : static_cast<const ListExpr*>(e)->items) CheckExpr(i.get(), soft);
            return;
        case ExprKind::Dict:
            for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
                CheckExpr(k.get(), soft);
                CheckExpr(v.get(), soft);
            }
            return;
        case ExprKind::Call: {
            auto* c = static_cast<const CallExpr*>(e);
            CheckExpr(c->callee.get(), soft);
            CheckArgs(c->args, soft);
            return;
        }
        case ExprKind::Filter: {
            auto* f = static_cast<const FilterExpr*>(e);
            CheckExpr(f->operand.get(), soft);
            CheckArgs(f->args, soft);
            if (f->def == nullptr && !soft) FailAt(f->offset, Cat("No filter named '", f->name, "'."));
            return;
        }
        case ExprKind::Test: {
            auto* t = static_cast<const TestExpr*>(e);
            CheckExpr(t->operand.get(), soft);
            CheckArgs(t->args, soft);
            if (t->def == nullptr && !soft) FailAt(t->offset, Cat("No test named '", t->name, "'."));
            return;
        }
    }
}

void CheckArgs(const CallArgs& a, bool soft) {
    for (const auto& e : a.pos) CheckExpr(e.get(), soft);
    for (const auto& kv : a.kw) CheckExpr(kv.second.get(), soft);
    CheckExpr(a.star.get(), soft);
    CheckExpr(a.starstar.get(), soft);
}

void CheckStmt(const Stmt& s, bool soft) {
    switch (s.kind) {
        case StmtKind::Data:
        case StmtKind::Break:
        case StmtKind::Continue:
            return;
        case StmtKind::Print: CheckExpr(static_cast<const PrintStmt&>(s).expr.get(), soft); return;
        case StmtKind::If: {
            auto& i = static_cast<const IfStmt&>(s);
            for (const auto& [test, body] : i.branches) {
                CheckExpr(test.get(), true);
                CheckNames(body, true);
            }
            CheckNames(i.else_body, true);
            return;
        }
        case StmtKind::For: {
            auto& f = static_cast<const ForStmt&>(s);
            CheckExpr(f.iter.get(), soft);
            CheckExpr(f.filter.get(), false);
            CheckNames(f.body, false);
            CheckNames(f.else_body, false);
            return;
        }
        case StmtKind::Set: CheckExpr(static_cast<const SetStmt&>(s).value.get(), soft); return;
        case StmtKind::SetBlock: {
            auto& b = static_cast<const SetBlockStmt&>(s);
            CheckExpr(b.filter.get(), false);
            CheckNames(b.body, false);
            return;
        }
        case StmtKind::Macro: {
            auto& m = static_cast<const MacroStmt&>(s);
            for (const auto& d : m.defaults) CheckExpr(d.get(), false);
            CheckNames(m.body, false);
            return;
        }
        case StmtKind::FilterBlock: {
            auto& f = static_cast<const FilterBlockStmt&>(s);
            CheckExpr(f.filter.get(), false);
            CheckNames(f.body, false);
            return;
        }
        case StmtKind::With: {
            auto& w = static_cast<const WithStmt&>(s);
            for (const auto& v : w.values) CheckExpr(v.get(), soft);
            CheckNames(w.body, false);
            return;
        }
        case StmtKind::Scope: CheckNames(static_cast<const ScopeStmt&>(s).body, false); return;
        case StmtKind::CallBlock: {
            auto& c = static_cast<const CallBlockStmt&>(s);
            CheckExpr(c.call.get(), soft);
            for (const auto& d : c.caller->defaults) CheckExpr(d.get(), false);
            CheckNames(c.caller->body, false);
            return;
        }
    }
}

void CheckNames(const Body& body, bool soft) {
    for (const auto& s : body) CheckStmt(*s, soft);
}

}  // namespace

ParsedTemplate ParseTemplate(std::string_view source, const Limits& limits) {
    Parser parser(Tokenize(source), limits);
    ParsedTemplate t;
    t.body = parser.ParseAll();
    CheckNames(t.body, false);
    t.locals = AnalyzeFrames(t.body);
    return t;
}

}  // namespace prepack::jinja
