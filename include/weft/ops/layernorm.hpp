#pragma once
// ---- layernorm over the last axis, eps = 1e-5 (GPT-2) unless given ----
//   out = (inp - mean) * rstd * weight + bias,   rstd = 1 / sqrt(var + eps)
// with the biased variance (divide by C), as torch.nn.LayerNorm. Row statistics are
// accumulated in acc_t<T> (double for float) with a two-pass variance; mean and rstd are
// kept for backward.
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims, column_block, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

/// The epsilon inside layernorm's square root by default (GPT-2's, torch.nn.LayerNorm's).
inline constexpr double layernorm_eps = 1e-5;

/// out(N, C) = normalised inp * weight(C) + bias(C); writes the row statistics mean(N) and
/// rstd(N) that layernorm_backward needs. Overwrites out, mean, rstd. Eps: the epsilon inside
/// the square root (the backward reads rstd and needs none).
template <std::size_t N, std::size_t C, double Eps = layernorm_eps>
struct layernorm_forward_op {
  using signature = ops::signature<args::out<N, C>, args::out<N>, args::out<N>, args::in<N, C>, args::in<C>, args::in<C>>;
  static constexpr double eps = Eps;
  static_assert(Eps > 0 && Eps < 1, "weft::ops::layernorm_forward: eps must lie in (0, 1). Give the model's epsilon (1e-5 for GPT-2).");
};
template <std::size_t N, std::size_t C, double Eps = layernorm_eps>
inline constexpr op_fn<layernorm_forward_op<N, C, Eps>> layernorm_forward{};
template <std::size_t N, std::size_t C, double Eps, host_element T, host_element Stat>
void op_impl(layernorm_forward_op<N, C, Eps>, const host_context&, T* out, Stat* mean, std::type_identity_t<Stat>* rstd,
             const T* inp, const T* weight, const T* bias) {
  static_assert(detail::check_dims<N, C>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;  // T itself, float for bf16 (loads widen, the store rounds once)
#pragma omp parallel for if (N * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;  // (C)
    T* y = out + n * C;        // (C)
    acc sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::size_t i = 0; i < C; ++i) sum += acc(x[i]);
    const acc m = sum / acc(C);
    acc sq = 0;
#pragma omp simd reduction(+ : sq)
    for (std::size_t i = 0; i < C; ++i) {
      const acc d = acc(x[i]) - m;
      sq += d * d;
    }
    const acc s = acc(1) / std::sqrt(sq / acc(C) + acc(Eps));
    const F mt = F(m), st = F(s);
#pragma omp simd
    for (std::size_t i = 0; i < C; ++i) y[i] = T((F(x[i]) - mt) * st * F(weight[i]) + F(bias[i]));
    mean[n] = Stat(mt);
    rstd[n] = Stat(st);
  }
}

/// Backward of layernorm_forward. Accumulates into dinp(N, C), dweight(C), dbias(C).
template <std::size_t N, std::size_t C>
struct layernorm_backward_op {
  using signature = ops::signature<args::out<N, C>, args::out<C>, args::out<C>, args::in<N, C>, args::in<N, C>, args::in<C>, args::in<N>, args::in<N>>;
};
template <std::size_t N, std::size_t C>
inline constexpr op_fn<layernorm_backward_op<N, C>> layernorm_backward{};
template <std::size_t N, std::size_t C, host_element T, host_element Stat>
void op_impl(layernorm_backward_op<N, C>, const host_context&, T* dinp, T* dweight, T* dbias, const T* dout,
             const T* inp, const T* weight, const Stat* mean, const std::type_identity_t<Stat>* rstd) {
  static_assert(detail::check_dims<N, C>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;
  [[maybe_unused]] constexpr bool big = N * C >= detail::parallel_min_work;
  // ---- dinp, row by row: with xhat = (x - mean) * rstd and g = dout * weight,
  //      dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) ----
#pragma omp parallel for if (big)
  for (std::size_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;    // (C)
    const T* dy = dout + n * C;  // (C)
    T* dx = dinp + n * C;        // (C)
    const F m = F(mean[n]), s = F(rstd[n]);
    acc g_sum = 0, gx_sum = 0;
#pragma omp simd reduction(+ : g_sum, gx_sum)
    for (std::size_t i = 0; i < C; ++i) {
      const acc g = acc(dy[i]) * acc(weight[i]);
      g_sum += g;
      gx_sum += g * (acc(x[i]) - acc(m)) * acc(s);
    }
    const F g_mean = F(g_sum / acc(C)), gx_mean = F(gx_sum / acc(C));
#pragma omp simd
    for (std::size_t i = 0; i < C; ++i) {
      const F xhat = (F(x[i]) - m) * s;
      dx[i] = T(F(dx[i]) + s * (F(dy[i]) * F(weight[i]) - g_mean - xhat * gx_mean));
    }
  }
  // ---- dweight, dbias: sums over rows; threads own column blocks (no atomics) ----
  constexpr std::size_t blocks = (C + detail::column_block - 1) / detail::column_block;
#pragma omp parallel for if (big && blocks > 1)
  for (std::size_t cb = 0; cb < blocks; ++cb) {
    const std::size_t i0 = cb * detail::column_block, nb = std::min(detail::column_block, C - i0);
    acc dw[detail::column_block] = {}, db[detail::column_block] = {};  // (block of C)
    for (std::size_t n = 0; n < N; ++n) {
      const T* x = inp + n * C + i0;    // (nb)
      const T* dy = dout + n * C + i0;  // (nb)
      const F m = F(mean[n]), s = F(rstd[n]);
#pragma omp simd
      for (std::size_t i = 0; i < nb; ++i) {
        dw[i] += acc(F(dy[i]) * ((F(x[i]) - m) * s));
        db[i] += acc(dy[i]);
      }
    }
    for (std::size_t i = 0; i < nb; ++i) {
      dweight[i0 + i] = T(F(dweight[i0 + i]) + F(dw[i]));
      dbias[i0 + i] = T(F(dbias[i0 + i]) + F(db[i]));
    }
  }
}

}  // namespace weft::ops
