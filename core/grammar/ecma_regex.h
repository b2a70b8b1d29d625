// ECMAScript regular expression syntax -> a tree over Unicode code points,
// for the regex front ends (regex_to_gbnf.h). Only the language matters
// (which strings match), never captures or match positions.
//
// Supported: literals (any UTF-8 text) and escapes \n \t \r \f \v \0 \cX
// \xHH \uHHHH (a surrogate pair \uD83D\uDE00 is one character) \u{H..}, a
// backslash before any character that is not a letter or digit ("\." "\/"
// "\-" ...); `.` (any character but the line terminators \n \r U+2028
// U+2029); classes [...] [^...] with ranges and \d \w \s \D \W \S (ECMAScript's
// ASCII \d \w and Unicode \s) inside and outside classes, [] (nothing) and
// [^] (anything); groups ( ), (?: ), (?<name> ); alternation |; quantifiers
// * + ? {m} {m,} {m,n} and their lazy forms (same language); `{` `}` `]`
// as literals where they cannot be read otherwise (as ECMAScript's Annex B
// and Python do); ^ at the start and $ at the end of the pattern or of a
// top-level alternative.
//
// Refused, INVALID_ARGUMENT naming the construct and its byte offset:
// backreferences \1 \k<n>, lookahead and lookbehind, ^ or $ anywhere else,
// word boundaries \b \B, inline flags (?i) and modifiers, Unicode property
// escapes \p{..} \P{..}, escapes of letters ECMAScript does not define (\a
// \z \A ...; Python's meanings differ), octal escapes, a range with a class
// escape as an end ([\d-z]), `{,n}` (a literal in ECMAScript, a quantifier
// elsewhere), lone surrogates, invalid UTF-8, and anything past RegexLimits.
// Characters are code points, so the strings are always valid UTF-8
// (ECMAScript without the u flag would see UTF-16 code units instead).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace prepack::grammar {

// Bounds on what the regex front ends accept, so a pattern cannot make the
// grammar (or the time to build it) explode.
struct RegexLimits {
    size_t  max_pattern_bytes = 1 << 16;
    int32_t max_nesting = 100;           // groups inside groups
    int32_t max_repeat = 1000;           // the largest m or n in {m,n}
    // Character classes after expanding counted repetitions: (a{100}){100}
    // is 10000; a pattern over this bound is refused rather than handed to
    // the grammar compiler.
    int64_t max_expanded_size = 100000;
};

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

// A set of Unicode scalar values (code points less the surrogates
// U+D800..U+DFFF, which never appear in UTF-8 text).
class CodePointSet {
public:
    struct Range {
        char32_t lo, hi;   // inclusive
        bool operator==(const Range&) const = default;
    };
    void Add(char32_t c) { AddRange(c, c); }
    void AddRange(char32_t lo, char32_t hi);   // surrogates in it are dropped
    void AddSet(const CodePointSet& other);
    CodePointSet Complement() const;
    bool empty() const { return ranges().empty(); }
    bool Contains(char32_t c) const;
    // Sorted, disjoint and not adjacent.
    const std::vector<Range>& ranges() const;
    bool operator==(const CodePointSet& other) const { return ranges() == other.ranges(); }

private:
    void Normalize() const;
    mutable std::vector<Range> ranges_;
    mutable bool normalized_ = true;
};

// The sets of `.` and of \d \w \s as ECMAScript defines them.
CodePointSet DotSet();
CodePointSet DigitSet();
CodePointSet WordSet();
CodePointSet SpaceSet();

struct RegexTree {
    enum class Kind : uint8_t {
        kEmpty,    // ""
        kSet,      // one character of `set` (an empty set matches nothing)
        kConcat,   // children in order
        kAlt,      // any one child
        kRepeat,   // children[0], min..max times
    };
    static constexpr int32_t kUnbounded = -1;

    Kind                   kind = Kind::kEmpty;
    CodePointSet           set;
    std::vector<RegexTree> children;
    int32_t                min = 0;
    int32_t                max = 0;
};

struct ParsedRegex {
    // The top-level alternatives, each with its anchors (which matter only
    // to search semantics: a full match is anchored anyway).
    struct Branch {
        RegexTree tree;
        bool      anchored_start = false;
        bool      anchored_end = false;
    };
    std::vector<Branch> branches;
};

absl::StatusOr<ParsedRegex> ParseEcmaRegex(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace prepack::grammar
