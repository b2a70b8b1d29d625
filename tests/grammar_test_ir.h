// Test helpers for the grammar engine: a builder for grammar IR (regex trees,
// lexemes, rules) and naive reference recognizers written straight from the
// definitions, with none of the engine's machinery (no NFA, DFA or Earley):
//  - regex: the set of end positions of a node from a start position, by
//    structural recursion; prefix viability ("some string of the node's
//    language starts with the rest of the text") the same way;
//  - grammar: full derivations D[symbol][i][j] and prefix viability as least
//    fixpoints over tables, which handle left recursion and empty rules
//    without any parsing strategy.
// Only for short texts (the tables are cubic).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/grammar/grammar_ir.h"

namespace prepack::grammar::testing {

class IrBuilder {
public:
    Grammar g;

    int32_t Push(RegexNode node) {
        g.regex.push_back(std::move(node));
        return static_cast<int32_t>(g.regex.size()) - 1;
    }
    int32_t Empty() { return Push(RegexNode{}); }
    int32_t Chars(std::string_view chars) {
        RegexNode n;
        n.kind = RegexNode::Kind::kByteSet;
        for (char c : chars) n.AddByte(static_cast<uint8_t>(c));
        return Push(n);
    }
    int32_t Range(int lo, int hi) {
        RegexNode n;
        n.kind = RegexNode::Kind::kByteSet;
        for (int b = lo; b <= hi; ++b) n.AddByte(static_cast<uint8_t>(b));
        return Push(n);
    }
    // Every byte except those in `chars` and below 0x20.
    int32_t NotChars(std::string_view chars) {
        RegexNode n;
        n.kind = RegexNode::Kind::kByteSet;
        for (int b = 0x20; b < 256; ++b) {
            if (chars.find(static_cast<char>(b)) == std::string_view::npos) n.AddByte(static_cast<uint8_t>(b));
        }
        return Push(n);
    }
    int32_t Lit(std::string_view s) {
        std::vector<int32_t> parts;
        for (char c : s) parts.push_back(Chars(std::string(1, c)));
        return Cat(parts);
    }
    int32_t Cat(std::vector<int32_t> children) {
        RegexNode n;
        n.kind = RegexNode::Kind::kConcat;
        n.children = std::move(children);
        return Push(n);
    }
    int32_t Alt(std::vector<int32_t> children) {
        RegexNode n;
        n.kind = RegexNode::Kind::kAlt;
        n.children = std::move(children);
        return Push(n);
    }
    int32_t Rep(int32_t child, int32_t min, int32_t max) {
        RegexNode n;
        n.kind = RegexNode::Kind::kRepeat;
        n.children = {child};
        n.min = min;
        n.max = max;
        return Push(n);
    }
    int32_t Star(int32_t child) { return Rep(child, 0, RegexNode::kUnbounded); }
    int32_t Plus(int32_t child) { return Rep(child, 1, RegexNode::kUnbounded); }
    int32_t Opt(int32_t child) { return Rep(child, 0, 1); }

    Symbol Lex(int32_t regex, std::string name = "") {
        g.lexemes.push_back({regex, name.empty() ? "lexeme" + std::to_string(g.lexemes.size()) : name});
        return Symbol{true, static_cast<int32_t>(g.lexemes.size()) - 1};
    }
    Symbol LitLex(std::string_view s) { return Lex(Lit(s), std::string(s)); }
    Symbol NewRule(std::string name) {
        g.rules.push_back({std::move(name), {}});
        return Symbol{false, static_cast<int32_t>(g.rules.size()) - 1};
    }
    void Define(Symbol rule, std::vector<std::vector<Symbol>> alternatives) {
        g.rules[rule.index].alternatives = std::move(alternatives);
    }
};

// ---- naive regex -----------------------------------------------------------

inline bool NaiveNonEmpty(const std::vector<RegexNode>& re, int32_t node) {
    const RegexNode& n = re[node];
    switch (n.kind) {
        case RegexNode::Kind::kEmpty: return true;
        case RegexNode::Kind::kByteSet: return (n.bytes[0] | n.bytes[1] | n.bytes[2] | n.bytes[3]) != 0;
        case RegexNode::Kind::kConcat:
            for (int32_t c : n.children) {
                if (!NaiveNonEmpty(re, c)) return false;
            }
            return true;
        case RegexNode::Kind::kAlt:
            for (int32_t c : n.children) {
                if (NaiveNonEmpty(re, c)) return true;
            }
            return false;
        case RegexNode::Kind::kRepeat: return n.min == 0 || NaiveNonEmpty(re, n.children[0]);
    }
    return false;
}

// The positions j such that s[i, j) is in the language of `node`.
inline std::set<int> NaiveEnds(const std::vector<RegexNode>& re, int32_t node, std::string_view s, int i) {
    const RegexNode& n = re[node];
    const int len = static_cast<int>(s.size());
    std::set<int> out;
    auto step_all = [&](const std::set<int>& from, int32_t child) {
        std::set<int> to;
        for (int j : from) {
            for (int k : NaiveEnds(re, child, s, j)) to.insert(k);
        }
        return to;
    };
    switch (n.kind) {
        case RegexNode::Kind::kEmpty: out.insert(i); break;
        case RegexNode::Kind::kByteSet:
            if (i < len && n.HasByte(static_cast<uint8_t>(s[i]))) out.insert(i + 1);
            break;
        case RegexNode::Kind::kConcat: {
            out.insert(i);
            for (int32_t c : n.children) out = step_all(out, c);
            break;
        }
        case RegexNode::Kind::kAlt:
            for (int32_t c : n.children) {
                for (int k : NaiveEnds(re, c, s, i)) out.insert(k);
            }
            break;
        case RegexNode::Kind::kRepeat: {
            // Copies beyond min + len cannot reach a new position (each
            // useful copy past min consumes at least one byte).
            const int limit = n.max == RegexNode::kUnbounded ? n.min + len + 1 : n.max;
            std::set<int> cur{i};
            for (int k = 0; k <= limit; ++k) {
                if (k >= n.min) out.insert(cur.begin(), cur.end());
                if (k == limit || cur.empty()) break;
                cur = step_all(cur, n.children[0]);
            }
            break;
        }
    }
    return out;
}

// Some string of `node`'s language starts with s[i, len).
inline bool NaiveViable(const std::vector<RegexNode>& re, int32_t node, std::string_view s, int i) {
    const RegexNode& n = re[node];
    const int len = static_cast<int>(s.size());
    if (i == len) return NaiveNonEmpty(re, node);
    switch (n.kind) {
        case RegexNode::Kind::kEmpty: return false;
        case RegexNode::Kind::kByteSet: return i == len - 1 && n.HasByte(static_cast<uint8_t>(s[i]));
        case RegexNode::Kind::kConcat: {
            // The text runs out inside child m: the children before it match
            // fully, child m is viable, the children after it are non-empty.
            std::set<int> before{i};
            for (size_t m = 0; m < n.children.size(); ++m) {
                bool rest_ok = true;
                for (size_t r = m + 1; r < n.children.size(); ++r) rest_ok = rest_ok && NaiveNonEmpty(re, n.children[r]);
                if (rest_ok) {
                    for (int j : before) {
                        if (NaiveViable(re, n.children[m], s, j)) return true;
                    }
                }
                std::set<int> next;
                for (int j : before) {
                    for (int k : NaiveEnds(re, n.children[m], s, j)) next.insert(k);
                }
                before = std::move(next);
            }
            return false;
        }
        case RegexNode::Kind::kAlt:
            for (int32_t c : n.children) {
                if (NaiveViable(re, c, s, i)) return true;
            }
            return false;
        case RegexNode::Kind::kRepeat: {
            const int32_t c = n.children[0];
            const int limit = n.max == RegexNode::kUnbounded ? n.min + len + 1 : n.max;
            std::set<int> cur{i};
            for (int k = 0; k < limit && !cur.empty(); ++k) {
                // The text runs out inside copy k+1; the copies still needed
                // after it must be non-empty.
                const bool rest_ok = k + 1 >= n.min || NaiveNonEmpty(re, c);
                if (rest_ok) {
                    for (int j : cur) {
                        if (NaiveViable(re, c, s, j)) return true;
                    }
                }
                std::set<int> next;
                for (int j : cur) {
                    for (int e : NaiveEnds(re, c, s, j)) next.insert(e);
                }
                cur = std::move(next);
            }
            return false;
        }
    }
    return false;
}

// ---- naive grammar ---------------------------------------------------------

class NaiveGrammar {
public:
    NaiveGrammar(const Grammar& g, std::string_view s) : g_(g), s_(s), n_(static_cast<int>(s.size())) {
        const size_t nr = g.rules.size(), nl = g.lexemes.size();
        lex_ends_.assign(nl, std::vector<std::set<int>>(n_ + 1));
        for (size_t l = 0; l < nl; ++l) {
            for (int i = 0; i <= n_; ++i) lex_ends_[l][i] = NaiveEnds(g.regex, g.lexemes[l].regex, s, i);
        }
        rule_ends_.assign(nr, std::vector<std::set<int>>(n_ + 1));
        productive_.assign(nr, 0);
        viable_.assign(nr, std::vector<char>(n_ + 1, 0));
        // Least fixpoints, iterated to convergence.
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < nr; ++r) {
                for (const auto& alt : g.rules[r].alternatives) {
                    bool all = true;
                    for (const Symbol& x : alt) all = all && Productive(x);
                    if (all && !productive_[r]) productive_[r] = 1, changed = true;
                    for (int i = 0; i <= n_; ++i) {
                        for (int j : SeqEnds(alt, 0, alt.size(), i)) changed |= rule_ends_[r][i].insert(j).second;
                    }
                }
            }
        }
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < nr; ++r) {
                for (int i = 0; i <= n_; ++i) {
                    if (viable_[r][i]) continue;
                    if (RuleViableOnce(r, i)) viable_[r][i] = 1, changed = true;
                }
            }
        }
    }

    bool Derives(int32_t rule) const { return rule_ends_[rule][0].count(n_) > 0; }
    bool Viable(int32_t rule) const { return viable_[rule][0] != 0; }
    bool Productive(const Symbol& x) const {
        return x.is_lexeme ? NaiveNonEmpty(g_.regex, g_.lexemes[x.index].regex) : productive_[x.index] != 0;
    }

private:
    std::set<int> Ends(const Symbol& x, int i) const {
        return x.is_lexeme ? lex_ends_[x.index][i] : rule_ends_[x.index][i];
    }
    bool SymbolViable(const Symbol& x, int i) const {
        return x.is_lexeme ? NaiveViable(g_.regex, g_.lexemes[x.index].regex, s_, i) : viable_[x.index][i] != 0;
    }
    std::set<int> SeqEnds(const std::vector<Symbol>& alt, size_t from, size_t to, int i) const {
        std::set<int> cur{i};
        for (size_t k = from; k < to; ++k) {
            std::set<int> next;
            for (int j : cur) {
                for (int e : Ends(alt[k], j)) next.insert(e);
            }
            cur = std::move(next);
        }
        return cur;
    }
    bool RuleViableOnce(size_t r, int i) const {
        for (const auto& alt : g_.rules[r].alternatives) {
            if (alt.empty()) {
                if (i == n_) return true;
                continue;
            }
            for (size_t m = 0; m < alt.size(); ++m) {
                bool rest = true;
                for (size_t k = m + 1; k < alt.size(); ++k) rest = rest && Productive(alt[k]);
                if (!rest) continue;
                for (int j : SeqEnds(alt, 0, m, i)) {
                    if (SymbolViable(alt[m], j)) return true;
                }
            }
        }
        return false;
    }

    const Grammar& g_;
    std::string s_;
    int n_;
    std::vector<std::vector<std::set<int>>> lex_ends_, rule_ends_;
    std::vector<char> productive_;
    std::vector<std::vector<char>> viable_;
};

}  // namespace prepack::grammar::testing
