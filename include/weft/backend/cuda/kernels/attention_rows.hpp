#pragma once
// ---- the row kernels of attention on tensor cores (backend/cuda/attention.cuh) ----
// Attention there is matrix products through cuBLASLt (tensor cores) around two row kernels of
// weft's own, one block per row of a head's (S, S) score matrix; row r is query position r % S
// (a chunk of heads is S rows per head), and keys past it are masked (causal), as are, with a
// sliding window of W keys (W > 0), the keys before the window (query t sees t - W < t2 <= t):
//   causal_softmax_rows     scores (f32, scale·q·k) -> probabilities P in T, 0 where masked
//                           phases: 0 max, 1 Σ exp(s - max), 2 P = exp(s - max) / Σ
//   attention_dscores_rows  dP (f32, dout·v) and P -> d(scores) = P ⊙ (dP - Σ P·dP), 0 where
//                           masked; phases: 0 Σ P·dP, 1 the row
// These are the host op's softmax and its gradient (ops/attention.hpp) row by row, reading the
// f32 products cuBLASLt wrote; the kernel tests run them on the emulated grid.
#include "weft/backend/cuda/kernels/attention.hpp"  // detail::window_first
#include "weft/backend/cuda/kernels/grid.hpp"       // block_reduce_*, load_vec, store_vec, math
#include "weft/backend/cuda/kernels/tiling.hpp"     // row_tiling_for

#include <cstddef>

namespace weft::cuda::kernels {

namespace detail {
// The visible columns [lo, q] of a row and a thread's vector of V columns at col: whether any of
// them is visible, and whether column col + e is.
struct row_window {
  std::size_t lo, q;
  WEFT_HOST_DEVICE constexpr bool touches(std::size_t col, std::size_t V) const { return col <= q && col + V > lo; }
  WEFT_HOST_DEVICE constexpr bool sees(std::size_t col) const { return col >= lo && col <= q; }
};
template <std::size_t S, std::size_t W>
WEFT_HOST_DEVICE constexpr row_window window_of_row(std::size_t row) {
  const std::size_t q = row % S;
  return {window_first<W>(q), q};
}
}  // namespace detail

template <std::size_t S, class T, std::size_t W = 0>
struct causal_softmax_rows {
  using tiling = row_tiling_for<float, S>;
  static constexpr unsigned threads = static_cast<unsigned>(tiling::threads);
  static constexpr std::size_t V = tiling::width;

  const float* scores;  // (rows, S) f32
  T* probs;             // (rows, S)
  std::size_t rows;

  struct shared {
    block_reduce_storage<threads, float> mx, sum;
  };
  struct locals {
    float mx;
  };
  static constexpr int phases = 3;
  launch_config config() const { return {{static_cast<unsigned>(rows), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t row = c.block_rank(), t = c.thread_rank();
    const detail::row_window win = detail::window_of_row<S, W>(row);
    const float* z = scores + row * S;
    if (p == 0) {
      float mx = -3.402823466e38f;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (!win.touches(col, V)) continue;
        const auto x = load_vec<V>(z + col);
        for (std::size_t e = 0; e < V; ++e)
          if (win.sees(col + e)) mx = max_op{}(mx, x.v[e]);
      }
      block_reduce_put(c, s.mx, mx, max_op{});
    } else if (p == 1) {
      l.mx = block_reduce_get(c, s.mx, max_op{});
      float sum = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (!win.touches(col, V)) continue;
        const auto x = load_vec<V>(z + col);
        for (std::size_t e = 0; e < V; ++e)
          if (win.sees(col + e)) sum += math::exp(x.v[e] - l.mx);
      }
      block_reduce_put(c, s.sum, sum, sum_op{});
    } else {
      const float inv = 1.0f / block_reduce_get(c, s.sum, sum_op{});
      T* out = probs + row * S;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= S) continue;
        vec<T, V> y;
        if (win.touches(col, V)) {
          const auto x = load_vec<V>(z + col);
          for (std::size_t e = 0; e < V; ++e)
            y.v[e] = from_f32<T>(win.sees(col + e) ? math::exp(x.v[e] - l.mx) * inv : 0.0f);
        } else {
          for (std::size_t e = 0; e < V; ++e) y.v[e] = from_f32<T>(0.0f);
        }
        store_vec<V>(out + col, y);
      }
    }
  }
};

template <std::size_t S, class T, std::size_t W = 0>
struct attention_dscores_rows {
  using tiling = row_tiling_for<float, S>;
  static constexpr unsigned threads = static_cast<unsigned>(tiling::threads);
  static constexpr std::size_t V = tiling::width;

  const float* dprobs;  // (rows, S) f32: dout · v
  const T* probs;       // (rows, S)
  T* dscores;           // (rows, S): P ⊙ (dP - Σ P·dP)
  std::size_t rows;

  struct shared {
    block_reduce_storage<threads, float> dot;
  };
  struct locals {};
  static constexpr int phases = 2;
  launch_config config() const { return {{static_cast<unsigned>(rows), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals&) const {
    const std::size_t row = c.block_rank(), t = c.thread_rank();
    const detail::row_window win = detail::window_of_row<S, W>(row);
    const float* dp = dprobs + row * S;
    const T* pr = probs + row * S;
    if (p == 0) {
      float dot = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (!win.touches(col, V)) continue;
        const auto x = load_vec<V>(dp + col);
        const auto a = load_vec<V>(pr + col);
        for (std::size_t e = 0; e < V; ++e)
          if (win.sees(col + e)) dot += to_f32(a.v[e]) * x.v[e];
      }
      block_reduce_put(c, s.dot, dot, sum_op{});
    } else {
      const float delta = block_reduce_get(c, s.dot, sum_op{});
      T* out = dscores + row * S;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= S) continue;
        vec<T, V> y;
        if (win.touches(col, V)) {
          const auto x = load_vec<V>(dp + col);
          const auto a = load_vec<V>(pr + col);
          for (std::size_t e = 0; e < V; ++e)
            y.v[e] = from_f32<T>(win.sees(col + e) ? to_f32(a.v[e]) * (x.v[e] - delta) : 0.0f);
        } else {
          for (std::size_t e = 0; e < V; ++e) y.v[e] = from_f32<T>(0.0f);
        }
        store_vec<V>(out + col, y);
      }
    }
  }
};

/// probs(rows, S) = causal softmax of scores(rows, S) (row r is query r % S), over a sliding
/// window of W keys when W > 0.
template <std::size_t S, std::size_t W = 0, class T>
causal_softmax_rows<S, T, W> make_causal_softmax_rows(const float* scores, T* probs, std::size_t rows) {
  return {scores, probs, rows};
}
/// dscores(rows, S) = probs ⊙ (dprobs - Σ probs·dprobs), causal (and windowed when W > 0).
template <std::size_t S, std::size_t W = 0, class T>
attention_dscores_rows<S, T, W> make_attention_dscores_rows(const float* dprobs, const T* probs, T* dscores,
                                                            std::size_t rows) {
  return {dprobs, probs, dscores, rows};
}

}  // namespace weft::cuda::kernels
