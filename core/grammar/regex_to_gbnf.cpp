// The regex tree (ecma_regex.h) written as GBNF: the same structure, with
// each character class written either as a GBNF class over code points (the
// regex is the whole text) or as a rule for every JSON spelling of those
// characters (the regex is a JSON string's value).
#include "core/grammar/regex_to_gbnf.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/grammar/json_schema.h"

namespace prepack::grammar {
namespace {

// A code point as GBNF reads it inside a literal or a class: printable
// ASCII as itself where the context allows, everything else as an escape, so
// the output never depends on how a GBNF reader treats raw control or
// non-ASCII bytes.
std::string EscapeCodePoint(char32_t c) {
    if (c < 0x80) return absl::StrFormat("\\x%02X", static_cast<uint32_t>(c));
    if (c <= 0xFFFF) return absl::StrFormat("\\u%04X", static_cast<uint32_t>(c));
    return absl::StrFormat("\\U%08X", static_cast<uint32_t>(c));
}

std::string LiteralChar(char32_t c) {
    if (c == '"') return "\\\"";
    if (c == '\\') return "\\\\";
    if (c == '\n') return "\\n";
    if (c == '\t') return "\\t";
    if (c == '\r') return "\\r";
    if (c >= 0x20 && c < 0x7F) return std::string(1, static_cast<char>(c));
    return EscapeCodePoint(c);
}

// Inside [...] only letters, digits and '_' go raw: ']' '-' '^' '\' and the
// rest are escaped rather than trusted to each reader's rules.
std::string ClassChar(char32_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
        return std::string(1, static_cast<char>(c));
    }
    return EscapeCodePoint(c);
}

std::string ClassText(const CodePointSet& set) {
    std::string out = "[";
    for (const CodePointSet::Range& r : set.ranges()) {
        out += ClassChar(r.lo);
        if (r.hi == r.lo) continue;
        if (r.hi > r.lo + 1) out += "-";
        out += ClassChar(r.hi);
    }
    return out + "]";
}

// A piece of GBNF for a subtree, with what its parent needs to combine it.
struct Piece {
    std::string text;
    // Binds as one unit under a postfix operator (a class, a rule, a
    // one-character literal, a parenthesised group).
    bool atomic = true;
    // Set for a quoted literal: its escaped body, so neighbours merge ("ab").
    std::optional<std::string> literal;
    bool is_empty_string = false;
};

Piece EmptyString() { return Piece{"\"\"", true, std::nullopt, true}; }

Piece LiteralPiece(std::string body, int chars) {
    Piece p;
    p.text = absl::StrCat("\"", body, "\"");
    p.atomic = chars == 1;
    p.literal = std::move(body);
    return p;
}

// Writes the hex digits 0..15 in `lo..hi` as a GBNF class (either case).
std::string HexDigitClass(int lo, int hi) {
    if (lo == hi && lo < 10) return absl::StrCat("\"", lo, "\"");
    std::string out = "[";
    if (lo <= 9) {
        const int top = std::min(hi, 9);
        out += absl::StrCat(lo);
        if (top > lo) absl::StrAppend(&out, "-", top);
    }
    if (hi >= 10) {
        const int from = std::max(lo, 10);
        for (const char base : {'a', 'A'}) {
            out += static_cast<char>(base + from - 10);
            if (hi > from) absl::StrAppend(&out, "-", std::string(1, static_cast<char>(base + hi - 10)));
        }
    }
    return out + "]";
}

// The `digits`-digit hex numbers lo..hi as sequences of per-digit ranges
// (the usual split of a numeric range by its leading digit).
using DigitRanges = std::vector<std::pair<int, int>>;
void SplitHexRange(uint32_t lo, uint32_t hi, int digits, DigitRanges prefix, std::vector<DigitRanges>* out) {
    if (digits == 0) {
        out->push_back(std::move(prefix));
        return;
    }
    const uint32_t base = 1u << (4 * (digits - 1));
    const int lead_lo = static_cast<int>(lo / base), lead_hi = static_cast<int>(hi / base);
    auto with = [&](int a, int b) {
        DigitRanges p = prefix;
        p.emplace_back(a, b);
        return p;
    };
    if (lead_lo == lead_hi) {
        SplitHexRange(lo % base, hi % base, digits - 1, with(lead_lo, lead_lo), out);
        return;
    }
    int full_lo = lead_lo, full_hi = lead_hi;
    if (lo % base != 0) {
        SplitHexRange(lo % base, base - 1, digits - 1, with(lead_lo, lead_lo), out);
        ++full_lo;
    }
    const bool hi_partial = hi % base != base - 1;
    if (hi_partial) --full_hi;
    if (full_lo <= full_hi) {
        DigitRanges p = with(full_lo, full_hi);
        for (int k = 1; k < digits; ++k) p.emplace_back(0, 15);
        out->push_back(std::move(p));
    }
    if (hi_partial) SplitHexRange(0, hi % base, digits - 1, with(lead_hi, lead_hi), out);
}

// The spellings "\\uXXXX" of lo..hi (XXXX in either case), as GBNF
// alternatives; a fixed decimal digit joins the literal ("\\u00" [2-7] ...).
std::vector<std::string> UnicodeEscapeRange(uint32_t lo, uint32_t hi) {
    std::vector<DigitRanges> seqs;
    SplitHexRange(lo, hi, 4, {}, &seqs);
    std::vector<std::string> alts;
    for (const DigitRanges& seq : seqs) {
        std::string literal = "\\\\u";
        std::vector<std::string> parts;
        for (const auto& [a, b] : seq) {
            if (a == b && a < 10) {
                absl::StrAppend(&literal, a);
                continue;
            }
            if (!literal.empty()) parts.push_back(absl::StrCat("\"", literal, "\""));
            literal.clear();
            parts.push_back(HexDigitClass(a, b));
        }
        if (!literal.empty()) parts.push_back(absl::StrCat("\"", literal, "\""));
        alts.push_back(absl::StrJoin(parts, " "));
    }
    return alts;
}

// Alternatives as one GBNF unit.
std::string Grouped(const std::vector<std::string>& alts) {
    return alts.size() == 1 ? alts[0] : absl::StrCat("( ", absl::StrJoin(alts, " | "), " )");
}

// Every JSON spelling of one character of `set`, as alternatives of a rule.
std::string JsonCharAlternatives(const CodePointSet& set) {
    std::vector<std::string> alts;
    // Raw: JSON forbids '"', '\' and the C0 controls unescaped.
    CodePointSet forbidden_raw;
    forbidden_raw.AddRange(0, 0x1F);
    forbidden_raw.Add('"');
    forbidden_raw.Add('\\');
    CodePointSet raw;
    for (const CodePointSet::Range& r : set.ranges()) {
        // set minus forbidden_raw, range by range.
        char32_t from = r.lo;
        for (const CodePointSet::Range& f : forbidden_raw.ranges()) {
            if (f.hi < from || f.lo > r.hi) continue;
            if (f.lo > from) raw.AddRange(from, f.lo - 1);
            from = f.hi + 1;
        }
        if (from <= r.hi) raw.AddRange(from, r.hi);
    }
    if (!raw.empty()) alts.push_back(ClassText(raw));
    // Two-character escapes.
    std::string short_escapes;
    for (const auto& [ch, letter] : std::vector<std::pair<char32_t, char>>{
             {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}}) {
        if (set.Contains(ch)) short_escapes += ClassChar(static_cast<unsigned char>(letter));
    }
    if (!short_escapes.empty()) alts.push_back(absl::StrCat("\"\\\\\" [", short_escapes, "]"));
    // \uXXXX for the BMP, surrogate pairs above it.
    for (const CodePointSet::Range& r : set.ranges()) {
        if (r.lo <= 0xFFFF) {
            for (std::string& a : UnicodeEscapeRange(r.lo, std::min<uint32_t>(r.hi, 0xFFFF))) alts.push_back(std::move(a));
        }
        if (r.hi < 0x10000) continue;
        const uint32_t lo = std::max<uint32_t>(r.lo, 0x10000) - 0x10000, hi = r.hi - 0x10000;
        const uint32_t high_lo = lo >> 10, high_hi = hi >> 10;
        auto pair = [&](uint32_t h_from, uint32_t h_to, uint32_t l_from, uint32_t l_to) {
            alts.push_back(absl::StrCat(Grouped(UnicodeEscapeRange(0xD800 + h_from, 0xD800 + h_to)), " ",
                                        Grouped(UnicodeEscapeRange(0xDC00 + l_from, 0xDC00 + l_to))));
        };
        if (high_lo == high_hi) {
            pair(high_lo, high_lo, lo & 0x3FF, hi & 0x3FF);
            continue;
        }
        uint32_t full_lo = high_lo, full_hi = high_hi;
        if ((lo & 0x3FF) != 0) {
            pair(high_lo, high_lo, lo & 0x3FF, 0x3FF);
            ++full_lo;
        }
        const bool hi_partial = (hi & 0x3FF) != 0x3FF;
        if (hi_partial) --full_hi;
        if (full_lo <= full_hi) pair(full_lo, full_hi, 0, 0x3FF);
        if (hi_partial) pair(high_hi, high_hi, 0, hi & 0x3FF);
    }
    return absl::StrJoin(alts, " | ");
}

// Writes the GBNF for regex trees. Raw mode: classes inline. JSON mode: one
// rule per distinct class, for its JSON spellings.
class GbnfWriter {
public:
    GbnfWriter(bool json_content, std::string rule_prefix)
        : json_content_(json_content), prefix_(std::move(rule_prefix)) {}

    // nullopt: the subtree matches no string.
    std::optional<Piece> Write(const RegexTree& t) {
        switch (t.kind) {
            case RegexTree::Kind::kEmpty: return EmptyString();
            case RegexTree::Kind::kSet: return WriteSet(t.set);
            case RegexTree::Kind::kConcat: return WriteConcat(t.children);
            case RegexTree::Kind::kAlt: return WriteAlt(t.children);
            case RegexTree::Kind::kRepeat: return WriteRepeat(t);
        }
        return std::nullopt;
    }

    std::optional<Piece> WriteConcat(const std::vector<RegexTree>& children) {
        std::vector<Piece> parts;
        for (const RegexTree& c : children) {
            std::optional<Piece> p = Write(c);
            if (!p) return std::nullopt;
            if (p->is_empty_string) continue;
            if (p->literal && !parts.empty() && parts.back().literal) {
                Piece merged = LiteralPiece(*parts.back().literal + *p->literal, 2);
                parts.back() = std::move(merged);
                continue;
            }
            parts.push_back(std::move(*p));
        }
        if (parts.empty()) return EmptyString();
        if (parts.size() == 1) return parts[0];
        std::vector<std::string> texts;
        for (const Piece& p : parts) texts.push_back(p.text);
        Piece out;
        out.text = absl::StrJoin(texts, " ");
        out.atomic = false;
        return out;
    }

    std::optional<Piece> WriteAlt(const std::vector<RegexTree>& children) {
        std::vector<std::string> texts;
        std::optional<Piece> only;
        for (const RegexTree& c : children) {
            std::optional<Piece> p = Write(c);
            if (!p) continue;   // a branch that matches nothing adds nothing
            texts.push_back(p->text);
            only = std::move(p);
        }
        if (texts.empty()) return std::nullopt;
        if (texts.size() == 1) return only;
        Piece out;
        out.text = absl::StrCat("( ", absl::StrJoin(texts, " | "), " )");
        return out;
    }

    std::optional<Piece> WriteRepeat(const RegexTree& t) {
        std::optional<Piece> child = Write(t.children[0]);
        if (!child) return t.min == 0 ? std::optional<Piece>(EmptyString()) : std::nullopt;
        if (child->is_empty_string || t.max == 0) return EmptyString();
        if (t.min == 1 && t.max == 1) return child;
        std::string suffix;
        if (t.max == RegexTree::kUnbounded) {
            suffix = t.min == 0 ? "*" : t.min == 1 ? "+" : absl::StrCat("{", t.min, ",}");
        } else if (t.min == 0 && t.max == 1) {
            suffix = "?";
        } else if (t.min == t.max) {
            suffix = absl::StrCat("{", t.min, "}");
        } else {
            suffix = absl::StrCat("{", t.min, ",", t.max, "}");
        }
        Piece out;
        out.text = child->atomic ? child->text + suffix : absl::StrCat("( ", child->text, " )", suffix);
        return out;
    }

    std::optional<Piece> WriteSet(const CodePointSet& set) {
        if (set.empty()) return std::nullopt;
        if (json_content_) return Piece{CharRule(set), true, std::nullopt, false};
        const std::vector<CodePointSet::Range>& rs = set.ranges();
        if (rs.size() == 1 && rs[0].lo == rs[0].hi) return LiteralPiece(LiteralChar(rs[0].lo), 1);
        return Piece{ClassText(set), true, std::nullopt, false};
    }

    // JSON mode: the rule for `set`'s JSON spellings, written once.
    std::string CharRule(const CodePointSet& set) {
        std::vector<std::pair<uint32_t, uint32_t>> key;
        for (const CodePointSet::Range& r : set.ranges()) key.emplace_back(r.lo, r.hi);
        auto it = char_rules_.find(key);
        if (it != char_rules_.end()) return it->second;
        const std::string name = absl::StrCat(prefix_, "-c", char_rules_.size());
        char_rules_.emplace(std::move(key), name);
        absl::StrAppend(&rules_, name, " ::= ", JsonCharAlternatives(set), "\n");
        return name;
    }

    const std::string& rules() const { return rules_; }

private:
    bool                                                              json_content_;
    std::string                                                       prefix_;
    std::map<std::vector<std::pair<uint32_t, uint32_t>>, std::string> char_rules_;
    std::string                                                       rules_;
};

absl::Status NoStringError() {
    return absl::InvalidArgumentError("regex: the pattern matches no string (e.g. an empty class [])");
}

bool ValidRulePrefix(std::string_view prefix) {
    if (prefix.empty()) return false;
    for (const char c : prefix) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    return true;
}

// The top-level alternatives as one tree (anchors are redundant in full match).
RegexTree FullMatchTree(ParsedRegex parsed) {
    if (parsed.branches.size() == 1) return std::move(parsed.branches[0].tree);
    RegexTree alt;
    alt.kind = RegexTree::Kind::kAlt;
    for (ParsedRegex::Branch& b : parsed.branches) alt.children.push_back(std::move(b.tree));
    return alt;
}

// Search semantics: each unanchored side of a branch may hold any text.
RegexTree SearchTree(ParsedRegex parsed) {
    RegexTree any;
    any.kind = RegexTree::Kind::kRepeat;
    any.min = 0;
    any.max = RegexTree::kUnbounded;
    CodePointSet all;
    all.AddRange(0, kMaxCodePoint);
    RegexTree one;
    one.kind = RegexTree::Kind::kSet;
    one.set = std::move(all);
    any.children.push_back(std::move(one));

    RegexTree alt;
    alt.kind = RegexTree::Kind::kAlt;
    for (ParsedRegex::Branch& b : parsed.branches) {
        RegexTree seq;
        seq.kind = RegexTree::Kind::kConcat;
        if (!b.anchored_start) seq.children.push_back(any);
        seq.children.push_back(std::move(b.tree));
        if (!b.anchored_end) seq.children.push_back(any);
        alt.children.push_back(std::move(seq));
    }
    return alt;
}

}  // namespace

absl::StatusOr<std::string> RegexToGbnfWithLimits(std::string_view regex, const RegexLimits& limits) {
    PP_ASSIGN_OR_RETURN(ParsedRegex parsed, ParseEcmaRegex(regex, limits));
    GbnfWriter writer(/*json_content=*/false, "");
    std::optional<Piece> root = writer.Write(FullMatchTree(std::move(parsed)));
    if (!root) return NoStringError();
    return absl::StrCat("root ::= ", root->text, "\n");
}

absl::StatusOr<std::string> RegexToGbnf(std::string_view regex) { return RegexToGbnfWithLimits(regex, {}); }

absl::StatusOr<std::string> RegexToJsonStringContentGbnf(std::string_view regex, bool search,
                                                         std::string_view rule_prefix, std::string* rules,
                                                         const RegexLimits& limits) {
    if (!ValidRulePrefix(rule_prefix)) {
        return absl::InvalidArgumentError(
            absl::StrCat("rule prefix '", std::string(rule_prefix), "' must be non-empty and of [a-zA-Z0-9-] only"));
    }
    PP_ASSIGN_OR_RETURN(ParsedRegex parsed, ParseEcmaRegex(regex, limits));
    GbnfWriter writer(/*json_content=*/true, std::string(rule_prefix));
    std::optional<Piece> content = writer.Write(search ? SearchTree(std::move(parsed)) : FullMatchTree(std::move(parsed)));
    if (!content) return NoStringError();
    absl::StrAppend(rules, std::string(rule_prefix), " ::= ", content->text, "\n", writer.rules());
    return std::string(rule_prefix);
}

}  // namespace prepack::grammar
