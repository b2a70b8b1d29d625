// Python number semantics: float repr, int()/float() parsing of strings,
// and 64-bit integer arithmetic that fails clearly where Python would grow
// a big integer (no template needs one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace prepack::jinja {

// repr(float): the shortest digits that round-trip, fixed notation for
// exponents -4 <= e < 16, "1e-05" style otherwise, "inf", "nan".
std::string FloatRepr(double d);

// int(s, base) for a str: optional whitespace and sign, underscores between
// digits, a 0x/0o/0b prefix for its base (or any with base 0). nullopt when
// Python raises ValueError; fails (Error) when the value needs a big integer.
// With `big` set, a value past 64 bits is not an error: *big becomes true
// and `digits` (when set) receives its sign and decimal digits for BigInt
// (base 10 only).
std::optional<int64_t> ParsePyInt(std::string_view s, int base, bool* big = nullptr, std::string* digits = nullptr);
// float(s) for a str: whitespace, sign, underscores between digits, inf/nan.
std::optional<double> ParsePyFloat(std::string_view s);

// Checked int64 arithmetic for the few places that stay within 64 bits
// (ops.cpp moves to BigInt instead): fails with a clear error on overflow.
int64_t CheckedSub(int64_t a, int64_t b);
int64_t CheckedMul(int64_t a, int64_t b);
// Python's floor division and modulo (the result takes the divisor's sign).
int64_t FloorDiv(int64_t a, int64_t b);
int64_t FloorMod(int64_t a, int64_t b);
double FloatFloorDiv(double a, double b);
double FloatMod(double a, double b);

// Exact comparison of an int with a float (Python compares them exactly):
// -1, 0 or 1; the float must not be NaN.
int CompareIntFloat(int64_t i, double d);

// round(x, ndigits) for a float, as Python rounds (correctly rounded,
// half to even on the exact binary value).
double PyRound(double x, int64_t ndigits);

}  // namespace prepack::jinja
