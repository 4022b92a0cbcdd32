#pragma once
// ---- AdamW update, decoupled weight decay (Loshchilov & Hutter) ----
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   mhat = m / (1 - beta1^t),      vhat = v / (1 - beta2^t)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * p)
// n is a run-time count: the optimizer runs over a rank's whole (possibly sharded) flat
// parameter buffer, whose size depends on the run-time data-parallel degree.
#include "weft/ops/detail/fast_math.hpp"    // sqrt_fast
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include "weft/core/dtype.hpp"              // bf16

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

// The AVX-512 form of the mixed step is compiled for every x86-64 GCC/Clang build (a target
// attribute, no -march needed) and chosen at run time where the CPU has AVX-512 F and BW.
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(WEFT_NO_AVX512)
#define WEFT_ADAMW_AVX512 1
#include <immintrin.h>
#endif

namespace weft::ops {

namespace detail {

// The update of element i, in compute type F, shared by both forms below. Returns the new
// parameter value (in F); writes the moments.
template <class F, class P, class G, class M>
inline F adamw_element(P p, G g_in, M& m, M& v, F b1, F b2, F lr_t, F eps_t, F wd, F correction1, F correction2) {
  const F g = F(g_in);
  const F mi = b1 * F(m) + (F(1) - b1) * g;
  const F vi = b2 * F(v) + (F(1) - b2) * g * g;
  m = M(mi);
  v = M(vi);
  const F mhat = mi * correction1, vhat = vi * correction2;
  const F pf = F(p);
  return pf - lr_t * (mhat / (detail::sqrt_fast(vhat) + eps_t) + wd * pf);
}

#if defined(WEFT_ADAMW_AVX512)
inline bool cpu_has_avx512bw() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return has;
}

// The mixed step of f32 master weights and moments with bf16 gradients and a bf16 copy, 16
// elements at a time: the same formulas as adamw_element (sqrt_fast's estimate and Newton
// steps, bf16 rounded to nearest even with NaNs kept quiet, as weft::bf16 does). The scalar
// loop does not vectorise (GCC 12), and this update streams every parameter each step, so it
// bounds the bf16 step once the matrix products run on the matrix engine. Elements [0, n16).
__attribute__((target("avx512f,avx512bw"))) inline void adamw_mixed_bf16_avx512(
    float* master, bf16* copy, const bf16* grad, float* m, float* v, std::size_t n16, float b1, float b2, float lr_t, float eps_t, float wd, float c1, float c2) {
  const __m512 vb1 = _mm512_set1_ps(b1), vb2 = _mm512_set1_ps(b2), v1b1 = _mm512_set1_ps(1.0f - b1),
               v1b2 = _mm512_set1_ps(1.0f - b2), vlr = _mm512_set1_ps(lr_t), veps = _mm512_set1_ps(eps_t),
               vwd = _mm512_set1_ps(wd), vc1 = _mm512_set1_ps(c1), vc2 = _mm512_set1_ps(c2),
               half = _mm512_set1_ps(0.5f), three_halves = _mm512_set1_ps(1.5f);
  const __m512i magic = _mm512_set1_epi32(0x5f375a86), round_bias = _mm512_set1_epi32(0x7FFF),
                one = _mm512_set1_epi32(1), abs_mask = _mm512_set1_epi32(0x7FFFFFFF),
                inf_bits = _mm512_set1_epi32(0x7F800000), quiet = _mm512_set1_epi32(0x40);
  // The zero-masked forms of the shifts and conversions: the plain ones start from an
  // undefined register, which GCC 12 reports as maybe-uninitialised at -O1.
  constexpr __mmask16 all = 0xFFFF;
#pragma omp parallel for schedule(static) if (n16 >= parallel_min_work)
  for (std::size_t i = 0; i < n16; i += 16) {
    const __m512 g = _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(grad + i))), 16));
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(vb1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(v1b1, g));
    const __m512 vi =
        _mm512_add_ps(_mm512_mul_ps(vb2, _mm512_loadu_ps(v + i)), _mm512_mul_ps(_mm512_mul_ps(v1b2, g), g));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    const __m512 mhat = _mm512_mul_ps(mi, vc1), vhat = _mm512_mul_ps(vi, vc2);
    // sqrt_fast(vhat)
    __m512 y = _mm512_castsi512_ps(_mm512_sub_epi32(magic, _mm512_maskz_srai_epi32(all, _mm512_castps_si512(vhat), 1)));
    const __m512 hx = _mm512_mul_ps(half, vhat);
    for (int it = 0; it < 3; ++it)
      y = _mm512_mul_ps(y, _mm512_sub_ps(three_halves, _mm512_mul_ps(_mm512_mul_ps(hx, y), y)));
    const __m512 root = _mm512_mul_ps(vhat, y);
    const __m512 pf = _mm512_loadu_ps(master + i);
    const __m512 step = _mm512_add_ps(_mm512_div_ps(mhat, _mm512_add_ps(root, veps)), _mm512_mul_ps(vwd, pf));
    const __m512 p = _mm512_sub_ps(pf, _mm512_mul_ps(vlr, step));
    _mm512_storeu_ps(master + i, p);
    // bf16(p): round to nearest even; NaN keeps sign and top payload, quiet bit set.
    const __m512i bits = _mm512_castps_si512(p);
    const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(all, bits, 16), one);
    __m512i h = _mm512_maskz_srli_epi32(all, _mm512_add_epi32(_mm512_add_epi32(bits, round_bias), lsb), 16);
    const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf_bits);
    h = _mm512_mask_or_epi32(h, is_nan, _mm512_maskz_srli_epi32(all, bits, 16), quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy + i), _mm512_maskz_cvtepi32_epi16(all, h));
  }
}
#endif

}  // namespace detail

/// One AdamW step over n parameters; updates param, m and v in place. t is the 1-based
/// step number used for bias correction. Weight decay applies to every element given:
/// pass weight_decay = 0 for the parameter groups that are not decayed.
/// The parameter, gradient and moment types may differ (bf16 gradients into f32 master
/// weights and moments, say); the update is computed in compute_t of the parameter type
/// (float for bf16) and each stored value is rounded once. The hyper-parameters are doubles,
/// rounded once to the compute type (so an f64 run uses beta2 = 0.95, not 0.95f).
struct adamw_step_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<adamw_step_op> adamw_step{};
template <host_element P, host_element G, host_element M>
void op_impl(adamw_step_op, const host_context&, P* param, const G* grad, M* m, std::type_identity_t<M>* v,
             std::size_t n, double lr, double beta1, double beta2, double eps, double weight_decay, int t) {
  using F = compute_t<P>;
  // Bias corrections once per call, in double.
  const F correction1 = F(1.0 / (1.0 - std::pow(beta1, t)));
  const F correction2 = F(1.0 / (1.0 - std::pow(beta2, t)));
  const F b1 = F(beta1), b2 = F(beta2), lr_t = F(lr), eps_t = F(eps), wd = F(weight_decay);
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i)
    param[i] = P(detail::adamw_element(param[i], grad[i], m[i], v[i], b1, b2, lr_t, eps_t, wd, correction1, correction2));
}

/// Mixed-precision form: the same update of the master weights (f32 or wider), then
/// param_copy(n) = the updated master rounded to Copy (bf16): one rounding per step, the
/// master keeping the low bits the copy cannot hold.
template <host_element P, host_element Copy, host_element G, host_element M>
  requires(!std::same_as<P, Copy>)
void op_impl(adamw_step_op, const host_context&, P* master, Copy* param_copy, const G* grad, M* m,
             std::type_identity_t<M>* v, std::size_t n, double lr, double beta1, double beta2, double eps,
             double weight_decay, int t) {
  using F = compute_t<P>;
  const F correction1 = F(1.0 / (1.0 - std::pow(beta1, t)));
  const F correction2 = F(1.0 / (1.0 - std::pow(beta2, t)));
  const F b1 = F(beta1), b2 = F(beta2), lr_t = F(lr), eps_t = F(eps), wd = F(weight_decay);
  std::size_t done = 0;
#if defined(WEFT_ADAMW_AVX512)
  if constexpr (std::same_as<P, float> && std::same_as<Copy, bf16> && std::same_as<G, bf16> && std::same_as<M, float>) {
    if (detail::cpu_has_avx512bw()) {
      done = n / 16 * 16;
      detail::adamw_mixed_bf16_avx512(master, param_copy, grad, m, v, done, b1, b2, lr_t, eps_t, wd, correction1,
                                      correction2);
    }
  }
#endif
#pragma omp parallel for simd if (n - done >= detail::parallel_min_work)
  for (std::size_t i = done; i < n; ++i) {
    const F p = detail::adamw_element(master[i], grad[i], m[i], v[i], b1, b2, lr_t, eps_t, wd, correction1, correction2);
    master[i] = P(p);
    param_copy[i] = store_as<Copy>(p);
  }
}

}  // namespace weft::ops
