// Python's Unicode string semantics for the str methods templates use:
// full case mappings (upper, lower with Greek final sigma, title,
// capitalize) and the character classes of isprintable (which repr() uses),
// isalpha, isdigit, ... The data (unicode_data.cpp) is generated from
// Python's own str methods.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace prepack::jinja {

namespace unicode_data {
struct Range {
    uint32_t lo, hi;
};
struct CaseMap {
    uint32_t cp;
    uint32_t to[3];  // zero-padded
};
extern const Range kCased[], kCaseIgnorable[], kPrintable[], kAlpha[], kDecimal[], kDigit[], kNumeric[],
    kLower[], kUpper[];
extern const size_t kCasedSize, kCaseIgnorableSize, kPrintableSize, kAlphaSize, kDecimalSize, kDigitSize,
    kNumericSize, kLowerSize, kUpperSize;
extern const CaseMap kUpperMap[], kLowerMap[], kTitleMap[];
extern const size_t kUpperMapSize, kLowerMapSize, kTitleMapSize;
}  // namespace unicode_data

bool IsCased(uint32_t cp);
bool IsCaseIgnorable(uint32_t cp);
bool IsPrintable(uint32_t cp);
bool IsAlpha(uint32_t cp);
bool IsDecimal(uint32_t cp);
bool IsDigit(uint32_t cp);
bool IsNumeric(uint32_t cp);
bool IsLowerChar(uint32_t cp);
bool IsUpperChar(uint32_t cp);

// str.upper(), str.lower(), str.title(), str.capitalize(), str.swapcase().
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyTitle(std::string_view s);
std::string PyCapitalize(std::string_view s);
std::string PySwapcase(std::string_view s);

// str.islower(), str.isupper(): some cased character, and none of the other case.
bool PyIsLower(std::string_view s);
bool PyIsUpper(std::string_view s);
// str.isalpha() etc.: non-empty and every character in the class.
bool PyAll(std::string_view s, bool (*pred)(uint32_t));

}  // namespace prepack::jinja
