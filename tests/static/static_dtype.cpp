// Compile-only: dtype facts that hold in constant evaluation (conversions are constexpr).
#include <weft/core/dtype.hpp>

#include <limits>
#include <type_traits>

namespace {

using weft::bf16;
using weft::f16;

// ---- layout ----
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);
static_assert(sizeof(f16) == 2 && alignof(f16) == 2);
static_assert(std::is_trivially_copyable_v<bf16> && std::is_trivially_copyable_v<f16>);
static_assert(std::is_standard_layout_v<bf16> && std::is_standard_layout_v<f16>);
static_assert(std::is_trivially_default_constructible_v<bf16>);

// ---- conversions are explicit ----
static_assert(!std::is_convertible_v<float, bf16> && std::is_constructible_v<bf16, float>);
static_assert(!std::is_convertible_v<bf16, float> && std::is_constructible_v<float, bf16>);
static_assert(!std::is_convertible_v<bf16, f16> && !std::is_convertible_v<f16, bf16>);

// ---- constexpr encoding ----
static_assert(bf16(1.0f).bits == 0x3F80);
static_assert(bf16(1.0).bits == 0x3F80);
static_assert(bf16(1).bits == 0x3F80);
static_assert(bf16(-2.0f).bits == 0xC000);
static_assert(bf16(-0.0f).bits == 0x8000);
static_assert(f16(1.0f).bits == 0x3C00);
static_assert(f16(-2.0).bits == 0xC000);
static_assert(f16(65504.0f).bits == 0x7BFF);
static_assert(f16(65520.0f).bits == 0x7C00);             // max + ulp/2: ties away to infinity
static_assert(f16(0x1p-24f).bits == 0x0001);             // smallest subnormal
static_assert(f16(0x1p-25f).bits == 0x0000);             // half of it: tie, to even zero
static_assert(bf16(0x1.01p0f).bits == 0x3F80);           // 1 + 2^-8: tie, to even
static_assert(bf16(0x1.03p0f).bits == 0x3F82);           // 1 + 3*2^-8: tie, to even (up)
static_assert(bf16(std::numeric_limits<float>::quiet_NaN()).bits == 0x7FC0);

// ---- constexpr decoding ----
static_assert(static_cast<float>(bf16::from_bits(0x3F80)) == 1.0f);
static_assert(static_cast<float>(f16::from_bits(0x3555)) == 0x1.554p-2f);
static_assert(static_cast<float>(f16::from_bits(0x0001)) == 0x1p-24f);
static_assert(static_cast<double>(f16::from_bits(0xFBFF)) == -65504.0);

// ---- constexpr arithmetic and comparison ----
static_assert((bf16(1.0f) + bf16(2.0f)).bits == bf16(3.0f).bits);
static_assert(f16(1.0f) / f16(4.0f) == f16(0.25f));
static_assert((-f16(0.0f)).bits == 0x8000);
static_assert(f16(-0.0f) == f16(0.0f));
static_assert(bf16(1.0f) < bf16(2.0f));
static_assert(!(std::numeric_limits<bf16>::quiet_NaN() == std::numeric_limits<bf16>::quiet_NaN()));
static_assert([] {
  f16 x(1.0f);
  x += f16(0.5f);
  x *= f16(4.0f);
  return x == f16(6.0f);
}());

// ---- numeric_limits ----
static_assert(std::numeric_limits<bf16>::is_specialized && std::numeric_limits<f16>::is_specialized);
static_assert(std::numeric_limits<bf16>::digits == 8 && std::numeric_limits<f16>::digits == 11);
static_assert(static_cast<float>(std::numeric_limits<f16>::max()) == 65504.0f);
static_assert(static_cast<float>(std::numeric_limits<bf16>::epsilon()) == 0x1p-7f);
static_assert(static_cast<float>(std::numeric_limits<f16>::epsilon()) == 0x1p-10f);
static_assert(static_cast<float>(std::numeric_limits<f16>::denorm_min()) == 0x1p-24f);
static_assert(static_cast<float>(std::numeric_limits<bf16>::infinity()) == std::numeric_limits<float>::infinity());

// ---- dtype, dtype_traits ----
static_assert(weft::dtype<weft::f64> && weft::dtype<weft::f32> && weft::dtype<bf16> && weft::dtype<f16>);
static_assert(!weft::dtype<int> && !weft::dtype<const float> && !weft::dtype<long double>);
static_assert(weft::dtype_name_v<weft::f64> == "f64" && weft::dtype_name_v<f16> == "f16");
static_assert(weft::dtype_traits<bf16>::safetensors_name == "BF16");
static_assert(weft::dtype_traits<weft::f32>::safetensors_name == "F32");
static_assert(weft::dtype_traits<weft::f64>::size == 8 && weft::dtype_traits<bf16>::size == sizeof(bf16));

}  // namespace
