#pragma once
// ---- token and learned positional embeddings ----
// embedding: out(N, C) = table(V, C)[idx(N)], a gather of rows.
// positional: out(B, S, C) += wpe[s] for every batch row, wpe holding at least S rows.
// The gradients are scatter-adds; threads own column blocks, so repeated tokens need no
// atomics and the sums do not depend on the thread count.
#include "weft/ops/detail/host_common.hpp"  // check_dims, column_block, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>

namespace weft::ops {

/// out(N, C) = table(V, C)[idx(N)]. Every idx must lie in [0, V). Overwrites out.
template <std::size_t N, std::size_t V, std::size_t C>
struct embedding_forward_op {
  using signature = ops::signature<args::out<N, C>, args::in<N>, args::in<V, C>>;
};
template <std::size_t N, std::size_t V, std::size_t C>
inline constexpr op_fn<embedding_forward_op<N, V, C>> embedding_forward{};
template <std::size_t N, std::size_t V, std::size_t C, host_element T>
void op_impl(embedding_forward_op<N, V, C>, const host_context&, T* out, const std::int32_t* idx, const T* table) {
  static_assert(detail::check_dims<N, V, C>::ok);
#pragma omp parallel for if (N * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    assert(idx[n] >= 0 && std::size_t(idx[n]) < V);
    const T* row = table + std::size_t(idx[n]) * C;  // (C)
    std::copy(row, row + C, out + n * C);
  }
}

/// Backward of embedding_forward. Accumulates dtable[idx[n]] += dout[n] (rows of C).
template <std::size_t N, std::size_t V, std::size_t C>
struct embedding_backward_op {
  using signature = ops::signature<args::out<V, C>, args::in<N, C>, args::in<N>>;
};
template <std::size_t N, std::size_t V, std::size_t C>
inline constexpr op_fn<embedding_backward_op<N, V, C>> embedding_backward{};
template <std::size_t N, std::size_t V, std::size_t C, host_element T>
void op_impl(embedding_backward_op<N, V, C>, const host_context&, T* dtable, const T* dout, const std::int32_t* idx) {
  static_assert(detail::check_dims<N, V, C>::ok);
  constexpr std::size_t blocks = (C + detail::column_block - 1) / detail::column_block;
#pragma omp parallel for if (N * C >= detail::parallel_min_work && blocks > 1)
  for (std::size_t cb = 0; cb < blocks; ++cb) {
    const std::size_t i0 = cb * detail::column_block, nb = std::min(detail::column_block, C - i0);
    for (std::size_t n = 0; n < N; ++n) {
      assert(idx[n] >= 0 && std::size_t(idx[n]) < V);
      T* drow = dtable + std::size_t(idx[n]) * C + i0;  // (nb)
      const T* dy = dout + n * C + i0;                   // (nb)
#pragma omp simd
      for (std::size_t i = 0; i < nb; ++i) drow[i] = T(compute_t<T>(drow[i]) + compute_t<T>(dy[i]));
    }
  }
}

/// out(B, S, C) += wpe(S_max >= S, C)[s] for each batch row b. Adds onto out (the token
/// embeddings written by embedding_forward).
template <std::size_t B, std::size_t S, std::size_t C>
struct positional_forward_op {
  using signature = ops::signature<args::out<B * S, C>, args::in<S, C>>;
};
template <std::size_t B, std::size_t S, std::size_t C>
inline constexpr op_fn<positional_forward_op<B, S, C>> positional_forward{};
template <std::size_t B, std::size_t S, std::size_t C, host_element T>
void op_impl(positional_forward_op<B, S, C>, const host_context&, T* out, const T* wpe) {
  static_assert(detail::check_dims<B, S, C>::ok);
#pragma omp parallel for if (B * S * C >= detail::parallel_min_work)
  for (std::size_t bs = 0; bs < B * S; ++bs) {
    const T* p = wpe + (bs % S) * C;  // (C)
    T* y = out + bs * C;              // (C)
#pragma omp simd
    for (std::size_t i = 0; i < C; ++i) y[i] = T(compute_t<T>(y[i]) + compute_t<T>(p[i]));
  }
}

/// Backward of positional_forward. Accumulates dwpe[s] += sum over b of dout[b, s]; only the
/// first S rows of dwpe are touched.
template <std::size_t B, std::size_t S, std::size_t C>
struct positional_backward_op {
  using signature = ops::signature<args::out<S, C>, args::in<B * S, C>>;
};
template <std::size_t B, std::size_t S, std::size_t C>
inline constexpr op_fn<positional_backward_op<B, S, C>> positional_backward{};
template <std::size_t B, std::size_t S, std::size_t C, host_element T>
void op_impl(positional_backward_op<B, S, C>, const host_context&, T* dwpe, const T* dout) {
  static_assert(detail::check_dims<B, S, C>::ok);
  if constexpr (is_storage_only_v<T>) {
    // bf16: the sum over the batch is formed in float and rounded once into dwpe[s].
#pragma omp parallel for if (B * S * C >= detail::parallel_min_work)
    for (std::size_t s = 0; s < S; ++s) {
      compute_t<T> acc[C];  // (C)
      for (std::size_t i = 0; i < C; ++i) acc[i] = compute_t<T>(dwpe[s * C + i]);
      for (std::size_t b = 0; b < B; ++b) {
        const T* dy = dout + (b * S + s) * C;  // (C)
        for (std::size_t i = 0; i < C; ++i) acc[i] += compute_t<T>(dy[i]);
      }
      for (std::size_t i = 0; i < C; ++i) dwpe[s * C + i] = T(acc[i]);
    }
    return;
  }
#pragma omp parallel for if (B * S * C >= detail::parallel_min_work)
  for (std::size_t s = 0; s < S; ++s) {
    T* dp = dwpe + s * C;  // (C)
    for (std::size_t b = 0; b < B; ++b) {
      const T* dy = dout + (b * S + s) * C;  // (C)
#pragma omp simd
      for (std::size_t i = 0; i < C; ++i) dp[i] = T(compute_t<T>(dp[i]) + compute_t<T>(dy[i]));
    }
  }
}

}  // namespace weft::ops
