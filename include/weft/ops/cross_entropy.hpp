#pragma once
// ---- fused softmax + cross-entropy over a vocabulary of V ----
//   losses[n] = logsumexp(logits[n]) - logits[n][targets[n]]
//   dlogits[n] = dloss * (softmax(logits[n]) - onehot(targets[n]))
// The training form works in place: the (N, V) logits buffer, the largest activation of a
// language model, is overwritten by its own gradient, so no second (N, V) buffer exists.
// That is the one exception to the accumulate rule: dlogits is written, not added.
// A negative target means "ignore this position": loss 0 and a zero gradient row.
#include "weft/ops/detail/fast_math.hpp"    // exp_fast
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::ops {

namespace detail {

// The max of one row of V logits and sum(exp(z - max)) in acc_t<T>; the exps themselves are
// exp_fast in T, so a float row vectorises.
// For bf16 logits the max and the exps are in float (compute_t).
template <std::size_t V, class T>
void row_max_sum_exp(const T* z, compute_t<T>& max_out, acc_t<T>& sum_out) {
  using F = compute_t<T>;
  F mx = F(z[0]);
#pragma omp simd reduction(max : mx)
  for (std::size_t v = 0; v < V; ++v) mx = mx < F(z[v]) ? F(z[v]) : mx;
  acc_t<T> sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::size_t v = 0; v < V; ++v) sum += acc_t<T>(exp_fast(F(F(z[v]) - mx)));
  max_out = mx;
  sum_out = sum;
}

}  // namespace detail

/// Training form. losses(N) = per-row cross-entropy; then logits_to_dlogits(N, V) is
/// overwritten (not accumulated) with dloss * (softmax - onehot(target)). Rows whose target
/// is negative get loss 0 and a zero gradient. Non-negative targets must be < V.
template <std::size_t N, std::size_t V>
struct softmax_cross_entropy_forward_backward_op {
  using signature = ops::signature<args::out<N>, args::out<N, V>, args::in<N>, args::value>;
};
template <std::size_t N, std::size_t V>
inline constexpr op_fn<softmax_cross_entropy_forward_backward_op<N, V>> softmax_cross_entropy_forward_backward{};
template <std::size_t N, std::size_t V, host_element T, host_element L>
void op_impl(softmax_cross_entropy_forward_backward_op<N, V>, const host_context&, L* losses,
             T* logits_to_dlogits, const std::int32_t* targets, std::type_identity_t<compute_t<T>> dloss) {
  static_assert(detail::check_dims<N, V>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;  // T itself, float for bf16; losses are stat_t (float for bf16)
#pragma omp parallel for if (N * V >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    T* z = logits_to_dlogits + n * V;  // (V) logits in, dlogits out
    const std::int32_t t = targets[n];
    if (t < 0) {
      losses[n] = L(0);
      std::fill(z, z + V, T(0.0f));
      continue;
    }
    assert(std::size_t(t) < V);
    F mx;
    acc sum;
    detail::row_max_sum_exp<V>(z, mx, sum);
    losses[n] = L(acc(mx) + std::log(sum) - acc(z[t]));
    // softmax = exp(z - max) / sum; 1 / sum and dloss fold into one scale.
    const F scale = F(acc(dloss) / sum);
    if constexpr (is_storage_only_v<T>) {
      // bf16: the target's entry is finished in float first, so it is rounded once.
      const F dz_t = detail::exp_fast(F(F(z[t]) - mx)) * scale - dloss;
#pragma omp simd
      for (std::size_t v = 0; v < V; ++v) z[v] = store_as<T>(detail::exp_fast(F(F(z[v]) - mx)) * scale);
      z[t] = T(dz_t);
    } else {
#pragma omp simd
      for (std::size_t v = 0; v < V; ++v) z[v] = detail::exp_fast(T(z[v] - mx)) * scale;
      z[t] -= dloss;
    }
  }
}

/// Evaluation form: losses(N) only, logits(N, V) untouched. Negative targets give loss 0.
template <std::size_t N, std::size_t V>
struct softmax_cross_entropy_forward_op {
  using signature = ops::signature<args::out<N>, args::in<N, V>, args::in<N>>;
};
template <std::size_t N, std::size_t V>
inline constexpr op_fn<softmax_cross_entropy_forward_op<N, V>> softmax_cross_entropy_forward{};
template <std::size_t N, std::size_t V, host_element T, host_element L>
void op_impl(softmax_cross_entropy_forward_op<N, V>, const host_context&, L* losses, const T* logits,
             const std::int32_t* targets) {
  static_assert(detail::check_dims<N, V>::ok);
  using acc = detail::acc_t<T>;
#pragma omp parallel for if (N * V >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* z = logits + n * V;  // (V)
    const std::int32_t t = targets[n];
    if (t < 0) {
      losses[n] = L(0);
      continue;
    }
    assert(std::size_t(t) < V);
    compute_t<T> mx;
    acc sum;
    detail::row_max_sum_exp<V>(z, mx, sum);
    losses[n] = L(acc(mx) + std::log(sum) - acc(z[t]));
  }
}

}  // namespace weft::ops
