// Exhaustive checks of bf16 and f16 against a reference written independently of
// include/weft/core/dtype.hpp: decoding by the IEEE formula (std::ldexp in double),
// encoding by searching a table of all decoded values for the nearest one, ties to the
// pattern with an even mantissa.
#include <weft/core/dtype.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using weft::bf16;
using weft::f16;

// ---- the reference ----

template <class T>
struct layout;  // exponent and mantissa widths, written down from the format specifications
template <>
struct layout<bf16> {
  static constexpr int exp_bits = 8, man_bits = 7;
};
template <>
struct layout<f16> {
  static constexpr int exp_bits = 5, man_bits = 10;
};

template <class T>
struct reference {
  static constexpr int e_bits = layout<T>::exp_bits;
  static constexpr int m_bits = layout<T>::man_bits;
  static constexpr int bias = (1 << (e_bits - 1)) - 1;
  static constexpr unsigned e_all_ones = (1u << e_bits) - 1;
  static constexpr std::uint16_t inf_pattern = static_cast<std::uint16_t>(e_all_ones << m_bits);
  static constexpr std::uint16_t max_pattern = inf_pattern - 1;  // largest finite

  // (-1)^s * 2^(1-bias) * 0.m for e == 0, (-1)^s * 2^(e-bias) * 1.m otherwise.
  static double decode(std::uint16_t p) {
    const bool neg = (p >> 15) != 0;
    const unsigned e = (p >> m_bits) & e_all_ones;
    const unsigned m = p & ((1u << m_bits) - 1);
    double v;
    if (e == e_all_ones)
      v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else if (e == 0)
      v = std::ldexp(static_cast<double>(m), 1 - bias - m_bits);
    else
      v = std::ldexp(static_cast<double>(m + (1u << m_bits)), static_cast<int>(e) - bias - m_bits);
    return neg ? -v : v;
  }

  // Non-negative finite values indexed by pattern, plus one virtual entry: 2^(emax+1), the value
  // the next pattern (infinity's) would have if the exponent did not run out. Rounding to it
  // means overflow.
  static const std::vector<double>& table() {
    static const std::vector<double> t = [] {
      std::vector<double> v;
      for (unsigned p = 0; p <= max_pattern; ++p) v.push_back(decode(static_cast<std::uint16_t>(p)));
      v.push_back(std::ldexp(1.0, bias + 1));
      return v;
    }();
    return t;
  }

  // Nearest representable value, ties to the even pattern; NaN for NaN.
  // (Differences are exact near ties by Sterbenz's lemma, so the comparison is too.)
  static std::uint16_t encode(double x, bool* is_nan = nullptr) {
    if (is_nan) *is_nan = std::isnan(x);
    if (std::isnan(x)) return 0;
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(x);
    const auto& t = table();
    if (a >= t.back()) return sign | inf_pattern;
    const auto hi = static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), a) - t.begin());
    if (t[hi] == a) return static_cast<std::uint16_t>(sign | hi);
    const std::size_t lo = hi - 1;
    const double d_lo = a - t[lo], d_hi = t[hi] - a;
    std::size_t pick = d_lo < d_hi ? lo : d_hi < d_lo ? hi : (lo % 2 == 0 ? lo : hi);
    return static_cast<std::uint16_t>(sign | pick);  // pick == max_pattern + 1 is the inf pattern
  }
};

// Bits of a float/double NaN check that does not go through weft.
template <class T>
bool is_nan_pattern(std::uint16_t p) {
  return (p & 0x7FFF) > reference<T>::inf_pattern;
}

template <class T>
bool is_quiet_nan_pattern(std::uint16_t p) {
  return is_nan_pattern<T>(p) && (p & (1u << (layout<T>::man_bits - 1))) != 0;
}

float float_from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

double double_from_bits(std::uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

// ---- the checks, run for both types ----

template <class T>
void check_decode_all() {
  using ref = reference<T>;
  int failures = 0;
  for (unsigned p = 0; p < 0x10000; ++p) {
    const auto bits = static_cast<std::uint16_t>(p);
    const double want = ref::decode(bits);
    const float got = static_cast<float>(T::from_bits(bits));
    const bool ok = std::isnan(want) ? std::isnan(got)
                                     : (static_cast<double>(got) == want && std::signbit(got) == std::signbit(want));
    if (!ok && ++failures <= 5) FAIL_CHECK("decode of 0x" << std::hex << p << " gave " << got << ", want " << want);
    // double conversion agrees with float conversion
    const double got_d = static_cast<double>(T::from_bits(bits));
    if (!(std::isnan(want) ? std::isnan(got_d) : got_d == want) && ++failures <= 5) FAIL_CHECK("double decode of 0x" << std::hex << p);
  }
  CHECK(failures == 0);
}

template <class T>
void check_round_trip_all() {
  using ref = reference<T>;
  int failures = 0;
  for (unsigned p = 0; p < 0x10000; ++p) {
    const auto bits = static_cast<std::uint16_t>(p);
    if (is_nan_pattern<T>(bits)) continue;
    const double v = ref::decode(bits);
    if (ref::encode(v) != bits && ++failures <= 5) FAIL_CHECK("reference itself fails at 0x" << std::hex << p);
    const auto via_float = T(static_cast<float>(T::from_bits(bits))).bits;
    const auto via_double = T(v).bits;
    if (via_float != bits && ++failures <= 5) FAIL_CHECK("float round trip 0x" << std::hex << p << " -> 0x" << via_float);
    if (via_double != bits && ++failures <= 5) FAIL_CHECK("double round trip 0x" << std::hex << p << " -> 0x" << via_double);
  }
  CHECK(failures == 0);
}

// Every pair of adjacent non-negative values (lo, hi), the last being (max, 2^(emax+1) = overflow):
// the midpoint goes to the even pattern, one float (or double) ulp either side to the nearer.
template <class T>
void check_midpoints_all() {
  using ref = reference<T>;
  const auto& t = ref::table();
  int failures = 0;
  auto expect = [&](auto x, std::size_t want, const char* what) {
    for (const std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      const auto in = sign ? -x : x;
      const auto got = T(in).bits;
      const auto want_bits = static_cast<std::uint16_t>(sign | want);
      if (got != want_bits && ++failures <= 8)
        FAIL_CHECK(what << ": " << static_cast<double>(in) << " -> 0x" << std::hex << got << ", want 0x" << want_bits);
      bool ref_nan = false;
      if (ref::encode(static_cast<double>(in), &ref_nan) != want_bits && ++failures <= 8)
        FAIL_CHECK("reference disagrees at " << static_cast<double>(in));
    }
  };
  for (std::size_t lo = 0; lo + 1 < t.size(); ++lo) {
    const std::size_t hi = lo + 1;  // hi == table size - 1 stands for the infinity pattern
    const double mid = (t[lo] + t[hi]) / 2;  // exact: 16-bit values have few significant bits
    const auto mid_f = static_cast<float>(mid);
    REQUIRE(static_cast<double>(mid_f) == mid);
    const std::size_t even = lo % 2 == 0 ? lo : hi;
    expect(mid_f, even, "float midpoint");
    expect(std::nextafter(mid_f, std::numeric_limits<float>::infinity()), hi, "float midpoint + ulp");
    expect(std::nextafter(mid_f, 0.0f), lo, "float midpoint - ulp");
    // The double constructor must round once, directly: mid +- one double ulp is not a float,
    // and going through float would turn it into the tie.
    expect(mid, even, "double midpoint");
    expect(std::nextafter(mid, std::numeric_limits<double>::infinity()), hi, "double midpoint + ulp");
    expect(std::nextafter(mid, 0.0), lo, "double midpoint - ulp");
  }
  CHECK(failures == 0);
}

template <class T>
void check_overflow_and_nan() {
  using ref = reference<T>;
  const auto& t = ref::table();
  const double max = t[ref::max_pattern];
  const double threshold = (max + t.back()) / 2;  // max + ulp(max)/2
  const auto inf = ref::inf_pattern;
  CHECK(T(static_cast<float>(threshold)).bits == inf);
  CHECK(T(-static_cast<float>(threshold)).bits == (inf | 0x8000));
  CHECK(T(std::nextafter(static_cast<float>(threshold), 0.0f)).bits == ref::max_pattern);
  CHECK(T(threshold).bits == inf);
  CHECK(T(std::nextafter(threshold, 0.0)).bits == ref::max_pattern);
  CHECK(T(std::numeric_limits<float>::max()).bits == inf);
  CHECK(T(std::numeric_limits<float>::infinity()).bits == inf);
  CHECK(T(-std::numeric_limits<float>::infinity()).bits == (inf | 0x8000));
  CHECK(T(1e300).bits == inf);
  CHECK(T(-1e300).bits == (inf | 0x8000));
  CHECK(T(std::numeric_limits<double>::infinity()).bits == inf);
  // Tiny values underflow to signed zero.
  CHECK(T(1e-300).bits == 0x0000);
  CHECK(T(-1e-300).bits == 0x8000);
  CHECK(T(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
  CHECK(T(-0.0f).bits == 0x8000);

  // NaNs: every float NaN payload, including ones living only in the low mantissa bits (which a
  // plain truncation would turn into infinity), must stay a quiet NaN with its sign.
  for (const std::uint32_t b : {0x7FC00000u, 0x7F800001u, 0x7FA00000u, 0x7FFFFFFFu, 0xFF800001u, 0xFFC00000u}) {
    const auto got = T(float_from_bits(b)).bits;
    CHECK(is_quiet_nan_pattern<T>(got));
    CHECK(((got & 0x8000) != 0) == ((b >> 31) != 0));
    CHECK(std::isnan(static_cast<float>(T::from_bits(got))));
  }
  for (const std::uint64_t b : {0x7FF8000000000000ull, 0x7FF0000000000001ull, 0xFFF0000000000001ull}) {
    const auto got = T(double_from_bits(b)).bits;
    CHECK(is_quiet_nan_pattern<T>(got));
    CHECK(((got & 0x8000) != 0) == ((b >> 63) != 0));
  }
}

// A sparse sweep of all float bit patterns (about a million), against the reference.
template <class T>
void check_float_sweep() {
  using ref = reference<T>;
  int failures = 0;
  for (std::uint64_t b = 0; b < 0x100000000ull; b += 4093) {
    const float x = float_from_bits(static_cast<std::uint32_t>(b));
    bool want_nan = false;
    const auto want = ref::encode(x, &want_nan);
    const auto got = T(x).bits;
    const bool ok = want_nan ? is_nan_pattern<T>(got) : got == want;
    if (!ok && ++failures <= 5) FAIL_CHECK("float 0x" << std::hex << b << " -> 0x" << got << ", want 0x" << want);
  }
  CHECK(failures == 0);
}

// Random finite pairs: the float-computing operators against the reference rounding of the
// double result (correct rounding of the exact result, as double has > 2p+2 bits).
template <class T>
void check_arithmetic_random() {
  using ref = reference<T>;
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<unsigned> pattern(0, 0xFFFF);
  auto finite = [&] {
    std::uint16_t p;
    do p = static_cast<std::uint16_t>(pattern(rng));
    while ((p & 0x7FFF) >= ref::inf_pattern);
    return T::from_bits(p);
  };
  int failures = 0;
  for (int i = 0; i < 100000; ++i) {
    const T a = finite(), b = finite();
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    const std::uint16_t got[4] = {(a + b).bits, (a - b).bits, (a * b).bits, (a / b).bits};
    const double exact[4] = {x + y, x - y, x * y, x / y};
    for (int k = 0; k < 4; ++k) {
      bool want_nan = false;
      const auto want = ref::encode(exact[k], &want_nan);
      const bool ok = want_nan ? is_nan_pattern<T>(got[k]) : got[k] == want;
      if (!ok && ++failures <= 5)
        FAIL_CHECK("op " << k << " on 0x" << std::hex << a.bits << ", 0x" << b.bits << " -> 0x" << got[k] << ", want 0x" << want);
    }
  }
  CHECK(failures == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("16-bit floats decode every pattern exactly", "[core][dtype]", bf16, f16) {
  check_decode_all<TestType>();
}

TEMPLATE_TEST_CASE("16-bit floats round-trip every non-NaN pattern", "[core][dtype]", bf16, f16) {
  check_round_trip_all<TestType>();
}

TEMPLATE_TEST_CASE("16-bit floats round midpoints to even and neighbours to nearest", "[core][dtype]", bf16, f16) {
  check_midpoints_all<TestType>();
}

TEMPLATE_TEST_CASE("16-bit floats overflow at the IEEE threshold and keep NaNs", "[core][dtype]", bf16, f16) {
  check_overflow_and_nan<TestType>();
}

TEMPLATE_TEST_CASE("16-bit floats match the reference on a sweep of floats", "[core][dtype]", bf16, f16) {
  check_float_sweep<TestType>();
}

TEMPLATE_TEST_CASE("16-bit float arithmetic is correctly rounded", "[core][dtype]", bf16, f16) {
  check_arithmetic_random<TestType>();
}

TEST_CASE("f16 subnormals", "[core][dtype]") {
  CHECK(static_cast<float>(f16::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(static_cast<float>(f16::from_bits(0x03FF)) == std::ldexp(1023.0f, -24));
  CHECK(f16(std::ldexp(1.0f, -25)).bits == 0x0000);               // tie: to even (zero)
  CHECK(f16(std::ldexp(3.0f, -25)).bits == 0x0002);               // 1.5 units: tie, to even (2)
  CHECK(f16(std::ldexp(1023.5f, -24)).bits == 0x0400);            // rounds up into the smallest normal
  CHECK(f16(std::ldexp(1.0f, -14)) - f16::from_bits(0x0001) == f16::from_bits(0x03FF));  // exact, gradual underflow
}

TEST_CASE("16-bit float arithmetic and comparisons", "[core][dtype]") {
  // example-begin dtype-basics
  const weft::bf16 a{1.0f}, b{3.0f};
  const weft::bf16 third = a / b;                                        // 0.333984375, nearest bf16
  CHECK(third.bits == 0x3EAB);
  CHECK(static_cast<float>(third) == 0.333984375f);                      // exact widening
  CHECK(weft::bf16{1.0f + 1.0f / 256} == weft::bf16{1.0f});               // tie, to even
  CHECK(weft::f16{65520.0f} == std::numeric_limits<weft::f16>::infinity());  // overflow threshold
  // example-end dtype-basics

  weft::f16 x{1.5f};
  x += weft::f16{2.0f};
  CHECK(static_cast<float>(x) == 3.5f);
  x -= weft::f16{0.5f};
  CHECK(static_cast<float>(x) == 3.0f);
  x *= weft::f16{-2.0f};
  CHECK(static_cast<float>(x) == -6.0f);
  x /= weft::f16{4.0f};
  CHECK(static_cast<float>(x) == -1.5f);
  CHECK(static_cast<float>(-x) == 1.5f);
  CHECK((-weft::f16{0.0f}).bits == 0x8000);
  CHECK(static_cast<float>(+x) == -1.5f);

  // bf16 keeps 8 significant bits: 257 is not representable, 256 + 2 is.
  CHECK(static_cast<float>(bf16{256.0f} + bf16{1.0f}) == 256.0f);
  CHECK(static_cast<float>(bf16{256.0f} + bf16{2.0f}) == 258.0f);
  CHECK(static_cast<float>(bf16{257}) == 256.0f);
  CHECK(static_cast<float>(f16{-2049}) == -2048.0f);
  CHECK(static_cast<float>(f16{2051LL}) == 2052.0f);
  CHECK(f16{70000}.bits == 0x7C00);

  const auto max = std::numeric_limits<f16>::max();
  CHECK((max + max).bits == 0x7C00);
  CHECK((max * f16{-2.0f}).bits == 0xFC00);

  const auto nan = std::numeric_limits<bf16>::quiet_NaN();
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(nan < bf16{1.0f});
  CHECK_FALSE(nan >= bf16{1.0f});
  CHECK(bf16{-0.0f} == bf16{0.0f});
  CHECK(bf16{-1.0f} < bf16{0.5f});
  CHECK(bf16{2.0f} >= bf16{2.0f});
  CHECK(bf16{3.0f} > bf16{2.0f});
  CHECK(bf16{2.0f} <= bf16{3.0f});
  CHECK(std::isnan(static_cast<float>(bf16{0.0f} / bf16{0.0f})));
  CHECK(std::isnan(static_cast<float>(std::numeric_limits<f16>::infinity() - std::numeric_limits<f16>::infinity())));
}

TEST_CASE("numeric_limits of the 16-bit floats agree with the reference", "[core][dtype]") {
  using lb = std::numeric_limits<bf16>;
  using lh = std::numeric_limits<f16>;
  CHECK(static_cast<double>(lb::max()) == (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  CHECK(static_cast<double>(lb::lowest()) == -static_cast<double>(lb::max()));
  CHECK(static_cast<double>(lb::min()) == std::ldexp(1.0, -126));
  CHECK(static_cast<double>(lb::denorm_min()) == std::ldexp(1.0, -133));
  CHECK(static_cast<double>(lb::epsilon()) == std::ldexp(1.0, 1 - lb::digits));
  CHECK(static_cast<double>(bf16::from_bits(0x3F81)) - 1.0 == static_cast<double>(lb::epsilon()));
  CHECK(std::isinf(static_cast<float>(lb::infinity())));
  CHECK(is_quiet_nan_pattern<bf16>(lb::quiet_NaN().bits));
  CHECK((is_nan_pattern<bf16>(lb::signaling_NaN().bits) && !is_quiet_nan_pattern<bf16>(lb::signaling_NaN().bits)));

  CHECK(static_cast<double>(lh::max()) == 65504.0);
  CHECK(static_cast<double>(lh::lowest()) == -65504.0);
  CHECK(static_cast<double>(lh::min()) == std::ldexp(1.0, -14));
  CHECK(static_cast<double>(lh::denorm_min()) == std::ldexp(1.0, -24));
  CHECK(static_cast<double>(lh::epsilon()) == std::ldexp(1.0, 1 - lh::digits));
  CHECK(static_cast<double>(f16::from_bits(0x3C01)) - 1.0 == static_cast<double>(lh::epsilon()));
  CHECK(std::isinf(static_cast<float>(lh::infinity())));
  CHECK(is_quiet_nan_pattern<f16>(lh::quiet_NaN().bits));
  CHECK((is_nan_pattern<f16>(lh::signaling_NaN().bits) && !is_quiet_nan_pattern<f16>(lh::signaling_NaN().bits)));
  // the exponent ranges, as std::numeric_limits<float> defines them: 2^(min_exponent-1) is min()
  CHECK(static_cast<double>(lb::min()) == std::ldexp(1.0, lb::min_exponent - 1));
  CHECK(static_cast<double>(lh::min()) == std::ldexp(1.0, lh::min_exponent - 1));
  CHECK(static_cast<double>(lb::max()) < std::ldexp(1.0, lb::max_exponent));
  CHECK(static_cast<double>(lb::max()) >= std::ldexp(1.0, lb::max_exponent - 1));
  CHECK(static_cast<double>(lh::max()) < std::ldexp(1.0, lh::max_exponent));
  CHECK(static_cast<double>(lh::max()) >= std::ldexp(1.0, lh::max_exponent - 1));
}

TEST_CASE("dtype traits", "[core][dtype]") {
  CHECK(weft::dtype_name_v<weft::f32> == "f32");
  CHECK(weft::dtype_name_v<weft::bf16> == "bf16");
  CHECK(weft::dtype_traits<weft::f16>::safetensors_name == "F16");
  CHECK(weft::dtype_traits<weft::f64>::size == sizeof(double));
}
