#pragma once
// ---- rmsnorm over the last axis, eps = 1e-5 (LLaMA) unless given ----
//   out = inp * rstd * weight,   rstd = 1 / sqrt(mean(inp^2) + eps)
// No mean subtraction and no bias. rstd is kept for backward.
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims, column_block, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace weft::ops {

/// The epsilon inside rmsnorm's square root by default (LLaMA's; Qwen and Gemma use 1e-6).
inline constexpr double rmsnorm_eps = 1e-5;

/// out(N, C) = inp * rstd * weight(C); writes rstd(N) for rmsnorm_backward. Overwrites out, rstd.
/// Eps: the epsilon inside the square root (the backward reads rstd and needs none).
template <std::size_t N, std::size_t C, double Eps = rmsnorm_eps>
struct rmsnorm_forward_op {
  using signature = ops::signature<args::out<N, C>, args::out<N>, args::in<N, C>, args::in<C>>;
  static constexpr double eps = Eps;
  static_assert(Eps > 0 && Eps < 1, "weft::ops::rmsnorm_forward: eps must lie in (0, 1). Give the model's epsilon (1e-5 for LLaMA, 1e-6 for Qwen and Gemma).");
};
template <std::size_t N, std::size_t C, double Eps = rmsnorm_eps>
inline constexpr op_fn<rmsnorm_forward_op<N, C, Eps>> rmsnorm_forward{};
template <std::size_t N, std::size_t C, double Eps, host_element T, host_element Stat>
void op_impl(rmsnorm_forward_op<N, C, Eps>, const host_context&, T* out, Stat* rstd, const T* inp, const T* weight) {
  static_assert(detail::check_dims<N, C>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;  // T itself, float for bf16 (loads widen, the store rounds once)
#pragma omp parallel for if (N * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;  // (C)
    T* y = out + n * C;        // (C)
    acc sq = 0;
#pragma omp simd reduction(+ : sq)
    for (std::size_t i = 0; i < C; ++i) sq += acc(x[i]) * acc(x[i]);
    const F s = F(acc(1) / std::sqrt(sq / acc(C) + acc(Eps)));
#pragma omp simd
    for (std::size_t i = 0; i < C; ++i) y[i] = T(F(x[i]) * s * F(weight[i]));
    rstd[n] = Stat(s);
  }
}

/// Backward of rmsnorm_forward. Accumulates into dinp(N, C) and dweight(C).
template <std::size_t N, std::size_t C>
struct rmsnorm_backward_op {
  using signature = ops::signature<args::out<N, C>, args::out<C>, args::in<N, C>, args::in<N, C>, args::in<C>, args::in<N>>;
};
template <std::size_t N, std::size_t C>
inline constexpr op_fn<rmsnorm_backward_op<N, C>> rmsnorm_backward{};
template <std::size_t N, std::size_t C, host_element T, host_element Stat>
void op_impl(rmsnorm_backward_op<N, C>, const host_context&, T* dinp, T* dweight, const T* dout, const T* inp,
             const T* weight, const Stat* rstd) {
  static_assert(detail::check_dims<N, C>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;
  [[maybe_unused]] constexpr bool big = N * C >= detail::parallel_min_work;
  // ---- dinp, row by row: with xhat = x * rstd and g = dout * weight,
  //      dx = rstd * (g - xhat * mean(g * xhat)) ----
#pragma omp parallel for if (big)
  for (std::size_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;    // (C)
    const T* dy = dout + n * C;  // (C)
    T* dx = dinp + n * C;        // (C)
    const F s = F(rstd[n]);
    acc gx_sum = 0;
#pragma omp simd reduction(+ : gx_sum)
    for (std::size_t i = 0; i < C; ++i) gx_sum += acc(dy[i]) * acc(weight[i]) * acc(x[i]);
    const F gx_mean = F(gx_sum / acc(C) * acc(s));  // mean(g * xhat)
#pragma omp simd
    for (std::size_t i = 0; i < C; ++i)
      dx[i] = T(F(dx[i]) + s * (F(dy[i]) * F(weight[i]) - F(x[i]) * s * gx_mean));
  }
  // ---- dweight: sum over rows of dout * xhat; threads own column blocks ----
  constexpr std::size_t blocks = (C + detail::column_block - 1) / detail::column_block;
#pragma omp parallel for if (big && blocks > 1)
  for (std::size_t cb = 0; cb < blocks; ++cb) {
    const std::size_t i0 = cb * detail::column_block, nb = std::min(detail::column_block, C - i0);
    acc dw[detail::column_block] = {};  // (block of C)
    for (std::size_t n = 0; n < N; ++n) {
      const T* x = inp + n * C + i0;    // (nb)
      const T* dy = dout + n * C + i0;  // (nb)
      const F s = F(rstd[n]);
#pragma omp simd
      for (std::size_t i = 0; i < nb; ++i) dw[i] += acc(F(dy[i]) * (F(x[i]) * s));
    }
    for (std::size_t i = 0; i < nb; ++i) dweight[i0 + i] = T(F(dweight[i0 + i]) + F(dw[i]));
  }
}

}  // namespace weft::ops
