// Compile(): validates a grammar IR, builds each lexeme's NFA and lazy DFA
// and the Earley tables. Every malformed input is an INVALID_ARGUMENT
// naming the problem; every size past CompileLimits a RESOURCE_EXHAUSTED
// naming the limit.
#include <algorithm>
#include <utility>

#include "core/grammar/compiled_grammar.h"

namespace prepack::grammar {

namespace {

// Regex trees are walked recursively (NFA construction); this bounds the
// recursion depth so that a hostile tree cannot overflow the stack.
constexpr int32_t kMaxRegexDepth = 1000;

absl::Status ValidateRegexNode(const Grammar& g, int32_t index) {
    const RegexNode& node = g.regex[index];
    const bool composite = node.kind == RegexNode::Kind::kConcat || node.kind == RegexNode::Kind::kAlt ||
                           node.kind == RegexNode::Kind::kRepeat;
    if (!composite && !node.children.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("regex node ", index, " is empty or a byte set but has children"));
    }
    for (int32_t child : node.children) {
        if (child < 0 || child >= static_cast<int32_t>(g.regex.size())) {
            return absl::InvalidArgumentError(absl::StrCat("regex node ", index, " has child ", child,
                                                           ", outside the ", g.regex.size(), " nodes"));
        }
    }
    if (node.kind == RegexNode::Kind::kRepeat) {
        if (node.children.size() != 1) {
            return absl::InvalidArgumentError(absl::StrCat("regex repeat node ", index, " has ",
                                                           node.children.size(), " children, not 1"));
        }
        if (node.min < 0 || (node.max != RegexNode::kUnbounded && node.max < node.min)) {
            return absl::InvalidArgumentError(
                absl::StrCat("regex repeat node ", index, " has bad bounds {", node.min, ",", node.max, "}"));
        }
    }
    return absl::OkStatus();
}

// Checks every node once, then that no lexeme's tree has a cycle or nests
// deeper than kMaxRegexDepth (an iterative walk: the check itself must not
// recurse on hostile input).
absl::Status ValidateRegex(const Grammar& g) {
    for (int32_t i = 0; i < static_cast<int32_t>(g.regex.size()); ++i) PP_RETURN_IF_ERROR(ValidateRegexNode(g, i));
    enum : char { kUnseen, kOnPath, kDone };
    std::vector<char> mark(g.regex.size(), kUnseen);
    std::vector<int32_t> height(g.regex.size(), 0);
    for (size_t l = 0; l < g.lexemes.size(); ++l) {
        const int32_t root = g.lexemes[l].regex;
        if (root < 0 || root >= static_cast<int32_t>(g.regex.size())) {
            return absl::InvalidArgumentError(absl::StrCat("lexeme ", l, " ('", g.lexemes[l].name, "') has regex ",
                                                           root, ", outside the ", g.regex.size(), " nodes"));
        }
        if (mark[root] == kDone) continue;
        std::vector<std::pair<int32_t, size_t>> stack{{root, 0}};   // node, next child
        mark[root] = kOnPath;
        while (!stack.empty()) {
            auto& [node, next_child] = stack.back();
            const auto& children = g.regex[node].children;
            if (next_child < children.size()) {
                const int32_t child = children[next_child++];
                if (mark[child] == kOnPath) {
                    return absl::InvalidArgumentError(absl::StrCat("regex node ", child, " contains itself (a cycle)"));
                }
                if (mark[child] == kUnseen) {
                    mark[child] = kOnPath;
                    stack.push_back({child, 0});
                }
                continue;
            }
            int32_t h = 1;
            for (int32_t child : children) h = std::max(h, height[child] + 1);
            height[node] = h;
            mark[node] = kDone;
            if (h > kMaxRegexDepth) {
                return absl::InvalidArgumentError(absl::StrCat("lexeme '", g.lexemes[l].name, "' nests deeper than ",
                                                               kMaxRegexDepth, " regex levels"));
            }
            stack.pop_back();
        }
    }
    return absl::OkStatus();
}

absl::Status ValidateRules(const Grammar& g, const CompileLimits& limits) {
    if (g.rules.empty()) return absl::InvalidArgumentError("the grammar has no rules");
    if (static_cast<int64_t>(g.rules.size()) > limits.max_rules) {
        return absl::ResourceExhaustedError(absl::StrCat("the grammar has ", g.rules.size(),
                                                         " rules, over CompileLimits::max_rules = ", limits.max_rules));
    }
    if (g.start < 0 || g.start >= static_cast<int32_t>(g.rules.size())) {
        return absl::InvalidArgumentError(absl::StrCat("start rule ", g.start, " is outside the ", g.rules.size(), " rules"));
    }
    for (const Rule& rule : g.rules) {
        if (rule.alternatives.empty()) {
            return absl::InvalidArgumentError(absl::StrCat("rule '", rule.name, "' has no alternatives"));
        }
        for (const auto& alternative : rule.alternatives) {
            for (const Symbol& s : alternative) {
                const size_t bound = s.is_lexeme ? g.lexemes.size() : g.rules.size();
                if (s.index < 0 || static_cast<size_t>(s.index) >= bound) {
                    return absl::InvalidArgumentError(absl::StrCat("rule '", rule.name, "' refers to ",
                                                                   s.is_lexeme ? "lexeme " : "rule ", s.index,
                                                                   ", outside the ", bound, " defined"));
                }
            }
        }
    }
    return absl::OkStatus();
}

}  // namespace

CompiledGrammar::~CompiledGrammar() = default;
const Grammar& CompiledGrammar::grammar() const { return impl_->grammar; }
const TokenVocabulary& CompiledGrammar::vocabulary() const { return *impl_->vocabulary; }

absl::StatusOr<std::shared_ptr<const CompiledGrammar>> Compile(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab,
                                                             const CompileLimits& limits) {
    if (vocab == nullptr) return absl::InvalidArgumentError("Compile needs a vocabulary");
    if (static_cast<int64_t>(grammar.regex.size()) > limits.max_regex_nodes) {
        return absl::ResourceExhaustedError(absl::StrCat("the grammar has ", grammar.regex.size(),
                                                         " regex nodes, over CompileLimits::max_regex_nodes = ",
                                                         limits.max_regex_nodes));
    }
    PP_RETURN_IF_ERROR(ValidateRules(grammar, limits));
    PP_RETURN_IF_ERROR(ValidateRegex(grammar));

    auto impl = std::make_unique<CompiledGrammar::Impl>();
    int64_t nfa_states = 0;
    std::vector<int64_t> count_memo;
    for (const Lexeme& lexeme : grammar.lexemes) {
        nfa_states += CountNfaStates(grammar.regex, lexeme.regex, limits.max_nfa_states + 1, &count_memo);
        if (nfa_states > limits.max_nfa_states) {
            return absl::ResourceExhaustedError(absl::StrCat(
                "the lexemes expand to more than CompileLimits::max_nfa_states = ", limits.max_nfa_states,
                " NFA states (at lexeme '", lexeme.name, "'; counted repeats are expanded into copies)"));
        }
        impl->dfas.push_back(std::make_unique<LexemeDfa>(BuildLexemeNfa(grammar.regex, lexeme.regex),
                                                         limits.max_dfa_states_per_lexeme));
    }
    PP_ASSIGN_OR_RETURN(impl->tables, BuildEarleyTables(grammar, impl->dfas));
    impl->grammar = std::move(grammar);
    impl->vocabulary = std::move(vocab);
    impl->limits = limits;
    std::shared_ptr<CompiledGrammar> compiled(new CompiledGrammar());
    compiled->impl_ = std::move(impl);
    return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

}  // namespace prepack::grammar
