#include "core/grammar/json_schema_numbers.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/grammar/json_schema_text.h"

namespace prepack::grammar::schema {
namespace {

using Json = nlohmann::ordered_json;

constexpr __int128 kIntegerBoundLimit = static_cast<__int128>(1) << 126;
constexpr double kNumberBoundLimit = 9007199254740992.0;  // 2^53: every integer up to it is a double

std::string ToDecimal(__int128 v) {
    if (v == 0) return "0";
    std::string digits;
    for (; v > 0; v /= 10) digits += static_cast<char>('0' + static_cast<int>(v % 10));
    std::reverse(digits.begin(), digits.end());
    return digits;
}

std::string SignedDecimal(__int128 v) { return v < 0 ? absl::StrCat("-", ToDecimal(-v)) : ToDecimal(v); }

bool AllAre(std::string_view s, char c) { return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; }); }

// Pieces in sequence, empty ones skipped.
std::string Alt(const std::vector<std::string>& alts) {
    if (alts.size() == 1) return alts[0];
    return absl::StrCat("( ", absl::StrJoin(alts, " | "), " )");
}

std::string Lit(std::string_view s) { return s.empty() ? "" : GbnfLiteral(s); }

std::string DigitClass(char lo, char hi) {
    if (lo == hi) return Lit(std::string(1, lo));
    return absl::StrCat("[", std::string(1, lo), "-", std::string(1, hi), "]");
}

std::string AnyDigits(size_t n) {
    if (n == 0) return "";
    if (n == 1) return "[0-9]";
    return absl::StrCat("[0-9]{", n, "}");
}

// Digit strings as long as `s` and >= s (leading zeros allowed: a tail).
std::string AtLeast(std::string_view s) {
    if (s.empty()) return "";
    if (AllAre(s, '0')) return AnyDigits(s.size());
    std::vector<std::string> alts = {Seq({Lit(s.substr(0, 1)), AtLeast(s.substr(1))})};
    if (s[0] < '9') alts.push_back(Seq({DigitClass(static_cast<char>(s[0] + 1), '9'), AnyDigits(s.size() - 1)}));
    return Alt(alts);
}

// Digit strings as long as `s` and <= s.
std::string AtMost(std::string_view s) {
    if (s.empty()) return "";
    if (AllAre(s, '9')) return AnyDigits(s.size());
    std::vector<std::string> alts;
    if (s[0] > '0') alts.push_back(Seq({DigitClass('0', static_cast<char>(s[0] - 1)), AnyDigits(s.size() - 1)}));
    alts.push_back(Seq({Lit(s.substr(0, 1)), AtMost(s.substr(1))}));
    return Alt(alts);
}

// Digit strings of one length between lo and hi (lo <= hi).
std::string Between(std::string_view lo, std::string_view hi) {
    size_t common = 0;
    while (common < lo.size() && lo[common] == hi[common]) ++common;
    if (common == lo.size()) return Lit(lo);
    const char x = lo[common];
    const char y = hi[common];
    const std::string_view lo_rest = lo.substr(common + 1);
    const std::string_view hi_rest = hi.substr(common + 1);
    std::vector<std::string> alts;
    char first_free = x;
    char last_free = y;
    if (!AllAre(lo_rest, '0')) {
        alts.push_back(Seq({Lit(std::string(1, x)), AtLeast(lo_rest)}));
        first_free = static_cast<char>(x + 1);
    }
    if (!AllAre(hi_rest, '9')) last_free = static_cast<char>(y - 1);
    if (first_free <= last_free) alts.push_back(Seq({DigitClass(first_free, last_free), AnyDigits(lo_rest.size())}));
    if (!AllAre(hi_rest, '9')) alts.push_back(Seq({Lit(std::string(1, y)), AtMost(hi_rest)}));
    return Seq({Lit(lo.substr(0, common)), Alt(alts)});
}

// Numerals (no leading zeros) of the integers in [lo, hi], 0 <= lo; hi
// null for no upper bound.
std::string Magnitudes(__int128 lo, const __int128* hi) {
    const std::string lo_text = ToDecimal(lo);
    const std::string hi_text = hi ? ToDecimal(*hi) : "";
    const size_t last_length = hi ? hi_text.size() : lo_text.size();
    std::vector<std::string> alts;
    for (size_t length = lo_text.size(); length <= last_length; ++length) {
        const std::string from = length == lo_text.size() ? lo_text : absl::StrCat("1", std::string(length - 1, '0'));
        const std::string to = hi && length == hi_text.size() ? hi_text : std::string(length, '9');
        alts.push_back(Between(from, to));
    }
    if (!hi) alts.push_back(absl::StrCat("[1-9] [0-9]{", lo_text.size(), ",}"));
    return Alt(alts);
}

// A bound keyword's value.
struct Bound {
    std::string keyword;
    double      value = 0;        // as a double (for comparing and for numbers)
    __int128    exact = 0;        // ceil/floor for integers, per the keyword
    bool        exclusive = false;
};

absl::StatusOr<std::optional<Bound>> ReadBound(const Json& schema, const std::string& keyword, bool exclusive,
                                               bool is_lower, const std::string& pointer) {
    const auto it = schema.find(keyword);
    if (it == schema.end()) return std::optional<Bound>();
    const Json& v = *it;
    Bound bound{keyword, 0, 0, exclusive};
    if (v.is_number_integer() && !v.is_number_unsigned()) {
        const int64_t x = v.get<int64_t>();
        bound.value = static_cast<double>(x);
        bound.exact = x;
        if (exclusive) bound.exact += is_lower ? 1 : -1;
        return bound;
    }
    if (v.is_number_unsigned()) {
        const uint64_t x = v.get<uint64_t>();
        bound.value = static_cast<double>(x);
        bound.exact = x;
        if (exclusive) bound.exact += is_lower ? 1 : -1;
        return bound;
    }
    if (!v.is_number_float()) {
        return absl::InvalidArgumentError(absl::StrCat("\"", keyword, "\" at ", pointer, " must be a number",
                                                       v.is_boolean() ? " (draft-04's boolean form is not supported)" : ""));
    }
    const double x = v.get<double>();
    if (!std::isfinite(x) || std::fabs(x) >= std::ldexp(1.0, 126)) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", keyword, "\" ", v.dump(), " at ", pointer, " is beyond the supported range of ±2^126"));
    }
    bound.value = x;
    // The integers past the bound: minimum 1.5 -> 2, exclusiveMinimum 2.0 -> 3.
    double edge = is_lower ? (exclusive ? std::floor(x) + 1 : std::ceil(x)) : (exclusive ? std::ceil(x) - 1 : std::floor(x));
    bound.exact = static_cast<__int128>(edge);
    return bound;
}

// The tighter of two lower (or upper) bounds.
std::optional<Bound> Tighter(std::optional<Bound> a, std::optional<Bound> b, bool is_lower) {
    if (!a) return b;
    if (!b) return a;
    if (a->value == b->value) return a->exclusive ? a : b;
    return (a->value > b->value) == is_lower ? a : b;
}

// Magnitude constraints for one sign of a number.
struct MagnitudeLimits {
    enum class Low { kNone, kAtLeast, kAboveZero } low = Low::kNone;
    int64_t low_value = 0;           // kAtLeast: > 0
    std::optional<int64_t> at_most;  // >= 0
    bool empty = false;
};

// Numerals of the non-negative decimals within `limits` (see header).
std::string MagnitudeGbnf(const MagnitudeLimits& limits) {
    using Low = MagnitudeLimits::Low;
    const std::string fraction = R"(( "." [0-9]+ )?)";
    const std::string zero_fraction = R"(( "." "0"+ )?)";
    // A positive value below 1 that cannot underflow to 0.0.
    const std::string tiny_positive = R"("0." "0"{0,200} [1-9] [0-9]*)";
    if (limits.empty) return "";
    if (!limits.at_most) {
        switch (limits.low) {
            case Low::kNone:
                return R"(( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+\x2D]? [0-9]+ )?)";
            case Low::kAtLeast:
                // A positive exponent only makes the value larger.
                return Seq({Magnitudes(limits.low_value, nullptr), fraction, R"(( [eE] "+"? [0-9]+ )?)"});
            case Low::kAboveZero:
                return Alt({Seq({"[1-9] [0-9]*", fraction, R"(( [eE] ( "+"? [0-9]+ | "-" [0-9]{1,2} ) )?)"}), tiny_positive});
        }
    }
    const __int128 high = *limits.at_most;
    const __int128 low = limits.low == Low::kNone ? 0 : limits.low == Low::kAtLeast ? limits.low_value : 1;
    std::vector<std::string> alts;
    if (low <= high - 1) {
        const __int128 below_high = high - 1;
        alts.push_back(Seq({Magnitudes(low, &below_high), fraction}));
    }
    if (limits.low == Low::kAboveZero && high >= 1) alts.push_back(tiny_positive);
    if (low <= high) alts.push_back(Seq({Lit(ToDecimal(high)), zero_fraction}));
    return alts.empty() ? "" : Alt(alts);
}

}  // namespace

std::string IntegerRangeGbnf(const __int128* min, const __int128* max) {
    std::vector<std::string> alts;
    if (!min || *min < 0) {
        // Negative values: "-" and a magnitude in [max(1, -max), -min].
        const __int128 magnitude_low = (max && *max < 0) ? -*max : 1;
        const __int128 magnitude_high = min ? -*min : 0;
        alts.push_back(Seq({"\"-\"", Magnitudes(magnitude_low, min ? &magnitude_high : nullptr)}));
    }
    if (!max || *max >= 0) {
        alts.push_back(Magnitudes(min && *min > 0 ? *min : 0, max));
    }
    return Alt(alts);
}

absl::StatusOr<std::string> IntegerGbnf(const Json& schema, const std::string& pointer, std::set<std::string>* consumed) {
    std::optional<Bound> lower, upper;
    for (const auto& [keyword, exclusive, is_lower] :
         {std::tuple{"minimum", false, true}, std::tuple{"exclusiveMinimum", true, true},
          std::tuple{"maximum", false, false}, std::tuple{"exclusiveMaximum", true, false}}) {
        PP_ASSIGN_OR_RETURN(std::optional<Bound> bound, ReadBound(schema, keyword, exclusive, is_lower, pointer));
        if (!bound) continue;
        consumed->insert(keyword);
        // Compare the integers each bound admits, not the raw values.
        if (is_lower) {
            if (!lower || bound->exact > lower->exact) lower = bound;
        } else {
            if (!upper || bound->exact < upper->exact) upper = bound;
        }
    }
    if (const auto it = schema.find("format"); it != schema.end() && it->is_string()) {
        const std::string format = it->get<std::string>();
        const int bits = format == "int32" ? 31 : format == "int64" ? 63 : 0;
        if (bits != 0) {
            consumed->insert("format");
            const __int128 low = -(static_cast<__int128>(1) << bits);
            const __int128 high = (static_cast<__int128>(1) << bits) - 1;
            if (!lower || low > lower->exact) lower = Bound{"format", 0, low, false};
            if (!upper || high < upper->exact) upper = Bound{"format", 0, high, false};
        }
    }
    if (!lower && !upper) return std::string("integer");
    if (lower && upper && lower->exact > upper->exact) {
        return absl::InvalidArgumentError(absl::StrCat("no integer satisfies the bounds at ", pointer, ": \"",
                                                       lower->keyword, "\" admits >= ", SignedDecimal(lower->exact), ", \"",
                                                       upper->keyword, "\" <= ", SignedDecimal(upper->exact)));
    }
    const __int128 low = lower ? lower->exact : 0;
    const __int128 high = upper ? upper->exact : 0;
    return IntegerRangeGbnf(lower ? &low : nullptr, upper ? &high : nullptr);
}

absl::StatusOr<std::string> NumberGbnf(const Json& schema, const std::string& pointer, std::set<std::string>* consumed) {
    std::optional<Bound> lower, upper;
    for (const auto& [keyword, exclusive, is_lower] :
         {std::tuple{"minimum", false, true}, std::tuple{"exclusiveMinimum", true, true},
          std::tuple{"maximum", false, false}, std::tuple{"exclusiveMaximum", true, false}}) {
        PP_ASSIGN_OR_RETURN(std::optional<Bound> bound, ReadBound(schema, keyword, exclusive, is_lower, pointer));
        if (!bound) continue;
        consumed->insert(keyword);
        if (is_lower) {
            lower = Tighter(lower, bound, true);
        } else {
            upper = Tighter(upper, bound, false);
        }
    }
    if (!lower && !upper) return std::string("number");
    for (const std::optional<Bound>& bound : {lower, upper}) {
        if (!bound) continue;
        const std::string where = absl::StrCat("\"", bound->keyword, "\" ", bound->value, " at ", pointer);
        if (bound->exclusive && bound->value != 0) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, " is not supported: a number's exclusive bounds must be 0"));
        }
        if (!bound->exclusive && (bound->value != std::floor(bound->value) || std::fabs(bound->value) > kNumberBoundLimit)) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, " is not supported: a number's bounds must be integers within ±2^53"));
        }
    }
    using Low = MagnitudeLimits::Low;
    // x >= 0: the magnitude is x itself.
    MagnitudeLimits positive;
    if (lower) {
        if (lower->exclusive) {
            positive.low = Low::kAboveZero;
        } else if (lower->value > 0) {
            positive.low = Low::kAtLeast;
            positive.low_value = static_cast<int64_t>(lower->value);
        }
    }
    if (upper) {
        if (upper->exclusive || upper->value < 0) {
            positive.empty = true;
        } else {
            positive.at_most = static_cast<int64_t>(upper->value);
        }
    }
    // x < 0, written "-" m: x >= a is m <= -a, x <= b is m >= -b.
    MagnitudeLimits negative;
    if (lower) {
        if (lower->exclusive || lower->value >= 0) {
            negative.empty = true;
        } else {
            negative.at_most = static_cast<int64_t>(-lower->value);
        }
    }
    if (upper) {
        if (upper->exclusive) {
            negative.low = Low::kAboveZero;
        } else if (upper->value < 0) {
            negative.low = Low::kAtLeast;
            negative.low_value = static_cast<int64_t>(-upper->value);
        }
    }
    std::vector<std::string> alts;
    if (std::string m = MagnitudeGbnf(positive); !m.empty()) alts.push_back(m);
    if (std::string m = MagnitudeGbnf(negative); !m.empty()) alts.push_back(Seq({"\"-\"", m}));
    if (alts.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("no number satisfies the bounds at ", pointer, ": \"",
                                                       lower->keyword, "\" ", lower->value, " and \"", upper->keyword,
                                                       "\" ", upper->value));
    }
    return Alt(alts);
}

}  // namespace prepack::grammar::schema
