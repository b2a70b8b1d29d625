#include "core/jinja/bigint.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {
constexpr uint32_t kBase = 1000000000;
constexpr size_t kMaxDigits = 4300;  // Python's default int <-> str limit
}  // namespace

void BigInt::Normalise() {
    while (!mag_.empty() && mag_.back() == 0) mag_.pop_back();
    if (mag_.empty()) neg_ = false;
}

void BigInt::CheckSize() const {
    if (mag_.size() > (kMaxDigits + 8) / 9 + 2) {
        Fail("integer too large: more than 4300 digits (Python cannot print it either)");
    }
}

BigInt BigInt::FromInt(int64_t v) {
    BigInt b;
    b.neg_ = v < 0;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    while (u > 0) {
        b.mag_.push_back(static_cast<uint32_t>(u % kBase));
        u /= kBase;
    }
    return b;
}

std::optional<BigInt> BigInt::FromDecimal(std::string_view digits, bool negative) {
    if (digits.empty()) return std::nullopt;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
    }
    size_t first = digits.find_first_not_of('0');
    if (first == std::string_view::npos) return BigInt{};
    digits.remove_prefix(first);
    if (digits.size() > kMaxDigits) Fail("integer too large: more than 4300 digits (Python cannot print it either)");
    BigInt b;
    for (size_t end = digits.size(); end > 0;) {
        const size_t start = end >= 9 ? end - 9 : 0;
        b.mag_.push_back(static_cast<uint32_t>(std::stoul(std::string(digits.substr(start, end - start)))));
        end = start;
    }
    b.neg_ = negative;
    b.Normalise();
    return b;
}

BigInt BigInt::FromDouble(double d) {
    int exp = 0;
    const double m = std::frexp(std::fabs(d), &exp);  // |d| = m * 2^exp, m in [0.5, 1)
    // The 53-bit mantissa as an integer, then shifted by the rest of the exponent.
    const auto mant = static_cast<int64_t>(std::ldexp(m, 53));
    BigInt b = FromInt(mant);
    const BigInt two = FromInt(2);
    for (int e = exp - 53; e > 0; --e) b = Mul(b, two);
    if (exp - 53 < 0) {
        BigInt q, r;
        DivMod(b, Pow(two, static_cast<uint64_t>(53 - exp)), &q, &r);
        b = q;
    }
    b.neg_ = d < 0 && !b.is_zero();
    return b;
}

bool BigInt::FitsInt64(int64_t* out) const {
    if (mag_.size() > 3) return false;
    unsigned __int128 v = 0;
    for (size_t i = mag_.size(); i-- > 0;) v = v * kBase + mag_[i];
    if (!neg_ && v <= static_cast<unsigned __int128>(INT64_MAX)) {
        *out = static_cast<int64_t>(v);
        return true;
    }
    if (neg_ && v <= static_cast<unsigned __int128>(INT64_MAX) + 1) {
        *out = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
        return true;
    }
    return false;
}

std::string BigInt::ToString() const {
    std::string s = Decimal();
    if (s.size() - (neg_ ? 1 : 0) > kMaxDigits) {
        Fail("Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to "
             "increase the limit");
    }
    return s;
}

std::string BigInt::Decimal() const {
    if (mag_.empty()) return "0";
    std::string s = neg_ ? "-" : "";
    s += std::to_string(mag_.back());
    for (size_t i = mag_.size() - 1; i-- > 0;) {
        std::string part = std::to_string(mag_[i]);
        s.append(9 - part.size(), '0');
        s += part;
    }
    return s;
}

double BigInt::ToDouble() const {
    const double d = std::strtod(Decimal().c_str(), nullptr);  // correctly rounded
    if (std::isinf(d)) Fail("int too large to convert to float");
    return d;
}

BigInt BigInt::Negated() const {
    BigInt b = *this;
    if (!b.is_zero()) b.neg_ = !b.neg_;
    return b;
}

int BigInt::CompareMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    for (size_t i = a.size(); i-- > 0;) {
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

std::vector<uint32_t> BigInt::AddMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    std::vector<uint32_t> r;
    uint32_t carry = 0;
    for (size_t i = 0; i < std::max(a.size(), b.size()) || carry; ++i) {
        uint64_t s = carry;
        if (i < a.size()) s += a[i];
        if (i < b.size()) s += b[i];
        r.push_back(static_cast<uint32_t>(s % kBase));
        carry = static_cast<uint32_t>(s / kBase);
    }
    return r;
}

std::vector<uint32_t> BigInt::SubMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    std::vector<uint32_t> r;
    int64_t borrow = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        int64_t d = static_cast<int64_t>(a[i]) - borrow - (i < b.size() ? b[i] : 0);
        borrow = d < 0 ? 1 : 0;
        if (d < 0) d += kBase;
        r.push_back(static_cast<uint32_t>(d));
    }
    return r;
}

BigInt BigInt::Add(const BigInt& a, const BigInt& b) {
    BigInt r;
    if (a.neg_ == b.neg_) {
        r.mag_ = AddMag(a.mag_, b.mag_);
        r.neg_ = a.neg_;
    } else if (CompareMag(a.mag_, b.mag_) >= 0) {
        r.mag_ = SubMag(a.mag_, b.mag_);
        r.neg_ = a.neg_;
    } else {
        r.mag_ = SubMag(b.mag_, a.mag_);
        r.neg_ = b.neg_;
    }
    r.Normalise();
    r.CheckSize();
    return r;
}

BigInt BigInt::Sub(const BigInt& a, const BigInt& b) { return Add(a, b.Negated()); }

BigInt BigInt::Mul(const BigInt& a, const BigInt& b) {
    BigInt r;
    if (a.is_zero() || b.is_zero()) return r;
    if (a.mag_.size() + b.mag_.size() > (kMaxDigits + 8) / 9 + 2) {
        Fail("integer too large: more than 4300 digits (Python cannot print it either)");
    }
    std::vector<uint64_t> acc(a.mag_.size() + b.mag_.size() + 1, 0);
    for (size_t i = 0; i < a.mag_.size(); ++i) {
        uint64_t carry = 0;
        for (size_t j = 0; j < b.mag_.size() || carry; ++j) {
            uint64_t cur = acc[i + j] + carry + (j < b.mag_.size() ? static_cast<uint64_t>(a.mag_[i]) * b.mag_[j] : 0);
            acc[i + j] = cur % kBase;
            carry = cur / kBase;
        }
    }
    for (uint64_t v : acc) r.mag_.push_back(static_cast<uint32_t>(v));
    r.neg_ = a.neg_ != b.neg_;
    r.Normalise();
    r.CheckSize();
    return r;
}

void BigInt::DivMod(const BigInt& a, const BigInt& b, BigInt* q, BigInt* r) {
    // Truncating long division on magnitudes, each quotient limb found by
    // binary search, then adjusted to Python's floor semantics.
    BigInt quot, rem;
    BigInt divisor = b;
    divisor.neg_ = false;
    quot.mag_.assign(a.mag_.size(), 0);
    for (size_t i = a.mag_.size(); i-- > 0;) {
        rem.mag_.insert(rem.mag_.begin(), a.mag_[i]);
        rem.Normalise();
        uint32_t lo = 0, hi = kBase - 1;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo + 1) / 2;
            if (CompareMag(Mul(divisor, FromInt(mid)).mag_, rem.mag_) <= 0) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        quot.mag_[i] = lo;
        if (lo > 0) rem = Sub(rem, Mul(divisor, FromInt(lo)));
    }
    quot.neg_ = a.neg_ != b.neg_;
    quot.Normalise();
    rem.neg_ = a.neg_;
    rem.Normalise();
    if (!rem.is_zero() && rem.neg_ != b.neg_) {
        quot = Sub(quot, FromInt(1));
        rem = Add(rem, b);
    }
    if (q != nullptr) *q = quot;
    if (r != nullptr) *r = rem;
}

BigInt BigInt::Pow(const BigInt& base, uint64_t exp) {
    BigInt result = FromInt(1), b = base;
    while (exp > 0) {
        if (exp & 1) result = Mul(result, b);
        exp >>= 1;
        if (exp > 0) b = Mul(b, b);
    }
    return result;
}

int BigInt::Compare(const BigInt& a, const BigInt& b) {
    if (a.neg_ != b.neg_) return a.neg_ ? -1 : 1;
    const int m = CompareMag(a.mag_, b.mag_);
    return a.neg_ ? -m : m;
}

int BigInt::CompareDouble(double d) const {
    const double t = std::trunc(d);
    const int c = Compare(*this, FromDouble(t));
    if (c != 0) return c;
    const double frac = d - t;
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

}  // namespace prepack::jinja
