#pragma once
// ---- element types: f64, f32, bf16, f16 ----
// weft names its element types itself so that host code (reference backend, checkpoints,
// tests) can hold and compute with 16-bit floats without CUDA headers. bf16 and f16 are
// plain 2-byte structs holding the IEEE-754 style bit pattern; arithmetic widens to float,
// computes there and rounds back (to nearest, ties to even). Because float carries at
// least 2p+2 bits for both formats (p = 8 and 11), that double rounding is innocuous:
// + - * / give the correctly rounded 16-bit result. backend/cuda/dtype.cuh converts to and
// from CUDA's __nv_bfloat16 / __half by copying bits.
#include "weft/config.hpp"  // WEFT_HOST_DEVICE

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace weft {

/// IEEE-754 binary64.
using f64 = double;
/// IEEE-754 binary32.
using f32 = float;

namespace detail {

// ---- bit casting usable in constexpr host and device code ----
// std::bit_cast is a host-only constexpr function for nvcc (calling it from device code needs
// --expt-relaxed-constexpr); the builtin behind it works for g++ and nvcc alike.
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
WEFT_HOST_DEVICE constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}

// Number of significant bits of x (0 for 0); a branch-light constexpr std::bit_width that
// also runs in device code.
WEFT_HOST_DEVICE constexpr int bit_width(std::uint64_t x) noexcept {
  int w = 0;
  for (int step = 32; step > 0; step /= 2) {
    if (x >> step) {
      x >>= step;
      w += step;
    }
  }
  return w + static_cast<int>(x);
}

// x / 2^shift rounded to nearest, ties to even (shift >= 1).
WEFT_HOST_DEVICE constexpr std::uint64_t round_shift_right(std::uint64_t x, int shift) noexcept {
  if (shift > 64) return 0;  // x < 2^64 <= half a unit: rounds to 0
  const std::uint64_t q = shift == 64 ? 0 : x >> shift;
  const std::uint64_t rem = shift == 64 ? x : x & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

// ---- the 16-bit formats: 1 sign bit, ExpBits exponent bits, ManBits stored mantissa bits ----
template <int ExpBits, int ManBits>
struct format16 {
  static_assert(1 + ExpBits + ManBits == 16);
  static constexpr int bias = (1 << (ExpBits - 1)) - 1;
  static constexpr std::uint16_t sign_mask = 0x8000;
  static constexpr std::uint16_t exp_mask = ((1u << ExpBits) - 1) << ManBits;
  static constexpr std::uint16_t man_mask = (1u << ManBits) - 1;
  static constexpr std::uint16_t quiet_bit = 1u << (ManBits - 1);
  static constexpr std::uint16_t inf_bits = exp_mask;

  // Rounds (-1)^negative * sig * 2^exp2 to the nearest 16-bit value, ties to even; values at
  // or beyond max + ulp(max)/2 become infinity, as IEEE-754 round-to-nearest prescribes.
  WEFT_HOST_DEVICE static constexpr std::uint16_t round_pack(bool negative, std::uint64_t sig, int exp2) noexcept {
    const std::uint16_t sign = negative ? sign_mask : 0;
    if (sig == 0) return sign;
    const int e = bit_width(sig) - 1 + exp2;  // unbiased exponent of the leading bit
    if (e > bias) return sign | inf_bits;     // >= 2^(emax+1): beyond the overflow threshold
    // Exponent of the last kept bit: normals keep ManBits below the leading bit, subnormals
    // share the quantum of the smallest normal.
    const int e_eff = e < 1 - bias ? 1 - bias : e;
    const int shift = (e_eff - ManBits) - exp2;
    const std::uint64_t m = shift <= 0 ? sig << -shift : round_shift_right(sig, shift);
    // m includes the implicit bit for normals; adding it onto (biased exponent - 1) lets a
    // rounding carry step into the next binade, from subnormal to normal, or to infinity.
    const auto packed = (static_cast<std::uint32_t>(e_eff + bias - 1) << ManBits) + static_cast<std::uint32_t>(m);
    return static_cast<std::uint16_t>(sign | packed);
  }

  // Narrows an IEEE binary float (float or double) given by its bits.
  template <int SrcExpBits, int SrcManBits, class UInt>
  WEFT_HOST_DEVICE static constexpr std::uint16_t narrow(UInt bits) noexcept {
    constexpr int src_bias = (1 << (SrcExpBits - 1)) - 1;
    constexpr UInt src_man_mask = (UInt{1} << SrcManBits) - 1;
    constexpr UInt src_exp_max = (UInt{1} << SrcExpBits) - 1;
    const bool negative = (bits >> (SrcExpBits + SrcManBits)) != 0;
    const UInt exp = (bits >> SrcManBits) & src_exp_max;
    const UInt man = bits & src_man_mask;
    if (exp == src_exp_max) {
      const std::uint16_t sign = negative ? sign_mask : 0;
      if (man == 0) return sign | inf_bits;
      // NaN: keep the top payload bits, force the quiet bit so the result cannot become inf.
      const auto payload = static_cast<std::uint16_t>(man >> (SrcManBits - ManBits));
      return sign | inf_bits | quiet_bit | payload;
    }
    if (exp == 0) return round_pack(negative, man, 1 - src_bias - SrcManBits);  // subnormal or zero
    return round_pack(negative, man | (UInt{1} << SrcManBits), static_cast<int>(exp) - src_bias - SrcManBits);
  }

  WEFT_HOST_DEVICE static constexpr std::uint16_t from_float(float x) noexcept {
    return narrow<8, 23>(detail::bit_cast<std::uint32_t>(x));
  }
  WEFT_HOST_DEVICE static constexpr std::uint16_t from_double(double x) noexcept {
    return narrow<11, 52>(detail::bit_cast<std::uint64_t>(x));
  }
  template <std::integral I>
  WEFT_HOST_DEVICE static constexpr std::uint16_t from_integer(I x) noexcept {
    if constexpr (std::is_same_v<I, bool>) {
      return round_pack(false, x ? 1 : 0, 0);
    } else {
      const bool negative = x < 0;
      // Negate in unsigned arithmetic so that the most negative value has a magnitude too.
      const auto u = static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<I>>(x));
      const std::uint64_t magnitude = negative ? (~u + 1) & (std::numeric_limits<std::make_unsigned_t<I>>::max()) : u;
      return round_pack(negative, magnitude, 0);
    }
  }

  // Exact widening to float: every 16-bit value (subnormals included) is a float.
  WEFT_HOST_DEVICE static constexpr float to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & sign_mask) << 16;
    const std::uint32_t exp = (h & exp_mask) >> ManBits;
    std::uint32_t man = h & man_mask;
    constexpr int widen = 23 - ManBits;
    if (exp == (exp_mask >> ManBits)) return detail::bit_cast<float>(sign | 0x7F800000u | (man << widen));
    if (exp == 0) {
      if (man == 0) return detail::bit_cast<float>(sign);
      // Subnormal: normalise so that the leading bit becomes float's implicit bit.
      int e = 1 - bias;
      while ((man & (1u << ManBits)) == 0) {
        man <<= 1;
        --e;
      }
      return detail::bit_cast<float>(sign | (static_cast<std::uint32_t>(e + 127) << 23) | ((man & man_mask) << widen));
    }
    return detail::bit_cast<float>(sign | (static_cast<std::uint32_t>(static_cast<int>(exp) - bias + 127) << 23) |
                                   (man << widen));
  }
};

using bf16_format = format16<8, 7>;
using f16_format = format16<5, 10>;

// bf16 is float's upper half: rounding float -> bf16 is one add on the bits. Correct for every
// non-NaN float, including subnormals and the carry into infinity.
WEFT_HOST_DEVICE constexpr std::uint16_t float_to_bf16_bits(float x) noexcept {
  const auto bits = detail::bit_cast<std::uint32_t>(x);
  // Branch-free, so loops of conversions vectorise (AVX-512 on the host step's hot loops).
  // NaN: sign, top payload bits and the quiet bit, as bf16_format::narrow<8, 23> gives.
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (bits >> 16) | 0x40u;
  return static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

}  // namespace detail

// ---- bf16 ----

/// bfloat16: 1 sign, 8 exponent, 7 mantissa bits; float's range at 8 bits of precision.
/// Trivially copyable, 2 bytes; default construction leaves the bits uninitialised, like float.
struct bf16 {
  std::uint16_t bits;

  bf16() = default;
  /// Rounds to nearest, ties to even; NaN stays a (quiet) NaN, overflow gives infinity.
  WEFT_HOST_DEVICE constexpr explicit bf16(float x) noexcept : bits(detail::float_to_bf16_bits(x)) {}
  /// Rounds directly from double (no intermediate rounding to float).
  WEFT_HOST_DEVICE constexpr explicit bf16(double x) noexcept : bits(detail::bf16_format::from_double(x)) {}
  /// Rounds the exact integer value.
  template <std::integral I>
  WEFT_HOST_DEVICE constexpr explicit bf16(I x) noexcept : bits(detail::bf16_format::from_integer(x)) {}

  /// The value with this bit pattern.
  WEFT_HOST_DEVICE static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    bf16 r{};
    r.bits = b;
    return r;
  }

  /// Exact.
  WEFT_HOST_DEVICE constexpr explicit operator float() const noexcept {
    return detail::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  /// Exact.
  WEFT_HOST_DEVICE constexpr explicit operator double() const noexcept { return static_cast<float>(*this); }
};

// ---- f16 ----

/// IEEE-754 binary16: 1 sign, 5 exponent, 10 mantissa bits, with subnormals.
/// Trivially copyable, 2 bytes; default construction leaves the bits uninitialised, like float.
struct f16 {
  std::uint16_t bits;

  f16() = default;
  /// Rounds to nearest, ties to even, subnormals included; NaN stays a (quiet) NaN,
  /// |x| >= 65520 gives infinity.
  WEFT_HOST_DEVICE constexpr explicit f16(float x) noexcept : bits(detail::f16_format::from_float(x)) {}
  /// Rounds directly from double (no intermediate rounding to float).
  WEFT_HOST_DEVICE constexpr explicit f16(double x) noexcept : bits(detail::f16_format::from_double(x)) {}
  /// Rounds the exact integer value.
  template <std::integral I>
  WEFT_HOST_DEVICE constexpr explicit f16(I x) noexcept : bits(detail::f16_format::from_integer(x)) {}

  /// The value with this bit pattern.
  WEFT_HOST_DEVICE static constexpr f16 from_bits(std::uint16_t b) noexcept {
    f16 r{};
    r.bits = b;
    return r;
  }

  /// Exact.
  WEFT_HOST_DEVICE constexpr explicit operator float() const noexcept { return detail::f16_format::to_float(bits); }
  /// Exact.
  WEFT_HOST_DEVICE constexpr explicit operator double() const noexcept { return static_cast<float>(*this); }
};

static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2 && std::is_trivially_copyable_v<bf16>);
static_assert(sizeof(f16) == 2 && alignof(f16) == 2 && std::is_trivially_copyable_v<f16>);

// ---- arithmetic and comparison on the 16-bit types ----

/// Satisfied by the two 16-bit floating-point types, bf16 and f16.
template <class T>
concept half_float = std::same_as<T, bf16> || std::same_as<T, f16>;

// Operands of different 16-bit types do not mix: convert one of them explicitly.
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator+(T a, T b) noexcept { return T(static_cast<float>(a) + static_cast<float>(b)); }
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator-(T a, T b) noexcept { return T(static_cast<float>(a) - static_cast<float>(b)); }
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator*(T a, T b) noexcept { return T(static_cast<float>(a) * static_cast<float>(b)); }
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator/(T a, T b) noexcept { return T(static_cast<float>(a) / static_cast<float>(b)); }
/// Flips the sign bit (also of zeros and NaNs), as IEEE negate does.
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator-(T a) noexcept { return T::from_bits(static_cast<std::uint16_t>(a.bits ^ 0x8000u)); }
template <half_float T>
WEFT_HOST_DEVICE constexpr T operator+(T a) noexcept { return a; }

template <half_float T>
WEFT_HOST_DEVICE constexpr T& operator+=(T& a, T b) noexcept { return a = a + b; }
template <half_float T>
WEFT_HOST_DEVICE constexpr T& operator-=(T& a, T b) noexcept { return a = a - b; }
template <half_float T>
WEFT_HOST_DEVICE constexpr T& operator*=(T& a, T b) noexcept { return a = a * b; }
template <half_float T>
WEFT_HOST_DEVICE constexpr T& operator/=(T& a, T b) noexcept { return a = a / b; }

// Comparisons follow float: NaN is unordered (every comparison but != is false), -0 == +0.
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator==(T a, T b) noexcept { return static_cast<float>(a) == static_cast<float>(b); }
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator!=(T a, T b) noexcept { return !(a == b); }
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator<(T a, T b) noexcept { return static_cast<float>(a) < static_cast<float>(b); }
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator<=(T a, T b) noexcept { return static_cast<float>(a) <= static_cast<float>(b); }
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator>(T a, T b) noexcept { return static_cast<float>(a) > static_cast<float>(b); }
template <half_float T>
WEFT_HOST_DEVICE constexpr bool operator>=(T a, T b) noexcept { return static_cast<float>(a) >= static_cast<float>(b); }

// ---- dtype: the closed set of element types weft computes with ----

/// Satisfied by weft's element types: f64, f32, bf16, f16 (not cv-qualified).
template <class T>
concept dtype = std::same_as<T, f64> || std::same_as<T, f32> || half_float<T>;

/// Static facts about an element type: `name` (weft's spelling), `size` in bytes and
/// `safetensors_name` (the dtype string of the safetensors header).
template <dtype T>
struct dtype_traits;

template <>
struct dtype_traits<f64> {
  static constexpr std::string_view name = "f64";
  static constexpr std::size_t size = 8;
  static constexpr std::string_view safetensors_name = "F64";
};
template <>
struct dtype_traits<f32> {
  static constexpr std::string_view name = "f32";
  static constexpr std::size_t size = 4;
  static constexpr std::string_view safetensors_name = "F32";
};
template <>
struct dtype_traits<bf16> {
  static constexpr std::string_view name = "bf16";
  static constexpr std::size_t size = 2;
  static constexpr std::string_view safetensors_name = "BF16";
};
template <>
struct dtype_traits<f16> {
  static constexpr std::string_view name = "f16";
  static constexpr std::size_t size = 2;
  static constexpr std::string_view safetensors_name = "F16";
};

/// `dtype_traits<T>::name`, e.g. "bf16".
template <dtype T>
inline constexpr std::string_view dtype_name_v = dtype_traits<T>::name;

}  // namespace weft

// ---- numeric_limits ----
// Values are spelled as bit patterns; the comments give them in decimal.

template <>
class std::numeric_limits<weft::bf16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = false;  // not an IEEE-754 interchange format
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  WEFT_HOST_DEVICE static constexpr weft::bf16 min() noexcept { return weft::bf16::from_bits(0x0080); }  // 2^-126
  WEFT_HOST_DEVICE static constexpr weft::bf16 lowest() noexcept { return weft::bf16::from_bits(0xFF7F); }
  WEFT_HOST_DEVICE static constexpr weft::bf16 max() noexcept { return weft::bf16::from_bits(0x7F7F); }  // ~3.39e38
  WEFT_HOST_DEVICE static constexpr weft::bf16 epsilon() noexcept { return weft::bf16::from_bits(0x3C00); }  // 2^-7
  WEFT_HOST_DEVICE static constexpr weft::bf16 round_error() noexcept { return weft::bf16::from_bits(0x3F00); }  // 0.5
  WEFT_HOST_DEVICE static constexpr weft::bf16 infinity() noexcept { return weft::bf16::from_bits(0x7F80); }
  WEFT_HOST_DEVICE static constexpr weft::bf16 quiet_NaN() noexcept { return weft::bf16::from_bits(0x7FC0); }
  WEFT_HOST_DEVICE static constexpr weft::bf16 signaling_NaN() noexcept { return weft::bf16::from_bits(0x7FA0); }
  WEFT_HOST_DEVICE static constexpr weft::bf16 denorm_min() noexcept { return weft::bf16::from_bits(0x0001); }  // 2^-133
};

template <>
class std::numeric_limits<weft::f16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = true;  // binary16
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  WEFT_HOST_DEVICE static constexpr weft::f16 min() noexcept { return weft::f16::from_bits(0x0400); }  // 2^-14
  WEFT_HOST_DEVICE static constexpr weft::f16 lowest() noexcept { return weft::f16::from_bits(0xFBFF); }
  WEFT_HOST_DEVICE static constexpr weft::f16 max() noexcept { return weft::f16::from_bits(0x7BFF); }  // 65504
  WEFT_HOST_DEVICE static constexpr weft::f16 epsilon() noexcept { return weft::f16::from_bits(0x1400); }  // 2^-10
  WEFT_HOST_DEVICE static constexpr weft::f16 round_error() noexcept { return weft::f16::from_bits(0x3800); }  // 0.5
  WEFT_HOST_DEVICE static constexpr weft::f16 infinity() noexcept { return weft::f16::from_bits(0x7C00); }
  WEFT_HOST_DEVICE static constexpr weft::f16 quiet_NaN() noexcept { return weft::f16::from_bits(0x7E00); }
  WEFT_HOST_DEVICE static constexpr weft::f16 signaling_NaN() noexcept { return weft::f16::from_bits(0x7D00); }
  WEFT_HOST_DEVICE static constexpr weft::f16 denorm_min() noexcept { return weft::f16::from_bits(0x0001); }  // 2^-24
};
