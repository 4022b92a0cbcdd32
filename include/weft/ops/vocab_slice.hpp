#pragma once
// ---- ops over one slice [lo, lo + VL) of the vocabulary axis ----
// Tensor parallelism splits the vocabulary: a rank holds VL rows of the token embedding and VL
// logits of every row. These are the arithmetic halves of the vocabulary-parallel embedding and
// cross-entropy (model/tensor_parallel_layers.hpp), which put collectives between them:
//   embedding:      slice lookup  -> all-reduce (sum)
//   cross-entropy:  row max -> all-reduce (max) -> sum of exps and target logit -> all-reduce
//                   (sum) -> loss and gradient of the slice
// Token ids outside the slice select nothing on this rank (size_t(id) - lo wraps above VL for
// ids below lo and for negative, ignored, targets). Row statistics are doubles: they travel
// through the collectives in one type whatever T is. Loops run in row order, serially, as the
// collectives expect bit-identical inputs for bit-identical results. bf16 logits are computed
// in float (compute_t) and rounded once on store, with float losses, as the whole-vocabulary op.
#include "weft/ops/detail/fast_math.hpp"    // exp_fast
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::ops {

// ---- embedding ----

/// out(N, C) = table(VL, C)[idx - lo] for ids in [lo, lo + VL), zero rows for the others.
template <std::size_t N, std::size_t VL, std::size_t C>
struct embedding_slice_forward_op {
  using signature = ops::signature<args::out<N, C>, args::in<N>, args::in<VL, C>, args::value>;
};
template <std::size_t N, std::size_t VL, std::size_t C>
inline constexpr op_fn<embedding_slice_forward_op<N, VL, C>> embedding_slice_forward{};
template <std::size_t N, std::size_t VL, std::size_t C, host_element T>
void op_impl(embedding_slice_forward_op<N, VL, C>, const host_context&, T* out, const std::int32_t* idx,
             const T* table, std::size_t lo) {
  static_assert(detail::check_dims<N, VL, C>::ok);
  for (std::size_t n = 0; n < N; ++n) {
    const std::size_t t = static_cast<std::size_t>(idx[n]) - lo;  // wraps when below lo
    if (t < VL) std::copy_n(table + t * C, C, out + n * C);
    else std::fill_n(out + n * C, C, T{0});
  }
}

/// dtable(VL, C) row idx - lo += dout row, for the rows whose id is in the slice (row order).
template <std::size_t N, std::size_t VL, std::size_t C>
struct embedding_slice_backward_op {
  using signature = ops::signature<args::out<VL, C>, args::in<N, C>, args::in<N>, args::value>;
};
template <std::size_t N, std::size_t VL, std::size_t C>
inline constexpr op_fn<embedding_slice_backward_op<N, VL, C>> embedding_slice_backward{};
template <std::size_t N, std::size_t VL, std::size_t C, host_element T>
void op_impl(embedding_slice_backward_op<N, VL, C>, const host_context&, T* dtable, const T* dout,
             const std::int32_t* idx, std::size_t lo) {
  static_assert(detail::check_dims<N, VL, C>::ok);
  for (std::size_t n = 0; n < N; ++n) {
    const std::size_t t = static_cast<std::size_t>(idx[n]) - lo;
    if (t < VL) {
      T* d = dtable + t * C;        // (C)
      const T* g = dout + n * C;    // (C)
      for (std::size_t i = 0; i < C; ++i) d[i] += g[i];
    }
  }
}

// ---- cross-entropy ----

/// mx(N) = the max of each row of this slice's logits(N, VL).
template <std::size_t N, std::size_t VL>
struct vocab_slice_row_max_op {
  using signature = ops::signature<args::out<N>, args::in<N, VL>>;
};
template <std::size_t N, std::size_t VL>
inline constexpr op_fn<vocab_slice_row_max_op<N, VL>> vocab_slice_row_max{};
template <std::size_t N, std::size_t VL, host_element T>
void op_impl(vocab_slice_row_max_op<N, VL>, const host_context&, double* mx, const T* logits) {
  static_assert(detail::check_dims<N, VL>::ok);
  using F = compute_t<T>;  // T itself, float for bf16
  for (std::size_t n = 0; n < N; ++n) {
    const T* z = logits + n * VL;  // (VL)
    F m = F(z[0]);
    for (std::size_t v = 1; v < VL; ++v) m = m < F(z[v]) ? F(z[v]) : m;
    mx[n] = static_cast<double>(m);
  }
}

/// sums(N, 2): per row, sum(exp(z - mx)) over the slice and the target's logit if the target
/// is in the slice (else 0), given the global row max mx(N).
template <std::size_t N, std::size_t VL>
struct vocab_slice_sum_exp_op {
  using signature = ops::signature<args::out<N, 2>, args::in<N, VL>, args::in<N>, args::value, args::in<N>>;
};
template <std::size_t N, std::size_t VL>
inline constexpr op_fn<vocab_slice_sum_exp_op<N, VL>> vocab_slice_sum_exp{};
template <std::size_t N, std::size_t VL, host_element T>
void op_impl(vocab_slice_sum_exp_op<N, VL>, const host_context&, double* sums, const T* logits,
             const std::int32_t* targets, std::size_t lo, const double* mx) {
  static_assert(detail::check_dims<N, VL>::ok);
  using F = compute_t<T>;
  for (std::size_t n = 0; n < N; ++n) {
    const T* z = logits + n * VL;  // (VL)
    const F m = static_cast<F>(mx[n]);
    detail::acc_t<T> s = 0;
    for (std::size_t v = 0; v < VL; ++v) s += detail::acc_t<T>(detail::exp_fast(F(F(z[v]) - m)));
    sums[2 * n] = static_cast<double>(s);
    const std::size_t t = static_cast<std::size_t>(targets[n]) - lo;  // wraps below lo, and for ignored (< 0) rows
    sums[2 * n + 1] = (targets[n] >= 0 && t < VL) ? static_cast<double>(z[t]) : 0.0;
  }
}

/// From the reduced statistics work = [mx(N) | sums(N, 2)]: losses(N), and this slice's logits
/// overwritten with dloss·(softmax - onehot(target)). Negative targets: loss 0, zero row.
template <std::size_t N, std::size_t VL>
struct vocab_slice_cross_entropy_backward_op {
  using signature = ops::signature<args::out<N>, args::out<N, VL>, args::in<N>, args::value, args::value, args::in<3 * N>>;
};
template <std::size_t N, std::size_t VL>
inline constexpr op_fn<vocab_slice_cross_entropy_backward_op<N, VL>> vocab_slice_cross_entropy_backward{};
template <std::size_t N, std::size_t VL, host_element T, host_element L>
void op_impl(vocab_slice_cross_entropy_backward_op<N, VL>, const host_context&, L* losses, T* logits_to_dlogits,
             const std::int32_t* targets, std::size_t lo, std::type_identity_t<compute_t<T>> dloss,
             const double* work) {
  static_assert(detail::check_dims<N, VL>::ok);
  using acc = detail::acc_t<T>;
  using F = compute_t<T>;  // T itself, float for bf16
  for (std::size_t n = 0; n < N; ++n) {
    T* z = logits_to_dlogits + n * VL;  // (VL) logits in, dlogits out
    if (targets[n] < 0) {
      losses[n] = L(0);
      std::fill_n(z, VL, T(0));
      continue;
    }
    const F m = static_cast<F>(work[n]);
    const acc sum = static_cast<acc>(work[N + 2 * n]);
    losses[n] = L(acc(m) + std::log(sum) - static_cast<acc>(work[N + 2 * n + 1]));
    const F scale = F(acc(dloss) / sum);  // softmax = exp(z - max) / sum
    const std::size_t t = static_cast<std::size_t>(targets[n]) - lo;
    if constexpr (is_storage_only_v<T>) {
      // bf16: the target's entry is finished in float first, so it is rounded once.
      const F dz_t = t < VL ? detail::exp_fast(F(F(z[t]) - m)) * scale - dloss : F(0);
      for (std::size_t v = 0; v < VL; ++v) z[v] = T(detail::exp_fast(F(F(z[v]) - m)) * scale);
      if (t < VL) z[t] = T(dz_t);
    } else {
      for (std::size_t v = 0; v < VL; ++v) z[v] = detail::exp_fast(T(z[v] - m)) * scale;
      if (t < VL) z[t] -= dloss;
    }
  }
}

/// From the reduced statistics work = [mx(N) | sums(N, 2)]: losses(N) only.
template <std::size_t N, std::size_t VL>
struct vocab_slice_cross_entropy_loss_op {
  using signature = ops::signature<args::out<N>, args::in<N>, args::in<3 * N>>;
};
template <std::size_t N, std::size_t VL>
inline constexpr op_fn<vocab_slice_cross_entropy_loss_op<N, VL>> vocab_slice_cross_entropy_loss{};
// (T: the losses' type; float for bf16 logits, whose row max is a float value too.)
template <std::size_t N, std::size_t VL, host_element T>
void op_impl(vocab_slice_cross_entropy_loss_op<N, VL>, const host_context&, T* losses, const std::int32_t* targets,
             const double* work) {
  static_assert(detail::check_dims<N, VL>::ok);
  using acc = detail::acc_t<T>;
  for (std::size_t n = 0; n < N; ++n)
    losses[n] = targets[n] < 0 ? T(0)
                               : T(acc(static_cast<T>(work[n])) + std::log(static_cast<acc>(work[N + 2 * n])) -
                                   static_cast<acc>(work[N + 2 * n + 1]));
}

}  // namespace weft::ops
