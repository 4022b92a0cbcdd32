#pragma once
// ---- interop between weft's dtypes and CUDA's native ones (nvcc only) ----
// weft::bf16 / weft::f16 and __nv_bfloat16 / __half hold the same 16 bits with the same size and
// alignment, so converting is a bit copy: no rounding, NaN payloads kept. Kernels take weft types
// at their interface and convert at the point where CUDA's intrinsics (__hfma, mma, ...) are used.
#include "weft/config.hpp"      // WEFT_HOST_DEVICE
#include "weft/core/dtype.hpp"  // bf16, f16, dtype, detail::bit_cast

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace weft {

// ---- layout compatibility: what makes the bit copies below valid ----
static_assert(sizeof(__nv_bfloat16) == sizeof(bf16) && alignof(__nv_bfloat16) == alignof(bf16),
              "weft::cuda dtype interop: __nv_bfloat16 and weft::bf16 differ in size or alignment. Check the CUDA version.");
static_assert(sizeof(__half) == sizeof(f16) && alignof(__half) == alignof(f16),
              "weft::cuda dtype interop: __half and weft::f16 differ in size or alignment. Check the CUDA version.");
static_assert(std::is_trivially_copyable_v<__nv_bfloat16> && std::is_trivially_copyable_v<__half>,
              "weft::cuda dtype interop: CUDA's 16-bit types are not trivially copyable. Check the CUDA version.");

namespace detail {
template <class T>
struct cuda_type {
  using type = T;  // f32, f64: CUDA uses the C++ types
};
template <>
struct cuda_type<bf16> {
  using type = __nv_bfloat16;
};
template <>
struct cuda_type<f16> {
  using type = __half;
};
}  // namespace detail

/// The CUDA native type of a weft dtype: f64 -> double, f32 -> float, bf16 -> __nv_bfloat16,
/// f16 -> __half.
template <dtype T>
using cuda_type_t = typename detail::cuda_type<T>::type;

// ---- conversions (bit copies) ----

/// Same bits as a CUDA __nv_bfloat16.
WEFT_HOST_DEVICE constexpr __nv_bfloat16 to_cuda(bf16 x) noexcept { return detail::bit_cast<__nv_bfloat16>(x); }
/// Same bits as a CUDA __half.
WEFT_HOST_DEVICE constexpr __half to_cuda(f16 x) noexcept { return detail::bit_cast<__half>(x); }
/// f32 and f64 are already CUDA's types; these make `to_cuda` usable in dtype-generic code.
WEFT_HOST_DEVICE constexpr float to_cuda(float x) noexcept { return x; }
WEFT_HOST_DEVICE constexpr double to_cuda(double x) noexcept { return x; }

/// Same bits as a weft::bf16.
WEFT_HOST_DEVICE constexpr bf16 from_cuda(__nv_bfloat16 x) noexcept { return detail::bit_cast<bf16>(x); }
/// Same bits as a weft::f16.
WEFT_HOST_DEVICE constexpr f16 from_cuda(__half x) noexcept { return detail::bit_cast<f16>(x); }
WEFT_HOST_DEVICE constexpr float from_cuda(float x) noexcept { return x; }
WEFT_HOST_DEVICE constexpr double from_cuda(double x) noexcept { return x; }

}  // namespace weft
