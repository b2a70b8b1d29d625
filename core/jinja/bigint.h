// Python's unbounded int, for the values that do not fit 64 bits (2 ** 64,
// 10 ** 20 // 3). Small and simple: base 10^9 limbs, schoolbook arithmetic,
// and a cap at 4300 decimal digits, the most Python itself will print
// (sys.int_info.default_max_str_digits), so no template can make one costly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prepack::jinja {

class BigInt {
public:
    BigInt() = default;
    static BigInt FromInt(int64_t v);
    // Decimal digits (no sign, no underscores); nullopt when empty or not digits.
    static std::optional<BigInt> FromDecimal(std::string_view digits, bool negative);
    // An integral double (exact).
    static BigInt FromDouble(double d);

    bool negative() const { return neg_; }
    bool is_zero() const { return mag_.empty(); }
    bool FitsInt64(int64_t* out) const;
    // str(x); fails past 4300 digits, as Python does.
    std::string ToString() const;
    // float(x): correctly rounded; fails (Error) past the double range.
    double ToDouble() const;

    static BigInt Add(const BigInt& a, const BigInt& b);
    static BigInt Sub(const BigInt& a, const BigInt& b);
    static BigInt Mul(const BigInt& a, const BigInt& b);
    // Python's floor division and modulo; b must not be zero.
    static void DivMod(const BigInt& a, const BigInt& b, BigInt* q, BigInt* r);
    static BigInt Pow(const BigInt& base, uint64_t exp);
    static int Compare(const BigInt& a, const BigInt& b);
    // Exact comparison with a finite double.
    int CompareDouble(double d) const;
    BigInt Negated() const;

private:
    std::string Decimal() const;  // without the digit limit
    static int CompareMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);
    static std::vector<uint32_t> AddMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);
    static std::vector<uint32_t> SubMag(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);  // a >= b
    void Normalise();
    void CheckSize() const;

    bool neg_ = false;
    std::vector<uint32_t> mag_;  // base 10^9, least significant first, no leading zero limbs
};

}  // namespace prepack::jinja
