#include "core/jinja/unicode.h"

#include <algorithm>
#include <vector>

#include "core/jinja/text.h"

namespace prepack::jinja {
namespace {
using unicode_data::CaseMap;
using unicode_data::Range;

bool InRanges(const Range* r, size_t n, uint32_t cp) {
    const Range* end = r + n;
    const Range* it = std::upper_bound(r, end, cp, [](uint32_t c, const Range& x) { return c < x.lo; });
    return it != r && (it - 1)->hi >= cp;
}

const CaseMap* FindMap(const CaseMap* m, size_t n, uint32_t cp) {
    const CaseMap* end = m + n;
    const CaseMap* it = std::lower_bound(m, end, cp, [](const CaseMap& x, uint32_t c) { return x.cp < c; });
    return it != end && it->cp == cp ? it : nullptr;
}

void AppendMapped(std::string& out, const CaseMap* m, uint32_t cp) {
    if (m == nullptr) {
        AppendUtf8(out, cp);
        return;
    }
    for (uint32_t c : m->to) {
        if (c != 0) AppendUtf8(out, c);
    }
}

void AppendUpper(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(cp >= 'a' && cp <= 'z' ? static_cast<char>(cp - 32) : static_cast<char>(cp));
        return;
    }
    AppendMapped(out, FindMap(unicode_data::kUpperMap, unicode_data::kUpperMapSize, cp), cp);
}

void AppendTitleChar(std::string& out, uint32_t cp) {
    if (const CaseMap* t = FindMap(unicode_data::kTitleMap, unicode_data::kTitleMapSize, cp)) {
        AppendMapped(out, t, cp);
    } else {
        AppendUpper(out, cp);
    }
}

// Lower case of cps[i], with Python's Final_Sigma rule for U+03A3.
void AppendLowerAt(std::string& out, const std::vector<uint32_t>& cps, size_t i) {
    const uint32_t cp = cps[i];
    if (cp < 0x80) {
        out.push_back(cp >= 'A' && cp <= 'Z' ? static_cast<char>(cp + 32) : static_cast<char>(cp));
        return;
    }
    if (cp == 0x3A3) {
        size_t j = i;
        bool final_sigma = false;
        while (j > 0 && IsCaseIgnorable(cps[j - 1])) --j;
        final_sigma = j > 0 && IsCased(cps[j - 1]);
        if (final_sigma) {
            size_t k = i + 1;
            while (k < cps.size() && IsCaseIgnorable(cps[k])) ++k;
            final_sigma = k == cps.size() || !IsCased(cps[k]);
        }
        AppendUtf8(out, final_sigma ? 0x3C2 : 0x3C3);
        return;
    }
    AppendMapped(out, FindMap(unicode_data::kLowerMap, unicode_data::kLowerMapSize, cp), cp);
}

std::vector<uint32_t> Decode(std::string_view s) {
    std::vector<uint32_t> cps;
    cps.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) cps.push_back(DecodeUtf8(s, pos));
    return cps;
}

}  // namespace

bool IsCased(uint32_t cp) { return InRanges(unicode_data::kCased, unicode_data::kCasedSize, cp); }
bool IsCaseIgnorable(uint32_t cp) {
    return InRanges(unicode_data::kCaseIgnorable, unicode_data::kCaseIgnorableSize, cp);
}
bool IsPrintable(uint32_t cp) { return InRanges(unicode_data::kPrintable, unicode_data::kPrintableSize, cp); }
bool IsAlpha(uint32_t cp) { return InRanges(unicode_data::kAlpha, unicode_data::kAlphaSize, cp); }
bool IsDecimal(uint32_t cp) { return InRanges(unicode_data::kDecimal, unicode_data::kDecimalSize, cp); }
bool IsDigit(uint32_t cp) { return InRanges(unicode_data::kDigit, unicode_data::kDigitSize, cp); }
bool IsNumeric(uint32_t cp) { return InRanges(unicode_data::kNumeric, unicode_data::kNumericSize, cp); }
bool IsLowerChar(uint32_t cp) { return InRanges(unicode_data::kLower, unicode_data::kLowerSize, cp); }
bool IsUpperChar(uint32_t cp) { return InRanges(unicode_data::kUpper, unicode_data::kUpperSize, cp); }

std::string PyUpper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) AppendUpper(out, DecodeUtf8(s, pos));
    return out;
}

std::string PyLower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    if (IsAscii(s)) {
        for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
        return out;
    }
    const std::vector<uint32_t> cps = Decode(s);
    for (size_t i = 0; i < cps.size(); ++i) AppendLowerAt(out, cps, i);
    return out;
}

std::string PyTitle(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const std::vector<uint32_t> cps = Decode(s);
    bool previous_is_cased = false;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (previous_is_cased) {
            AppendLowerAt(out, cps, i);
        } else {
            AppendTitleChar(out, cps[i]);
        }
        previous_is_cased = IsCased(cps[i]);
    }
    return out;
}

std::string PyCapitalize(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const std::vector<uint32_t> cps = Decode(s);
    for (size_t i = 0; i < cps.size(); ++i) {
        if (i == 0) {
            AppendTitleChar(out, cps[i]);
        } else {
            AppendLowerAt(out, cps, i);
        }
    }
    return out;
}

std::string PySwapcase(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const std::vector<uint32_t> cps = Decode(s);
    for (size_t i = 0; i < cps.size(); ++i) {
        if (IsUpperChar(cps[i])) {
            AppendLowerAt(out, cps, i);
        } else if (IsLowerChar(cps[i])) {
            AppendUpper(out, cps[i]);
        } else {
            AppendUtf8(out, cps[i]);
        }
    }
    return out;
}

bool PyIsLower(std::string_view s) {
    bool cased = false;
    for (size_t pos = 0; pos < s.size();) {
        const uint32_t cp = DecodeUtf8(s, pos);
        if (IsUpperChar(cp)) return false;
        if (IsLowerChar(cp)) cased = true;
        else if (IsCased(cp)) return false;  // titlecase letters
    }
    return cased;
}

bool PyIsUpper(std::string_view s) {
    bool cased = false;
    for (size_t pos = 0; pos < s.size();) {
        const uint32_t cp = DecodeUtf8(s, pos);
        if (IsLowerChar(cp)) return false;
        if (IsUpperChar(cp)) cased = true;
        else if (IsCased(cp)) return false;  // titlecase letters
    }
    return cased;
}

bool PyAll(std::string_view s, bool (*pred)(uint32_t)) {
    if (s.empty()) return false;
    for (size_t pos = 0; pos < s.size();) {
        if (!pred(DecodeUtf8(s, pos))) return false;
    }
    return true;
}

}  // namespace prepack::jinja
