#pragma once
// ---- vectorisable exp / tanh / sigmoid / sqrt for the float paths ----
// glibc's expf/tanhf are scalar calls unless -ffast-math is on, so a loop over them does not
// vectorise; in a GPT-2 step the GELU, sigmoid and softmax loops would then cost a large
// share of the matmul time. For float these helpers use a Cody-Waite range reduction and the
// Cephes minimax polynomial (max relative error ~1e-7, i.e. about one float ulp), written
// with no data-dependent branches or float selects, so that `#pragma omp simd` loops over
// them vectorise even under the default -ftrapping-math and -fmath-errno (std::sqrt's errno
// branch alone stops a loop from vectorising). Other types (double, the
// correctness oracle, and long double) use the std functions.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace weft::ops::detail {

// The bit pattern of f as a signed integer ordered like the floats (see exp_fast).
constexpr std::int32_t ordered_bits(float f) {
  const std::int32_t k = std::bit_cast<std::int32_t>(f);
  return k ^ ((k >> 31) & 0x7fffffff);
}

// exp(x). Clamped to [-87, 88]: below, the result flushes towards 0 (e^-87 ~ 1.6e-38);
// above, it saturates at e^88 ~ 1.65e38, which reads as "overflow" to the
// callers (1 / (1 + exp) -> ~0), as std::exp's inf would.
template <class T>
inline T exp_fast(T x) {
  if constexpr (std::is_same_v<T, float>) {
    // Clamp in the integer domain: k = bits ^ ((bits >> 31) & 0x7fffffff) is a signed
    // integer ordered like the floats (and its own inverse), so two integer min/max clamp x.
    // Integer min/max vectorise; float selects do not under the default -ftrapping-math.
    std::int32_t k = std::bit_cast<std::int32_t>(x);
    k ^= (k >> 31) & 0x7fffffff;
    k = std::max(k, ordered_bits(-87.0f));
    k = std::min(k, ordered_bits(88.0f));
    k ^= (k >> 31) & 0x7fffffff;
    x = std::bit_cast<float>(k);
    // Round x / ln2 to the nearest integer n: adding 1.5 * 2^23 leaves no fraction bits.
    constexpr float round_magic = 12582912.0f;
    const float nf = (x * 1.44269504088896341f + round_magic) - round_magic;
    // r = x - n ln2, with ln2 split in two so the product is exact enough; |r| <= ln2 / 2.
    float r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    // 2^n built from its exponent bits; n is in [-126, 127] after the clamps.
    const std::int32_t n = std::int32_t(nf);
    return p * std::bit_cast<float>((n + 127) << 23);
  } else {
    return std::exp(x);
  }
}

// tanh(u) = sign(u) (1 - e) / (1 + e) with e = exp(-2|u|) in (0, 1]: exp of a non-positive
// number only, and the sign put back with copysign (bit operations, no select). Absolute
// error ~1e-7 (relative error grows for |u| < 1e-3, where only the absolute error matters
// to gelu and sigmoid).
template <class T>
inline T tanh_fast(T u) {
  if constexpr (std::is_same_v<T, float>) {
    const float e = exp_fast(-2.0f * std::fabs(u));
    return std::copysign((1.0f - e) / (1.0f + e), u);
  } else {
    return std::tanh(u);
  }
}

// sigmoid(g) = 1 / (1 + exp(-g)); for g < -88 exp saturates and the result is ~6e-39.
template <class T>
inline T sigmoid_fast(T g) {
  return T(1) / (T(1) + exp_fast(-g));
}

// sqrt(x) for x >= 0: the bit-trick estimate of 1/sqrt(x) refined by three Newton steps
// (relative error ~1e-7), times x. x = 0 gives 0 (the estimate stays finite).
template <class T>
inline T sqrt_fast(T x) {
  if constexpr (std::is_same_v<T, float>) {
    float y = std::bit_cast<float>(0x5f375a86 - (std::bit_cast<std::int32_t>(x) >> 1));
    const float half_x = 0.5f * x;
    y = y * (1.5f - half_x * y * y);
    y = y * (1.5f - half_x * y * y);
    y = y * (1.5f - half_x * y * y);
    return x * y;
  } else {
    return std::sqrt(x);
  }
}

}  // namespace weft::ops::detail
