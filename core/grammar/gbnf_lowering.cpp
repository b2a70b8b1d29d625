#include "core/grammar/gbnf_lowering.h"

#include <deque>
#include <unordered_map>

#include "core/grammar/gbnf_regex_pool.h"

namespace prepack::grammar::gbnf {
namespace {

using NodeKind = AstNode::Kind;

// Lexeme names are for messages: a short, single-line spelling.
constexpr size_t kMaxNameBytes = 60;

std::string ShortName(std::string_view source) {
    std::string name;
    bool pending_space = false;
    for (char c : source) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            pending_space = !name.empty();
            continue;
        }
        if (pending_space) name.push_back(' ');
        pending_space = false;
        name.push_back(c);
    }
    if (name.size() > kMaxNameBytes) {
        size_t cut = kMaxNameBytes;
        while (cut > 0 && (static_cast<uint8_t>(name[cut]) & 0xC0) == 0x80) --cut;   // keep UTF-8 whole
        name.resize(cut);
        name += "...";
    }
    return name;
}

// Part of an alternative being lowered: a regular expression not yet cut
// into lexemes (runs of them merge), or a rule.
struct Piece {
    bool        is_regex = false;
    int32_t     regex = -1;
    Symbol      rule;
    std::string name;
};

class Lowering {
public:
    Lowering(const Ast& ast, std::string_view text, const GbnfLimits& limits)
        : ast_(ast), text_(text), limits_(limits), pool_(limits.max_regex_nodes, 4 * limits.max_nesting) {}

    absl::StatusOr<Grammar> Run(std::string_view root_name) {
        auto root_it = ast_.rule_index.find(std::string(root_name));
        if (root_it == ast_.rule_index.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat("GBNF: no rule named '", std::string(root_name), "' (the start rule)"));
        }
        const int32_t root = root_it->second;
        FindRegularRules(root);
        MarkRegularNodes();
        for (int32_t rule : regular_order_) {
            rule_regex_[rule] = BuildRegex(ast_.rules[rule].body);
            PP_RETURN_IF_ERROR(pool_.status());
        }

        if (rule_regular_[root]) {
            const int32_t regex = rule_regex_[root];
            std::vector<Symbol> alternative;
            if (regex != pool_.Empty()) alternative.push_back(LexemeFor(regex, ast_.rules[root].name));
            out_.rules.push_back(Rule{ast_.rules[root].name, {alternative}});
        } else {
            RuleSymbol(root);
            while (!worklist_.empty() && status_.ok()) {
                const int32_t rule = worklist_.front();
                worklist_.pop_front();
                auto alternatives = LowerChoice(ast_.rules[rule].body, ast_.rules[rule].name);
                out_.rules[output_rule_of_[rule]].alternatives = std::move(alternatives);
                PP_RETURN_IF_ERROR(pool_.status());
            }
        }
        PP_RETURN_IF_ERROR(pool_.status());
        PP_RETURN_IF_ERROR(status_);
        out_.start = 0;
        out_.regex = pool_.Release();
        return std::move(out_);
    }

private:
    // The rules each rule's body refers to.
    std::vector<int32_t> References(int32_t rule) const {
        std::vector<int32_t> refs;
        std::vector<int32_t> stack{ast_.rules[rule].body};
        while (!stack.empty()) {
            const AstNode& node = ast_.nodes[stack.back()];
            stack.pop_back();
            if (node.kind == NodeKind::kRuleRef) refs.push_back(node.rule);
            stack.insert(stack.end(), node.children.begin(), node.children.end());
        }
        return refs;
    }

    // A rule is regular when every rule it refers to is regular (so no
    // cycle is reachable from it). Peeling rules whose references are all
    // settled (Kahn's algorithm over the rules reachable from the root)
    // finds them, in an order where each comes after those it uses.
    void FindRegularRules(int32_t root) {
        const size_t n = ast_.rules.size();
        rule_regular_.assign(n, 0);
        rule_regex_.assign(n, -1);
        output_rule_of_.assign(n, -1);
        std::vector<std::vector<int32_t>> refs(n);
        std::vector<std::vector<int32_t>> referrers(n);
        std::vector<char> reachable(n, 0);
        std::vector<int32_t> stack{root};
        reachable[root] = 1;
        while (!stack.empty()) {
            const int32_t rule = stack.back();
            stack.pop_back();
            refs[rule] = References(rule);
            for (int32_t ref : refs[rule]) {
                referrers[ref].push_back(rule);
                if (!reachable[ref]) {
                    reachable[ref] = 1;
                    stack.push_back(ref);
                }
            }
        }
        std::vector<size_t> unsettled(n, 0);
        for (size_t rule = 0; rule < n; ++rule) {
            if (!reachable[rule]) continue;
            unsettled[rule] = refs[rule].size();   // one count per reference, repeats included
            if (unsettled[rule] == 0) stack.push_back(static_cast<int32_t>(rule));
        }
        while (!stack.empty()) {
            const int32_t rule = stack.back();
            stack.pop_back();
            rule_regular_[rule] = 1;
            regular_order_.push_back(rule);
            for (int32_t referrer : referrers[rule]) {
                if (--unsettled[referrer] == 0) stack.push_back(referrer);
            }
        }
    }

    // Children come before parents in Ast::nodes, so one pass suffices.
    void MarkRegularNodes() {
        node_regular_.assign(ast_.nodes.size(), 0);
        for (size_t i = 0; i < ast_.nodes.size(); ++i) {
            const AstNode& node = ast_.nodes[i];
            bool regular = true;
            if (node.kind == NodeKind::kRuleRef) regular = rule_regular_[node.rule];
            for (int32_t child : node.children) regular = regular && node_regular_[child];
            node_regular_[i] = regular;
        }
    }

    int32_t ClassRegex(const std::vector<CodePointRange>& ranges) {
        std::vector<int32_t> choices;
        for (const CodePointRange& range : ranges) {
            for (const Utf8Sequence& sequence : Utf8Sequences(range)) {
                std::vector<int32_t> bytes;
                for (const ByteRange& b : sequence) bytes.push_back(pool_.ByteRange(b.lo, b.hi));
                choices.push_back(pool_.Concat(bytes));
            }
        }
        return pool_.Alt(choices);
    }

    // Recursion depth is bounded by GbnfLimits::max_nesting; references
    // are to regular rules built before (regular_order_).
    int32_t BuildRegex(int32_t index) {
        const AstNode& node = ast_.nodes[index];
        switch (node.kind) {
            case NodeKind::kLiteral: {
                std::vector<int32_t> bytes;
                for (uint32_t cp : node.code_points) {
                    for (char c : EncodeUtf8(cp)) bytes.push_back(pool_.ByteRange(c, c));
                }
                return pool_.Concat(bytes);
            }
            case NodeKind::kClass:
                return ClassRegex(node.ranges);
            case NodeKind::kRuleRef:
                return rule_regex_[node.rule];
            case NodeKind::kSequence:
            case NodeKind::kChoice: {
                std::vector<int32_t> children;
                for (int32_t child : node.children) children.push_back(BuildRegex(child));
                return node.kind == NodeKind::kSequence ? pool_.Concat(children) : pool_.Alt(children);
            }
            case NodeKind::kRepeat:
                return pool_.Repeat(BuildRegex(node.children[0]), node.min, node.max);
        }
        return pool_.Empty();
    }

    std::string NameOf(int32_t index) const {
        const SourceSpan& span = ast_.nodes[index].span;
        return ShortName(text_.substr(span.begin, span.end - span.begin));
    }

    Symbol LexemeFor(int32_t regex, std::string name) {
        auto it = lexeme_of_regex_.find(regex);
        if (it != lexeme_of_regex_.end()) return Symbol{true, it->second};
        const int32_t index = static_cast<int32_t>(out_.lexemes.size());
        out_.lexemes.push_back(Lexeme{regex, ShortName(name)});
        lexeme_of_regex_.emplace(regex, index);
        return Symbol{true, index};
    }

    Symbol RuleSymbol(int32_t ast_rule) {
        if (output_rule_of_[ast_rule] < 0) {
            output_rule_of_[ast_rule] = NewRule(ast_.rules[ast_rule].name);
            worklist_.push_back(ast_rule);
        }
        return Symbol{false, output_rule_of_[ast_rule]};
    }

    int32_t NewRule(std::string name) {
        if (static_cast<int64_t>(out_.rules.size()) >= limits_.max_rules && status_.ok()) {
            status_ = absl::ResourceExhaustedError(absl::StrCat(
                "GBNF: the grammar needs more than ", limits_.max_rules,
                " rules, counting those generated for groups and repetitions (GbnfLimits::max_rules)"));
        }
        out_.rules.push_back(Rule{std::move(name), {}});
        return static_cast<int32_t>(out_.rules.size() - 1);
    }

    int32_t NewHelper(const std::string& owner, std::string_view what) {
        return NewRule(absl::StrCat(owner, "_", std::string(what), "_", ++helper_count_));
    }

    void Push(std::vector<Piece>* pieces, Piece piece) {
        CountSymbols(1);
        if (status_.ok()) pieces->push_back(std::move(piece));
    }

    void CountSymbols(int64_t n) {
        symbols_ += n;
        if (symbols_ > limits_.max_regex_nodes && status_.ok()) {
            status_ = absl::ResourceExhaustedError(absl::StrCat(
                "GBNF: the grammar's rules hold more than ", limits_.max_regex_nodes,
                " symbols once repetitions are expanded (GbnfLimits::max_regex_nodes)"));
        }
    }

    // Cuts `pieces` into symbols: each run of regular expressions becomes
    // one lexeme (a run matching only "" disappears).
    std::vector<Symbol> Finalize(const std::vector<Piece>& pieces) {
        std::vector<Symbol> symbols;
        std::vector<int32_t> run;
        std::string run_name;
        auto flush = [&] {
            if (run.empty()) return;
            const int32_t regex = pool_.Concat(run);
            if (regex != pool_.Empty()) symbols.push_back(LexemeFor(regex, run_name));
            run.clear();
            run_name.clear();
        };
        for (const Piece& piece : pieces) {
            if (piece.is_regex) {
                run.push_back(piece.regex);
                if (run_name.size() <= kMaxNameBytes) absl::StrAppend(&run_name, run_name.empty() ? "" : " ", piece.name);
            } else {
                flush();
                symbols.push_back(piece.rule);
            }
        }
        flush();
        return symbols;
    }

    // A choice's alternatives; the regular ones merge into one lexeme
    // alternative where the first of them stood.
    std::vector<std::vector<Symbol>> LowerChoice(int32_t choice, const std::string& owner) {
        const AstNode& node = ast_.nodes[choice];
        std::vector<std::vector<Symbol>> alternatives;
        std::vector<int32_t> regular_regexes;
        std::string regular_name;
        size_t regular_slot = 0;
        for (int32_t alternative : node.children) {
            if (!status_.ok()) break;
            if (node_regular_[alternative]) {
                if (regular_regexes.empty()) {
                    regular_slot = alternatives.size();
                    alternatives.emplace_back();
                }
                regular_regexes.push_back(BuildRegex(alternative));
                if (regular_name.size() <= kMaxNameBytes) {
                    absl::StrAppend(&regular_name, regular_name.empty() ? "" : " | ", NameOf(alternative));
                }
                continue;
            }
            std::vector<Piece> pieces;
            LowerInto(alternative, owner, &pieces);
            alternatives.push_back(Finalize(pieces));
        }
        if (!regular_regexes.empty()) {
            const int32_t regex = pool_.Alt(regular_regexes);
            if (regex != pool_.Empty()) alternatives[regular_slot] = {LexemeFor(regex, regular_name)};
        }
        return alternatives;
    }

    // X{m,n} for a non-regular X: m copies of X's pieces in place (their
    // regular edges may merge with the neighbours'), then generated rules
    // for the optional or unbounded rest.
    void LowerRepeat(const AstNode& node, const std::string& owner, std::vector<Piece>* pieces) {
        std::vector<Piece> unit;
        LowerInto(node.children[0], owner, &unit);
        auto push_unit = [&] {
            for (const Piece& piece : unit) Push(pieces, piece);
        };
        // `head` followed by X, as one alternative of a generated rule.
        auto alternative = [&](std::vector<Piece> head, bool with_unit) {
            if (with_unit) head.insert(head.end(), unit.begin(), unit.end());
            return Finalize(head);
        };
        auto rule_piece = [](int32_t rule) { return Piece{false, -1, Symbol{false, rule}, ""}; };
        if (node.max == AstNode::kUnbounded) {
            // X{m,} = X^(m-1) X+ with R ::= R X | X; X* is R ::= R X | ε.
            for (int32_t i = 1; i < node.min && status_.ok(); ++i) push_unit();
            const int32_t loop = NewHelper(owner, node.min == 0 ? "star" : "plus");
            auto recurse = alternative({rule_piece(loop)}, true);
            auto base = alternative({}, node.min > 0);
            out_.rules[loop].alternatives = {std::move(recurse), std::move(base)};
            Push(pieces, rule_piece(loop));
            return;
        }
        for (int32_t i = 0; i < node.min && status_.ok(); ++i) push_unit();
        // Up to max-min more: O_1 ::= X | ε, O_k ::= X O_{k-1} | ε.
        int32_t optional_tail = -1;
        for (int32_t k = 1; k <= node.max - node.min && status_.ok(); ++k) {
            const int32_t helper = NewHelper(owner, "opt");
            std::vector<Piece> some = unit;
            if (k > 1) some.push_back(rule_piece(optional_tail));
            CountSymbols(static_cast<int64_t>(some.size()));
            auto first = Finalize(some);
            out_.rules[helper].alternatives = {std::move(first), {}};
            optional_tail = helper;
        }
        if (optional_tail >= 0) Push(pieces, rule_piece(optional_tail));
    }

    void LowerInto(int32_t index, const std::string& owner, std::vector<Piece>* pieces) {
        if (!status_.ok()) return;
        if (node_regular_[index]) {
            Push(pieces, Piece{true, BuildRegex(index), {}, NameOf(index)});
            return;
        }
        const AstNode& node = ast_.nodes[index];
        switch (node.kind) {
            case NodeKind::kRuleRef:
                Push(pieces, Piece{false, -1, RuleSymbol(node.rule), ""});
                return;
            case NodeKind::kSequence:
                for (int32_t child : node.children) LowerInto(child, owner, pieces);
                return;
            case NodeKind::kChoice: {
                // A one-alternative group splices in, so its regular edges
                // join the lexemes around it.
                if (node.children.size() == 1) {
                    LowerInto(node.children[0], owner, pieces);
                    return;
                }
                const int32_t helper = NewHelper(owner, "group");
                auto alternatives = LowerChoice(index, owner);
                out_.rules[helper].alternatives = std::move(alternatives);
                Push(pieces, Piece{false, -1, Symbol{false, helper}, ""});
                return;
            }
            case NodeKind::kRepeat:
                LowerRepeat(node, owner, pieces);
                return;
            case NodeKind::kLiteral:
            case NodeKind::kClass:
                return;   // always regular
        }
    }

    const Ast&                               ast_;
    std::string_view                         text_;
    const GbnfLimits&                        limits_;
    RegexPool                                pool_;
    std::vector<char>                        rule_regular_;
    std::vector<int32_t>                     regular_order_;
    std::vector<int32_t>                     rule_regex_;
    std::vector<char>                        node_regular_;
    std::vector<int32_t>                     output_rule_of_;
    std::deque<int32_t>                      worklist_;
    std::unordered_map<int32_t, int32_t>     lexeme_of_regex_;
    Grammar                                  out_;
    absl::Status                             status_;
    int64_t                                  symbols_ = 0;
    int32_t                                  helper_count_ = 0;
};

}  // namespace

absl::StatusOr<Grammar> Lower(const Ast& ast, std::string_view text, std::string_view root,
                              const GbnfLimits& limits) {
    return Lowering(ast, text, limits).Run(root);
}

}  // namespace prepack::grammar::gbnf
