#include "core/grammar/ecma_regex.h"

#include <algorithm>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace prepack::grammar {

// ---- CodePointSet --------------------------------------------------------------

namespace {
constexpr char32_t kSurrogateLo = 0xD800;
constexpr char32_t kSurrogateHi = 0xDFFF;
}  // namespace

void CodePointSet::AddRange(char32_t lo, char32_t hi) {
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) return;
    // Split around the surrogates: they are not characters of UTF-8 text.
    if (lo < kSurrogateLo) ranges_.push_back({lo, std::min<char32_t>(hi, kSurrogateLo - 1)});
    if (hi > kSurrogateHi) ranges_.push_back({std::max<char32_t>(lo, kSurrogateHi + 1), hi});
    normalized_ = false;   // sorted lazily: a class may add thousands of ranges
}

void CodePointSet::AddSet(const CodePointSet& other) {
    for (const Range& r : other.ranges()) ranges_.push_back(r);
    normalized_ = false;
}

void CodePointSet::Normalize() const {
    if (normalized_) return;
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    std::vector<Range> merged;
    for (const Range& r : ranges_) {
        if (!merged.empty() && r.lo <= merged.back().hi + 1) {
            merged.back().hi = std::max(merged.back().hi, r.hi);
        } else {
            merged.push_back(r);
        }
    }
    ranges_ = std::move(merged);
    normalized_ = true;
}

const std::vector<CodePointSet::Range>& CodePointSet::ranges() const {
    Normalize();
    return ranges_;
}

CodePointSet CodePointSet::Complement() const {
    CodePointSet out;
    char32_t next = 0;
    for (const Range& r : ranges()) {
        if (r.lo > next) out.AddRange(next, r.lo - 1);
        next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) out.AddRange(next, kMaxCodePoint);
    return out;
}

bool CodePointSet::Contains(char32_t c) const {
    const std::vector<Range>& rs = ranges();
    auto it = std::upper_bound(rs.begin(), rs.end(), c, [](char32_t v, const Range& r) { return v < r.lo; });
    return it != rs.begin() && std::prev(it)->hi >= c;
}

CodePointSet DotSet() {
    CodePointSet s;
    s.Add('\n');
    s.Add('\r');
    s.Add(0x2028);
    s.Add(0x2029);
    return s.Complement();
}

CodePointSet DigitSet() {
    CodePointSet s;
    s.AddRange('0', '9');
    return s;
}

CodePointSet WordSet() {
    CodePointSet s;
    s.AddRange('a', 'z');
    s.AddRange('A', 'Z');
    s.AddRange('0', '9');
    s.Add('_');
    return s;
}

// ECMAScript's WhiteSpace and LineTerminator: TAB VT FF SP NBSP ZWNBSP, the
// Unicode "Zs" spaces, LF CR LS PS.
CodePointSet SpaceSet() {
    CodePointSet s;
    s.AddRange(0x09, 0x0D);
    s.Add(0x20);
    s.Add(0xA0);
    s.Add(0x1680);
    s.AddRange(0x2000, 0x200A);
    s.AddRange(0x2028, 0x2029);
    s.Add(0x202F);
    s.Add(0x205F);
    s.Add(0x3000);
    s.Add(0xFEFF);
    return s;
}

// ---- Parser --------------------------------------------------------------------

namespace {

struct CodePoint {
    char32_t value;
    size_t   offset;   // of its first byte in the pattern
};

// UTF-8 -> code points with their offsets; INVALID_ARGUMENT at the first
// malformed sequence.
absl::StatusOr<std::vector<CodePoint>> DecodeUtf8(std::string_view s) {
    std::vector<CodePoint> out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<uint8_t>(s[i]);
        int len = 0;
        char32_t c = 0;
        char32_t min = 0;
        if (b0 < 0x80) { len = 1; c = b0; }
        else if ((b0 & 0xE0) == 0xC0) { len = 2; c = b0 & 0x1F; min = 0x80; }
        else if ((b0 & 0xF0) == 0xE0) { len = 3; c = b0 & 0x0F; min = 0x800; }
        else if ((b0 & 0xF8) == 0xF0) { len = 4; c = b0 & 0x07; min = 0x10000; }
        bool ok = len > 0 && i + len <= s.size();
        for (int k = 1; ok && k < len; ++k) {
            const auto b = static_cast<uint8_t>(s[i + k]);
            ok = (b & 0xC0) == 0x80;
            c = (c << 6) | (b & 0x3F);
        }
        ok = ok && c >= min && c <= kMaxCodePoint && (c < kSurrogateLo || c > kSurrogateHi);
        if (!ok) return absl::InvalidArgumentError(absl::StrCat("regex: invalid UTF-8 at offset ", i));
        out.push_back({c, i});
        i += len;
    }
    return out;
}

bool IsDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiLetter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int HexValue(char32_t c) {
    if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
    return -1;
}

RegexTree SetTree(CodePointSet set) {
    RegexTree t;
    t.kind = RegexTree::Kind::kSet;
    t.set = std::move(set);
    return t;
}

RegexTree CharTree(char32_t c) {
    CodePointSet s;
    s.Add(c);
    return SetTree(std::move(s));
}

// An escape's meaning: one character, or a class (\d \w \s and negations).
using EscapeValue = std::variant<char32_t, CodePointSet>;

// A parsed {m}, {m,}, {m,n}.
struct Braces {
    int64_t min = 0;
    int64_t max = RegexTree::kUnbounded;
    size_t  end = 0;   // index past the '}'
};

class Parser {
public:
    Parser(std::string_view pattern, std::vector<CodePoint> cps, const RegexLimits& limits)
        : pattern_size_(pattern.size()), cps_(std::move(cps)), limits_(limits) {}

    absl::StatusOr<ParsedRegex> ParseTopLevel() {
        ParsedRegex out;
        while (true) {
            ParsedRegex::Branch branch;
            PP_ASSIGN_OR_RETURN(branch.tree, ParseAlternative(/*top=*/true, &branch.anchored_start,
                                                              &branch.anchored_end));
            out.branches.push_back(std::move(branch));
            if (AtEnd()) break;
            if (Peek() == ')') return Error("unmatched ')'");
            ++pos_;   // '|'
        }
        return out;
    }

private:
    bool AtEnd() const { return pos_ >= cps_.size(); }
    char32_t Peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead].value : 0; }
    bool PeekIs(char32_t c, size_t ahead = 0) const { return pos_ + ahead < cps_.size() && Peek(ahead) == c; }
    size_t OffsetAt(size_t index) const { return index < cps_.size() ? cps_[index].offset : pattern_size_; }

    absl::Status ErrorAt(size_t index, std::string_view what) const {
        return absl::InvalidArgumentError(absl::StrCat("regex at offset ", OffsetAt(index), ": ", std::string(what)));
    }
    absl::Status Error(std::string_view what) const { return ErrorAt(pos_, what); }

    // Alternative := (Assertion | Atom Quantifier?)*, up to '|' or ')' or the end.
    absl::StatusOr<RegexTree> ParseAlternative(bool top, bool* anchored_start, bool* anchored_end) {
        RegexTree seq;
        seq.kind = RegexTree::Kind::kConcat;
        while (!AtEnd() && Peek() != '|' && Peek() != ')') {
            const char32_t c = Peek();
            if (c == '^') {
                if (!top || !seq.children.empty()) {
                    return Error("'^' is supported only at the start of the pattern or of a top-level alternative");
                }
                *anchored_start = true;
                ++pos_;
                continue;
            }
            if (c == '$') {
                if (!top || !(pos_ + 1 == cps_.size() || PeekIs('|', 1))) {
                    return Error("'$' is supported only at the end of the pattern or of a top-level alternative");
                }
                *anchored_end = true;
                ++pos_;
                continue;
            }
            PP_ASSIGN_OR_RETURN(RegexTree atom, ParseAtom());
            PP_ASSIGN_OR_RETURN(atom, ParseQuantifier(std::move(atom)));
            seq.children.push_back(std::move(atom));
        }
        if (seq.children.size() == 1) return std::move(seq.children[0]);
        if (seq.children.empty()) return RegexTree{};
        return seq;
    }

    // Disjunction inside a group, up to its ')'.
    absl::StatusOr<RegexTree> ParseDisjunction() {
        RegexTree alt;
        alt.kind = RegexTree::Kind::kAlt;
        while (true) {
            bool unused_start = false, unused_end = false;
            PP_ASSIGN_OR_RETURN(RegexTree branch, ParseAlternative(/*top=*/false, &unused_start, &unused_end));
            alt.children.push_back(std::move(branch));
            if (!PeekIs('|')) break;
            ++pos_;
        }
        if (alt.children.size() == 1) return std::move(alt.children[0]);
        return alt;
    }

    absl::StatusOr<RegexTree> ParseAtom() {
        const char32_t c = Peek();
        switch (c) {
            case '(': return ParseGroup();
            case '[': return ParseClass();
            case '.': ++pos_; return SetTree(DotSet());
            case '\\': {
                PP_ASSIGN_OR_RETURN(EscapeValue v, ParseEscape(/*in_class=*/false));
                if (auto* ch = std::get_if<char32_t>(&v)) return CharTree(*ch);
                return SetTree(std::get<CodePointSet>(std::move(v)));
            }
            case '*': case '+': case '?':
                return Error(absl::StrCat("nothing to repeat before '", std::string(1, static_cast<char>(c)), "'"));
            case '{': {
                PP_ASSIGN_OR_RETURN(std::optional<Braces> braces, TryParseBraces());
                if (braces) return Error("nothing to repeat before '{'");
                ++pos_;
                return CharTree('{');   // not a quantifier: a literal, as Annex B and Python read it
            }
            default:
                ++pos_;
                return CharTree(c);
        }
    }

    // Reads {m}, {m,} or {m,n} at pos_ without consuming it; nullopt when the
    // text there is not a quantifier (then '{' is a literal).
    absl::StatusOr<std::optional<Braces>> TryParseBraces() const {
        size_t i = pos_ + 1;
        auto read_number = [&](int64_t* value) {
            const size_t start = i;
            *value = 0;
            while (i < cps_.size() && IsDigit(cps_[i].value)) {
                // Saturate: anything this large is over max_repeat anyway.
                *value = std::min<int64_t>(*value * 10 + (cps_[i].value - '0'), int64_t{1} << 40);
                ++i;
            }
            return i > start;
        };
        Braces b;
        if (i < cps_.size() && cps_[i].value == ',' && i + 1 < cps_.size() && IsDigit(cps_[i + 1].value)) {
            return ErrorAt(pos_, "'{,n}' is ambiguous (a literal in ECMAScript, a quantifier in other engines): "
                                 "write {0,n} or escape the brace as \\{");
        }
        if (!read_number(&b.min)) return std::optional<Braces>();
        if (i < cps_.size() && cps_[i].value == '}') {
            b.max = b.min;
        } else if (i < cps_.size() && cps_[i].value == ',') {
            ++i;
            int64_t max = 0;
            b.max = read_number(&max) ? max : RegexTree::kUnbounded;
            if (i >= cps_.size() || cps_[i].value != '}') return std::optional<Braces>();
        } else {
            return std::optional<Braces>();
        }
        b.end = i + 1;
        return std::optional<Braces>(b);
    }

    absl::StatusOr<RegexTree> ParseQuantifier(RegexTree atom) {
        if (AtEnd()) return atom;
        const size_t start = pos_;
        int64_t min = 0, max = 0;
        switch (Peek()) {
            case '*': min = 0; max = RegexTree::kUnbounded; ++pos_; break;
            case '+': min = 1; max = RegexTree::kUnbounded; ++pos_; break;
            case '?': min = 0; max = 1; ++pos_; break;
            case '{': {
                PP_ASSIGN_OR_RETURN(std::optional<Braces> braces, TryParseBraces());
                if (!braces) return atom;
                min = braces->min;
                max = braces->max;
                pos_ = braces->end;
                break;
            }
            default: return atom;
        }
        if (max != RegexTree::kUnbounded && max < min) {
            return ErrorAt(start, "numbers out of order in {m,n} quantifier");
        }
        if (min > limits_.max_repeat || max > limits_.max_repeat) {
            return ErrorAt(start, absl::StrCat("counted repetition over ", limits_.max_repeat,
                                               " (the documented bound)"));
        }
        if (PeekIs('?')) ++pos_;   // lazy: the same language
        if (PeekIs('+')) return Error("possessive quantifiers are not ECMAScript syntax");
        if (PeekIs('*') || PeekIs('?')) return Error("nothing to repeat (a quantifier after a quantifier)");
        if (PeekIs('{')) {
            PP_ASSIGN_OR_RETURN(std::optional<Braces> braces, TryParseBraces());
            if (braces) return Error("nothing to repeat (a quantifier after a quantifier)");
        }
        RegexTree rep;
        rep.kind = RegexTree::Kind::kRepeat;
        rep.min = static_cast<int32_t>(min);
        rep.max = static_cast<int32_t>(max);
        rep.children.push_back(std::move(atom));
        return rep;
    }

    absl::StatusOr<RegexTree> ParseGroup() {
        const size_t open = pos_;
        ++pos_;   // '('
        if (PeekIs('?')) {
            if (PeekIs(':', 1)) {
                pos_ += 2;
            } else if (PeekIs('=', 1) || PeekIs('!', 1)) {
                return ErrorAt(open, "lookahead (?= (?! is not supported: the language would not be context-free");
            } else if (PeekIs('<', 1) && (PeekIs('=', 2) || PeekIs('!', 2))) {
                return ErrorAt(open, "lookbehind (?<= (?<! is not supported: the language would not be context-free");
            } else if (PeekIs('<', 1)) {
                pos_ += 2;
                const size_t name_start = pos_;
                while (!AtEnd() && Peek() != '>' && Peek() != ')' &&
                       (IsAsciiLetter(Peek()) || IsDigit(Peek()) || Peek() == '_' || Peek() == '$' || Peek() > 0x7F)) {
                    ++pos_;
                }
                if (pos_ == name_start || !PeekIs('>')) return ErrorAt(open, "malformed group name in (?<name>...)");
                ++pos_;
            } else if (PeekIs('P', 1)) {
                return ErrorAt(open, "(?P...) is Python syntax: ECMAScript names a group (?<name>...)");
            } else {
                return ErrorAt(open, "inline flags and modifiers (?...) are not supported");
            }
        }
        if (++depth_ > limits_.max_nesting) {
            return ErrorAt(open, absl::StrCat("groups nested deeper than ", limits_.max_nesting));
        }
        PP_ASSIGN_OR_RETURN(RegexTree inner, ParseDisjunction());
        --depth_;
        if (!PeekIs(')')) return ErrorAt(open, "unterminated group '('");
        ++pos_;
        return inner;
    }

    absl::StatusOr<RegexTree> ParseClass() {
        const size_t open = pos_;
        ++pos_;   // '['
        bool negate = false;
        if (PeekIs('^')) {
            negate = true;
            ++pos_;
        }
        CodePointSet set;
        while (true) {
            if (AtEnd()) return ErrorAt(open, "unterminated character class '['");
            if (Peek() == ']') break;
            const size_t lo_index = pos_;
            PP_ASSIGN_OR_RETURN(EscapeValue lo, ParseClassAtom());
            if (PeekIs('-') && pos_ + 1 < cps_.size() && Peek(1) != ']') {
                ++pos_;   // '-'
                PP_ASSIGN_OR_RETURN(EscapeValue hi, ParseClassAtom());
                const auto* lo_char = std::get_if<char32_t>(&lo);
                const auto* hi_char = std::get_if<char32_t>(&hi);
                if (lo_char == nullptr || hi_char == nullptr) {
                    return ErrorAt(lo_index, "a class escape (\\d \\w \\s ...) cannot be a range's end; "
                                             "escape the '-' as \\- for a literal");
                }
                if (*lo_char > *hi_char) return ErrorAt(lo_index, "range out of order in character class");
                set.AddRange(*lo_char, *hi_char);
                continue;
            }
            if (auto* ch = std::get_if<char32_t>(&lo)) {
                set.Add(*ch);
            } else {
                set.AddSet(std::get<CodePointSet>(lo));
            }
        }
        ++pos_;   // ']'
        return SetTree(negate ? set.Complement() : std::move(set));
    }

    absl::StatusOr<EscapeValue> ParseClassAtom() {
        if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
        return EscapeValue(cps_[pos_++].value);
    }

    // exactly `digits` hex digits at pos_.
    absl::StatusOr<char32_t> ReadHex(int digits, size_t escape_start, std::string_view what) {
        char32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const int h = AtEnd() ? -1 : HexValue(Peek());
            if (h < 0) return ErrorAt(escape_start, absl::StrCat(std::string(what), " needs ", digits, " hex digits"));
            v = v * 16 + static_cast<char32_t>(h);
            ++pos_;
        }
        return v;
    }

    // \uHHHH, a surrogate pair \uHHHH\uHHHH, or \u{H...}; pos_ is past the 'u'.
    absl::StatusOr<char32_t> ParseUnicodeEscape(size_t escape_start) {
        if (PeekIs('{')) {
            ++pos_;
            char32_t v = 0;
            size_t digits = 0;
            while (!AtEnd() && HexValue(Peek()) >= 0) {
                v = v * 16 + static_cast<char32_t>(HexValue(Peek()));
                if (v > kMaxCodePoint) return ErrorAt(escape_start, "\\u{...} above U+10FFFF");
                ++pos_;
                ++digits;
            }
            if (digits == 0 || !PeekIs('}')) return ErrorAt(escape_start, "malformed \\u{...} escape");
            ++pos_;
            if (v >= kSurrogateLo && v <= kSurrogateHi) {
                return ErrorAt(escape_start, "a lone surrogate cannot appear in UTF-8 text");
            }
            return v;
        }
        PP_ASSIGN_OR_RETURN(char32_t v, ReadHex(4, escape_start, "\\u"));
        if (v >= 0xD800 && v <= 0xDBFF && PeekIs('\\') && PeekIs('u', 1)) {
            const size_t save = pos_;
            pos_ += 2;
            absl::StatusOr<char32_t> low = ReadHex(4, save, "\\u");
            if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
                return 0x10000 + ((v - 0xD800) << 10) + (*low - 0xDC00);
            }
            pos_ = save;
        }
        if (v >= kSurrogateLo && v <= kSurrogateHi) {
            return ErrorAt(escape_start, "a lone surrogate cannot appear in UTF-8 text");
        }
        return v;
    }

    absl::StatusOr<EscapeValue> ParseEscape(bool in_class) {
        const size_t start = pos_;
        ++pos_;   // '\'
        if (AtEnd()) return ErrorAt(start, "'\\' at the end of the pattern");
        const char32_t c = Peek();
        ++pos_;
        switch (c) {
            case 'd': return EscapeValue(DigitSet());
            case 'D': return EscapeValue(DigitSet().Complement());
            case 'w': return EscapeValue(WordSet());
            case 'W': return EscapeValue(WordSet().Complement());
            case 's': return EscapeValue(SpaceSet());
            case 'S': return EscapeValue(SpaceSet().Complement());
            case 'n': return EscapeValue(char32_t{'\n'});
            case 't': return EscapeValue(char32_t{'\t'});
            case 'r': return EscapeValue(char32_t{'\r'});
            case 'f': return EscapeValue(char32_t{'\f'});
            case 'v': return EscapeValue(char32_t{'\v'});
            case 'b':
                if (in_class) return EscapeValue(char32_t{'\b'});
                return ErrorAt(start, "word boundary \\b is not supported");
            case 'B': return ErrorAt(start, "word boundary \\B is not supported");
            case '0':
                if (!AtEnd() && IsDigit(Peek())) return ErrorAt(start, "octal escapes are not supported");
                return EscapeValue(char32_t{0});
            case 'c':
                if (!AtEnd() && IsAsciiLetter(Peek())) return EscapeValue(static_cast<char32_t>(cps_[pos_++].value % 32));
                return ErrorAt(start, "\\c must be followed by a letter");
            case 'x': {
                PP_ASSIGN_OR_RETURN(char32_t v, ReadHex(2, start, "\\x"));
                return EscapeValue(v);
            }
            case 'u': {
                PP_ASSIGN_OR_RETURN(char32_t v, ParseUnicodeEscape(start));
                return EscapeValue(v);
            }
            case 'k': return ErrorAt(start, "backreference \\k<name> is not supported: the language would not be context-free");
            case 'p': case 'P': return ErrorAt(start, "Unicode property escapes \\p{...} \\P{...} are not supported");
            default: break;
        }
        if (IsDigit(c)) {
            return ErrorAt(start, absl::StrCat(in_class ? "octal escape \\" : "backreference \\",
                                               std::string(1, static_cast<char>(c)),
                                               in_class ? " is not supported" : " is not supported: the language would not be context-free"));
        }
        if (IsAsciiLetter(c)) {
            return ErrorAt(start, absl::StrCat("\\", std::string(1, static_cast<char>(c)),
                                               " is not an escape ECMAScript regular expressions define"));
        }
        return EscapeValue(c);   // \. \/ \- \\ ...: the character itself
    }

    size_t                 pattern_size_;
    std::vector<CodePoint> cps_;
    const RegexLimits&     limits_;
    size_t                 pos_ = 0;
    int32_t                depth_ = 0;
};

// Character classes the tree holds once counted repetitions are expanded
// (the GBNF compiler expands {m,n} into copies), saturating.
int64_t ExpandedSize(const RegexTree& t, int64_t cap) {
    switch (t.kind) {
        case RegexTree::Kind::kEmpty: return 0;
        case RegexTree::Kind::kSet: return 1;
        case RegexTree::Kind::kConcat:
        case RegexTree::Kind::kAlt: {
            int64_t sum = 0;
            for (const RegexTree& c : t.children) sum = std::min(cap, sum + ExpandedSize(c, cap));
            return sum;
        }
        case RegexTree::Kind::kRepeat: {
            const int64_t copies = std::max<int64_t>(1, t.max == RegexTree::kUnbounded ? t.min + 1 : t.max);
            return std::min(cap, ExpandedSize(t.children[0], cap) * copies);
        }
    }
    return 0;
}

}  // namespace

absl::StatusOr<ParsedRegex> ParseEcmaRegex(std::string_view pattern, const RegexLimits& limits) {
    if (pattern.size() > limits.max_pattern_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("regex: the pattern is ", pattern.size(), " bytes, over the limit of ", limits.max_pattern_bytes));
    }
    PP_ASSIGN_OR_RETURN(std::vector<CodePoint> cps, DecodeUtf8(pattern));
    Parser parser(pattern, std::move(cps), limits);
    PP_ASSIGN_OR_RETURN(ParsedRegex parsed, parser.ParseTopLevel());
    int64_t size = 0;
    const int64_t cap = limits.max_expanded_size + 1;
    for (const ParsedRegex::Branch& b : parsed.branches) size = std::min(cap, size + ExpandedSize(b.tree, cap));
    if (size > limits.max_expanded_size) {
        return absl::InvalidArgumentError(absl::StrCat("regex: counted repetitions expand to over ",
                                                       limits.max_expanded_size, " character classes (the documented bound)"));
    }
    return parsed;
}

}  // namespace prepack::grammar
