#include "core/grammar/gbnf_lowering.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "core/grammar/gbnf_regex_pool.h"

namespace prepack::grammar::gbnf {
namespace {

using NodeKind = AstNode::Kind;

// Lexeme names are for messages: a short, single-line spelling.
constexpr size_t kMaxNameBytes = 60;

// Size estimates saturate here: far above any limit, far below overflow.
constexpr int64_t kSizeSaturation = int64_t{1} << 40;

int64_t AddSizes(int64_t a, int64_t b) { return std::min(a + b, kSizeSaturation); }
int64_t MultiplySize(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    return a > kSizeSaturation / b ? kSizeSaturation : std::min(a * b, kSizeSaturation);
}

int64_t Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

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
        : ast_(ast),
          text_(text),
          limits_(limits),
          pool_(limits.max_regex_nodes, 4 * limits.max_nesting),
          lexeme_cap_(std::max<int64_t>(1, std::min(limits.max_lexeme_nodes, limits.max_regex_nodes))) {}

    absl::StatusOr<Grammar> Run(std::string_view root_name) {
        auto root_it = ast_.rule_index.find(std::string(root_name));
        if (root_it == ast_.rule_index.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat("GBNF: no rule named '", std::string(root_name), "' (the start rule)"));
        }
        const int32_t root = root_it->second;
        FindRegularRules(root);
        ChooseInlinedRules();
        MarkRegularNodes();
        for (int32_t rule : regular_order_) {
            if (!rule_regular_[rule]) continue;
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

    // A regular rule is inlined (its uses become regular expressions) only
    // while its expanded size stays within the lexeme cap; a larger one,
    // and every rule using it, stays a rule for the Earley parser, which
    // then shares it between its uses instead of copying it into each.
    // Dependency order settles the rules a rule uses before the rule.
    void ChooseInlinedRules() {
        rule_size_.assign(ast_.rules.size(), kSizeSaturation);
        node_size_.assign(ast_.nodes.size(), -1);
        for (int32_t rule : regular_order_) {
            const int64_t size = EstimateSize(ast_.rules[rule].body);
            if (size > lexeme_cap_) {
                rule_regular_[rule] = 0;   // rule_size_ stays saturated: users are not inlined either
            } else {
                rule_size_[rule] = size;
            }
        }
    }

    // An upper bound of the pool's expanded size of BuildRegex(index)
    // (RegexPool only shrinks what this counts: flattening, merged byte
    // sets, dropped ""), saturating. A reference to a rule that is not
    // inlined saturates, so what holds one is never a lexeme. Memoized;
    // recursion follows the node's nesting (bounded by max_nesting), not
    // references.
    int64_t EstimateSize(int32_t index) {
        if (node_size_[index] >= 0) return node_size_[index];
        const AstNode& node = ast_.nodes[index];
        int64_t size = 1;
        switch (node.kind) {
            case NodeKind::kLiteral:
                for (uint32_t cp : node.code_points) size = AddSizes(size, Utf8Length(cp));
                break;
            case NodeKind::kClass:
                for (const CodePointRange& range : node.ranges) {
                    for (const Utf8Sequence& sequence : Utf8Sequences(range)) {
                        size = AddSizes(size, 1 + static_cast<int64_t>(sequence.size()));
                    }
                }
                break;
            case NodeKind::kRuleRef:
                size = rule_size_[node.rule];
                break;
            case NodeKind::kSequence:
            case NodeKind::kChoice:
                for (int32_t child : node.children) size = AddSizes(size, EstimateSize(child));
                break;
            case NodeKind::kRepeat:
                if (node.max != 0) {
                    const int64_t copies = std::max<int64_t>({int64_t{node.min}, int64_t{node.max}, 1});
                    size = AddSizes(1, MultiplySize(EstimateSize(node.children[0]), copies));
                }
                break;
        }
        node_size_[index] = size;
        return size;
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
            EstimateSize(static_cast<int32_t>(i));   // children are already memoized: no deep recursion
        }
    }

    // A node that may become (part of) one lexeme.
    bool FitsOneLexeme(int32_t index) const { return node_regular_[index] && node_size_[index] <= lexeme_cap_; }

    int32_t LiteralRegex(const std::vector<uint32_t>& code_points, size_t begin, size_t end) {
        std::vector<int32_t> bytes;
        for (size_t i = begin; i < end; ++i) {
            for (char c : EncodeUtf8(code_points[i])) bytes.push_back(pool_.ByteRange(c, c));
        }
        return pool_.Concat(bytes);
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
            case NodeKind::kLiteral:
                return LiteralRegex(node.code_points, 0, node.code_points.size());
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
    // one lexeme (a run matching only "" disappears), or several
    // consecutive ones where the run would outgrow the lexeme cap.
    std::vector<Symbol> Finalize(const std::vector<Piece>& pieces) {
        std::vector<Symbol> symbols;
        std::vector<int32_t> run;
        std::string run_name;
        int64_t run_size = 1;   // the concatenation node itself
        auto flush = [&] {
            run_size = 1;
            if (run.empty()) return;
            const int32_t regex = pool_.Concat(run);
            if (regex != pool_.Empty()) symbols.push_back(LexemeFor(regex, run_name));
            run.clear();
            run_name.clear();
        };
        for (const Piece& piece : pieces) {
            if (piece.is_regex) {
                const int64_t size = pool_.expanded_size(piece.regex);
                if (!run.empty() && AddSizes(run_size, size) > lexeme_cap_) flush();
                run.push_back(piece.regex);
                run_size = AddSizes(run_size, size);
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
    // alternative where the first of them stood (into several, each within
    // the lexeme cap, where they are many or large).
    std::vector<std::vector<Symbol>> LowerChoice(int32_t choice, const std::string& owner) {
        const AstNode& node = ast_.nodes[choice];
        std::vector<std::vector<Symbol>> alternatives;
        std::vector<int32_t> regular_regexes;
        std::string regular_name;
        size_t regular_slot = 0;
        int64_t regular_size = 1;   // the choice node itself
        auto flush = [&] {
            if (!regular_regexes.empty()) {
                const int32_t regex = pool_.Alt(regular_regexes);
                if (regex != pool_.Empty()) alternatives[regular_slot] = {LexemeFor(regex, regular_name)};
            }
            regular_regexes.clear();
            regular_name.clear();
            regular_size = 1;
        };
        for (int32_t alternative : node.children) {
            if (!status_.ok()) break;
            if (FitsOneLexeme(alternative)) {
                const int32_t regex = BuildRegex(alternative);
                const int64_t size = pool_.expanded_size(regex);
                if (!regular_regexes.empty() && AddSizes(regular_size, size) > lexeme_cap_) flush();
                if (regular_regexes.empty()) {
                    regular_slot = alternatives.size();
                    alternatives.emplace_back();
                }
                regular_regexes.push_back(regex);
                regular_size = AddSizes(regular_size, size);
                if (regular_name.size() <= kMaxNameBytes) {
                    absl::StrAppend(&regular_name, regular_name.empty() ? "" : " | ", NameOf(alternative));
                }
                continue;
            }
            std::vector<Piece> pieces;
            LowerInto(alternative, owner, &pieces);
            alternatives.push_back(Finalize(pieces));
        }
        flush();
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

    // X{m,n} for a regular X too large to repeat inside one lexeme: as
    // consecutive pieces X{k}... X{r} (m copies) then X{0,k}... (up to n-m
    // more) or X* (no limit), each within the lexeme cap; Finalize then
    // packs neighbours into lexemes. The same language, since i copies
    // then j copies of X are i+j copies.
    void LowerCountedRegular(int32_t index, std::vector<Piece>* pieces) {
        const AstNode& node = ast_.nodes[index];
        const int32_t item = BuildRegex(node.children[0]);
        const int64_t item_size = pool_.expanded_size(item);
        const int64_t most_copies = node.max == AstNode::kUnbounded ? std::max(node.min, 1) : node.max;
        const int32_t per_piece = static_cast<int32_t>(
            std::clamp<int64_t>((lexeme_cap_ - 1) / std::max<int64_t>(item_size, 1), 1, most_copies));
        const std::string name = NameOf(index);
        auto push_repeat = [&](int32_t min, int32_t max) { Push(pieces, Piece{true, pool_.Repeat(item, min, max), {}, name}); };
        for (int32_t left = node.min; left > 0 && status_.ok(); left -= per_piece) {
            const int32_t copies = std::min(left, per_piece);
            push_repeat(copies, copies);
        }
        if (node.max == AstNode::kUnbounded) {
            push_repeat(0, AstNode::kUnbounded);
            return;
        }
        for (int32_t left = node.max - node.min; left > 0 && status_.ok(); left -= per_piece) {
            push_repeat(0, std::min(left, per_piece));
        }
    }

    void LowerInto(int32_t index, const std::string& owner, std::vector<Piece>* pieces) {
        if (!status_.ok()) return;
        if (FitsOneLexeme(index)) {
            Push(pieces, Piece{true, BuildRegex(index), {}, NameOf(index)});
            return;
        }
        // Here the node holds recursion, or is regular but over the lexeme
        // cap: either way it is cut at its structure.
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
                if (FitsOneLexeme(node.children[0]) && node_size_[node.children[0]] < lexeme_cap_) {
                    LowerCountedRegular(index, pieces);
                } else {
                    LowerRepeat(node, owner, pieces);
                }
                return;
            case NodeKind::kLiteral: {
                // A literal longer than a lexeme may hold: consecutive chunks.
                const size_t per_piece = static_cast<size_t>(std::max<int64_t>(1, (lexeme_cap_ - 1) / 4));
                for (size_t begin = 0; begin < node.code_points.size() && status_.ok(); begin += per_piece) {
                    const size_t end = std::min(node.code_points.size(), begin + per_piece);
                    Push(pieces, Piece{true, LiteralRegex(node.code_points, begin, end), {}, NameOf(index)});
                }
                return;
            }
            case NodeKind::kClass:
                // One code point cannot be cut: over the cap, only
                // max_regex_nodes bounds it.
                Push(pieces, Piece{true, BuildRegex(index), {}, NameOf(index)});
                return;
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
    std::vector<int64_t>                     rule_size_;   // EstimateSize of an inlined rule; saturated otherwise
    std::vector<int64_t>                     node_size_;   // EstimateSize memo, -1 before
    int64_t                                  lexeme_cap_;  // min(max_lexeme_nodes, max_regex_nodes)
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
