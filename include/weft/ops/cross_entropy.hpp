#pragma once
// ---- fused softmax + cross-entropy over a vocabulary of V ----
//   losses[n] = logsumexp(logits[n]) - logits[n][targets[n]]
//   dlogits[n] = dloss * (softmax(logits[n]) - onehot(targets[n]))
// The training form works in place: the (N, V) logits buffer, the largest activation of a
// language model, is overwritten by its own gradient, so no second (N, V) buffer exists.
// That is the one exception to the accumulate rule: dlogits is written, not added.
// A negative target means "ignore this position": loss 0 and a zero gradient row.
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace weft::ops {

namespace detail {

// Max and log-sum-exp of one row of V logits, in acc_t<T>.
template <std::size_t V, class T>
void row_max_lse(const T* z, acc_t<T>& max_out, acc_t<T>& lse_out) {
  using acc = acc_t<T>;
  T mx = z[0];
  for (std::size_t v = 1; v < V; ++v) mx = std::max(mx, z[v]);
  acc sum = 0;
  for (std::size_t v = 0; v < V; ++v) sum += std::exp(acc(z[v]) - acc(mx));
  max_out = acc(mx);
  lse_out = acc(mx) + std::log(sum);
}

}  // namespace detail

/// Training form. losses(N) = per-row cross-entropy; then logits_to_dlogits(N, V) is
/// overwritten (not accumulated) with dloss * (softmax - onehot(target)). Rows whose target
/// is negative get loss 0 and a zero gradient. Non-negative targets must be < V.
template <std::size_t N, std::size_t V, host_element T>
void softmax_cross_entropy_forward_backward(T* losses, T* logits_to_dlogits, const std::int32_t* targets,
                                            T dloss) {
  static_assert(detail::check_dims<N, V>::ok);
  using acc = detail::acc_t<T>;
#pragma omp parallel for if (N * V >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    T* z = logits_to_dlogits + n * V;  // (V) logits in, dlogits out
    const std::int32_t t = targets[n];
    if (t < 0) {
      losses[n] = T(0);
      std::fill(z, z + V, T(0));
      continue;
    }
    assert(std::size_t(t) < V);
    acc mx, lse;
    detail::row_max_lse<V>(z, mx, lse);
    losses[n] = T(lse - acc(z[t]));
    // softmax = exp(z - lse); the scale folds into it.
    for (std::size_t v = 0; v < V; ++v) z[v] = T(std::exp(acc(z[v]) - lse)) * dloss;
    z[t] -= dloss;
  }
}

/// Evaluation form: losses(N) only, logits(N, V) untouched. Negative targets give loss 0.
template <std::size_t N, std::size_t V, host_element T>
void softmax_cross_entropy_forward(T* losses, const T* logits, const std::int32_t* targets) {
  static_assert(detail::check_dims<N, V>::ok);
  using acc = detail::acc_t<T>;
#pragma omp parallel for if (N * V >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* z = logits + n * V;  // (V)
    const std::int32_t t = targets[n];
    if (t < 0) {
      losses[n] = T(0);
      continue;
    }
    assert(std::size_t(t) < V);
    acc mx, lse;
    detail::row_max_lse<V>(z, mx, lse);
    losses[n] = T(lse - acc(z[t]));
  }
}

}  // namespace weft::ops
