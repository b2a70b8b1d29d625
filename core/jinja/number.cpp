#include "core/jinja/number.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/jinja/error.h"
#include "core/jinja/text.h"

namespace prepack::jinja {
namespace {
[[noreturn]] void Overflow() { Fail("integer overflow: the result needs more than 64 bits, which is not supported"); }


// Strips Python whitespace from both ends.
std::string_view StripPy(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e) {
        size_t pos = b;
        if (!IsPyWhitespace(DecodeUtf8(s, pos))) break;
        b = pos;
    }
    while (e > b) {
        // Step back one code point.
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!IsPyWhitespace(DecodeUtf8(s, pos))) break;
        e = start;
    }
    return s.substr(b, e - b);
}

int DigitValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
    return 99;
}
}  // namespace

std::string FloatRepr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string_view sci(buf, res.ptr - buf);  // [-]D[.DDD]e[+-]XX
    std::string out;
    if (sci[0] == '-') {
        out.push_back('-');
        sci.remove_prefix(1);
    }
    const size_t e = sci.find('e');
    std::string digits;
    for (char c : sci.substr(0, e)) {
        if (c != '.') digits.push_back(c);
    }
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    const int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
    const int decpt = exp + 1;  // digits before the decimal point
    const int n = static_cast<int>(digits.size());
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-decpt), '0');
            out += digits;
        } else if (decpt >= n) {
            out += digits;
            out.append(static_cast<size_t>(decpt - n), '0');
            out += ".0";
        } else {
            out += digits.substr(0, decpt);
            out.push_back('.');
            out += digits.substr(decpt);
        }
    } else {
        out.push_back(digits[0]);
        if (n > 1) {
            out.push_back('.');
            out += digits.substr(1);
        }
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        out += eb;
    }
    return out;
}

std::optional<int64_t> ParsePyInt(std::string_view s, int base, bool* big, std::string* digits) {
    if (big != nullptr) *big = false;
    s = StripPy(s);
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.size() >= 2 && s[0] == '0') {
        const char p = static_cast<char>(s[1] | 0x20);
        const int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb != 0 && (base == 0 || base == pb)) {
            base = pb;
            s.remove_prefix(2);
            if (!s.empty() && s[0] == '_') s.remove_prefix(1);  // 0x_1f is valid
        } else if (base == 0) {
            // Base 0: a leading zero allows only zeros ("00" is 0, "01" is an error).
            for (char c : s) {
                if (c != '0' && c != '_') return std::nullopt;
            }
            base = 10;
        }
    }
    if (base == 0) base = 10;
    if (s.empty()) return std::nullopt;
    // Python's int() is unbounded; accumulate as a negative number so that
    // INT64_MIN parses, and fail clearly past 64 bits.
    int64_t acc = 0;
    bool prev_digit = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '_') {
            if (!prev_digit || i + 1 == s.size()) return std::nullopt;
            prev_digit = false;
            continue;
        }
        const int d = DigitValue(c);
        if (d >= base) return std::nullopt;
        if (acc < (std::numeric_limits<int64_t>::min() + d) / base) {
            if (big == nullptr || base != 10) Overflow();
            // Valid so far; check the rest, then hand the digits over.
            for (size_t j = i; j < s.size(); ++j) {
                if (s[j] == '_' ? (j + 1 == s.size() || s[j + 1] == '_') : DigitValue(s[j]) >= 10) return std::nullopt;
            }
            *big = true;
            if (digits != nullptr) {
                digits->clear();
                if (neg) digits->push_back('-');
                for (char ch : s) {
                    if (ch != '_') digits->push_back(ch);
                }
            }
            return std::nullopt;
        }
        acc = acc * base - d;
        prev_digit = true;
    }
    if (!neg) {
        if (acc == std::numeric_limits<int64_t>::min()) Overflow();
        acc = -acc;
    }
    return acc;
}

std::optional<double> ParsePyFloat(std::string_view s) {
    s = StripPy(s);
    std::string clean;
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    std::string lower;
    for (char c : s) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    if (lower == "inf" || lower == "infinity") return neg ? -HUGE_VAL : HUGE_VAL;
    if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
    // Digits, '.', exponent; underscores only between digits.
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '_') {
            const bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                            std::isdigit(static_cast<unsigned char>(s[i + 1]));
            if (!ok) return std::nullopt;
            continue;
        }
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' ||
              c == '-')) {
            return std::nullopt;
        }
        clean.push_back(c);
    }
    if (clean.empty()) return std::nullopt;
    // from_chars accepts forms Python does not ("1e" is rejected by both;
    // "." by both); it never accepts a leading '+', handled above.
    if (clean[0] == '+' || clean[0] == '-') return std::nullopt;
    bool digit = false;
    for (char c : clean) {
        if (c == 'e' || c == 'E') break;
        if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    }
    if (!digit) return std::nullopt;
    double v = 0;
    auto res = std::from_chars(clean.data(), clean.data() + clean.size(), v, std::chars_format::general);
    if (res.ptr != clean.data() + clean.size()) return std::nullopt;
    if (res.ec == std::errc::result_out_of_range) {
        // Overflow gives inf in Python; underflow gives 0.
        const size_t e = clean.find_first_of("eE");
        const bool big = e == std::string::npos || clean[e + 1] != '-';
        v = big ? HUGE_VAL : 0.0;
    } else if (res.ec != std::errc()) {
        return std::nullopt;
    }
    return neg ? -v : v;
}

int64_t CheckedSub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) Overflow();
    return r;
}
int64_t CheckedMul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) Overflow();
    return r;
}
int64_t FloorDiv(int64_t a, int64_t b) {
    if (b == -1) return CheckedSub(0, a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
int64_t FloorMod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

// CPython's float_floor_div / float_rem.
double FloatMod(double a, double b) {
    double mod = std::fmod(a, b);
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) mod += b;
    } else {
        mod = std::copysign(0.0, b);
    }
    return mod;
}
double FloatFloorDiv(double a, double b) {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) div -= 1.0;
    }
    double floordiv;
    if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, a / b);
    }
    return floordiv;
}

int CompareIntFloat(int64_t i, double d) {
    if (d >= 9223372036854775808.0) return -1;
    if (d < -9223372036854775808.0) return 1;
    const double t = std::trunc(d);
    const auto ti = static_cast<int64_t>(t);
    if (i < ti) return -1;
    if (i > ti) return 1;
    const double frac = d - t;
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

double PyRound(double x, int64_t ndigits) {
    if (!std::isfinite(x)) return x;
    if (ndigits > 320) return x;
    if (ndigits < -320) return std::copysign(0.0, x);
    if (ndigits >= 0) {
        // printf rounds the exact binary value correctly, half to even.
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
        double v = std::strtod(buf, nullptr);
        return v == 0 ? std::copysign(0.0, x) : v;
    }
    // Negative ndigits: round to a multiple of 10**-ndigits, half to even.
    const double p = std::pow(10.0, static_cast<double>(-ndigits));
    if (!std::isfinite(p)) return std::copysign(0.0, x);
    const double y = x / p;
    double z = std::round(y);
    if (std::fabs(y - std::trunc(y)) == 0.5) z = 2.0 * std::round(y / 2.0);
    const double r = z * p;
    return r == 0 ? std::copysign(0.0, x) : r;
}

}  // namespace prepack::jinja
