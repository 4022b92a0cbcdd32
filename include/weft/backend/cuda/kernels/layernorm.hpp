#pragma once
// ---- layernorm forward (optionally fused with the residual add) and backward ----
// One block per row in the forward; the row lives in registers (locals) between the phases:
//   0: load (x = inp + residual, written back as the new residual stream, when fused); Σx
//   1: mean; Σ(x - mean)²              (two-pass variance, as the host op)
//   2: rstd; out = (x - mean) rstd w + b; mean and rstd kept in f32
// The columns a thread holds come from row_tiling (a weft layout (vector element, thread,
// sweep) -> column), so C picks the vector width, the block size and the unrolling.
// Backward: a block takes RowsPerBlock rows, two phases per row (reduce Σg, Σg·xhat; write dx),
// keeps its columns' dweight/dbias partials in registers and writes them as one row of
// `partial`; column_sum_kernel then adds the blocks' rows in order (no atomics).
#include "weft/backend/cuda/kernels/column_sum.hpp"  // column_sum_kernel
#include "weft/backend/cuda/kernels/grid.hpp"        // block_reduce_*, load_vec, store_vec, math
#include "weft/backend/cuda/kernels/tiling.hpp"      // row_tiling_for

#include <cstddef>

namespace weft::cuda::kernels {

/// The epsilon inside the square root (as ops::layernorm_eps).
inline constexpr float layernorm_eps = 1e-5f;

/// out(N, C) = layernorm(x) w + b with x = inp, or x = inp + residual (then also written to
/// residual_out, which may alias inp). mean(N), rstd(N) in f32.
template <std::size_t N, std::size_t C, class T>
struct layernorm_forward_kernel {
  using tiling = row_tiling_for<T, C>;
  static constexpr unsigned threads = tiling::threads;
  static constexpr std::size_t W = tiling::width;

  T* out;
  float* mean;
  float* rstd;
  const T* inp;
  const T* residual;  // null: no fused add
  T* residual_out;    // inp + residual, when fused
  const T* weight;
  const T* bias;

  struct shared {
    block_reduce_storage<threads, float> sum, sq;
  };
  struct locals {
    float x[tiling::per_thread];  // this thread's columns of the row
    float mean;
  };
  static constexpr int phases = 3;
  launch_config config() const { return {{static_cast<unsigned>(N), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t row = c.block_rank(), t = c.thread_rank();
    const std::size_t at = row * C;
    if (p == 0) {
      float sum = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        auto x = load_vec<W>(inp + at + col);
        if (residual != nullptr) {
          const auto r = load_vec<W>(residual + at + col);
          for (std::size_t e = 0; e < W; ++e) x.v[e] = from_f32<T>(to_f32(x.v[e]) + to_f32(r.v[e]));
          store_vec<W>(residual_out + at + col, x);
        }
        for (std::size_t e = 0; e < W; ++e) {
          l.x[it * W + e] = to_f32(x.v[e]);
          sum += l.x[it * W + e];
        }
      }
      block_reduce_put(c, s.sum, sum, sum_op{});
    } else if (p == 1) {
      l.mean = block_reduce_get(c, s.sum, sum_op{}) / float(C);
      float sq = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        if (tiling::column(t, it) >= C) continue;
        for (std::size_t e = 0; e < W; ++e) {
          const float d = l.x[it * W + e] - l.mean;
          sq += d * d;
        }
      }
      block_reduce_put(c, s.sq, sq, sum_op{});
    } else {
      const float rs = 1.0f / math::sqrt(block_reduce_get(c, s.sq, sum_op{}) / float(C) + layernorm_eps);
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        const auto w = load_vec<W>(weight + col);
        const auto b = load_vec<W>(bias + col);
        vec<T, W> y;
        for (std::size_t e = 0; e < W; ++e)
          y.v[e] = from_f32<T>((l.x[it * W + e] - l.mean) * rs * to_f32(w.v[e]) + to_f32(b.v[e]));
        store_vec<W>(out + at + col, y);
      }
      if (t == 0) {
        mean[row] = l.mean;
        rstd[row] = rs;
      }
    }
  }
};

/// Rows per block of the norm backward kernels.
template <std::size_t N>
inline constexpr std::size_t norm_backward_rows_v = N < 16 ? N : 16;

/// Backward, pass 1: dinp(N, C) += ...; partial(blocks, 2, C) = per-block dweight, dbias sums.
template <std::size_t N, std::size_t C, class T>
struct layernorm_backward_kernel {
  using tiling = row_tiling_for<T, C>;
  static constexpr unsigned threads = tiling::threads;
  static constexpr std::size_t W = tiling::width;
  static constexpr std::size_t R = norm_backward_rows_v<N>;
  static constexpr std::size_t blocks = ceil_div(N, R);

  T* dinp;
  float* partial;  // (blocks, 2, C): dweight rows then dbias rows
  const T* dout;
  const T* inp;
  const T* weight;
  const float* mean;
  const float* rstd;

  struct shared {
    block_reduce_storage<threads, float> g, gx;
  };
  struct locals {
    float dw[tiling::per_thread], db[tiling::per_thread];  // this block's column partials
    float xhat[tiling::per_thread], g[tiling::per_thread];  // the current row
  };
  static constexpr int phases = static_cast<int>(2 * R + 1);
  launch_config config() const { return {{static_cast<unsigned>(blocks), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t t = c.thread_rank();
    if (p == phases - 1) {  // write the block's partials
      float* pw = partial + c.block_rank() * 2 * C;  // (C)
      float* pb = pw + C;                            // (C)
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        for (std::size_t e = 0; e < W; ++e) {
          pw[col + e] = l.dw[it * W + e];
          pb[col + e] = l.db[it * W + e];
        }
      }
      return;
    }
    const std::size_t row = c.block_rank() * R + static_cast<std::size_t>(p / 2);
    const bool live = row < N;  // the last block may hold fewer rows; it still meets every barrier
    const std::size_t at = row * C;
    if (p % 2 == 0) {
      float gs = 0, gxs = 0;
      if (live) {
        const float m = mean[row], rs = rstd[row];
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          const auto x = load_vec<W>(inp + at + col);
          const auto dy = load_vec<W>(dout + at + col);
          const auto w = load_vec<W>(weight + col);
          for (std::size_t e = 0; e < W; ++e) {
            const std::size_t j = it * W + e;
            const float d = to_f32(dy.v[e]);
            l.xhat[j] = (to_f32(x.v[e]) - m) * rs;
            l.g[j] = d * to_f32(w.v[e]);
            gs += l.g[j];
            gxs += l.g[j] * l.xhat[j];
            l.dw[j] += d * l.xhat[j];
            l.db[j] += d;
          }
        }
      }
      block_reduce_put(c, s.g, gs, sum_op{});
      block_reduce_put(c, s.gx, gxs, sum_op{});
    } else {
      const float g_mean = block_reduce_get(c, s.g, sum_op{}) / float(C);
      const float gx_mean = block_reduce_get(c, s.gx, sum_op{}) / float(C);
      if (!live) return;
      const float rs = rstd[row];
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        auto dx = load_vec<W>(dinp + at + col);
        for (std::size_t e = 0; e < W; ++e) {
          const std::size_t j = it * W + e;
          dx.v[e] = from_f32<T>(to_f32(dx.v[e]) + rs * (l.g[j] - g_mean - l.xhat[j] * gx_mean));
        }
        store_vec<W>(dinp + at + col, dx);
      }
    }
  }
};

/// Floats of scratch the layernorm backward needs.
template <std::size_t N, std::size_t C>
inline constexpr std::size_t layernorm_backward_scratch_v = ceil_div(N, norm_backward_rows_v<N>) * 2 * C;

/// The kernels of one layernorm backward: rows, then dweight and dbias column sums.
template <std::size_t N, std::size_t C, class T>
struct layernorm_backward_kernels {
  layernorm_backward_kernel<N, C, T> rows;
  column_sum_kernel<T> dweight;  // partial rows 0, 2, 4, ... (stride 2C)
  column_sum_kernel<T> dbias;
};

/// out, mean, rstd = layernorm(inp) (see layernorm_forward_kernel).
template <std::size_t N, std::size_t C, class T>
layernorm_forward_kernel<N, C, T> make_layernorm_forward(T* out, float* mean, float* rstd, const T* inp,
                                                         const T* weight, const T* bias) {
  return {out, mean, rstd, inp, nullptr, nullptr, weight, bias};
}
/// residual_out = inp + residual; out, mean, rstd = layernorm(residual_out).
template <std::size_t N, std::size_t C, class T>
layernorm_forward_kernel<N, C, T> make_residual_layernorm_forward(T* residual_out, T* out, float* mean, float* rstd,
                                                                  const T* inp, const T* residual, const T* weight,
                                                                  const T* bias) {
  return {out, mean, rstd, inp, residual, residual_out, weight, bias};
}
/// dinp, dweight, dbias += the gradients; scratch: layernorm_backward_scratch_v<N, C> floats.
template <std::size_t N, std::size_t C, class T>
layernorm_backward_kernels<N, C, T> make_layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout,
                                                            const T* inp, const T* weight, const float* mean,
                                                            const float* rstd, float* scratch) {
  using rows = layernorm_backward_kernel<N, C, T>;
  // Block b's dweight partials start at b * 2C, its dbias partials at b * 2C + C.
  return {rows{dinp, scratch, dout, inp, weight, mean, rstd},
          column_sum_kernel<T>{dweight, scratch, rows::blocks, C, 2 * C},
          column_sum_kernel<T>{dbias, scratch + C, rows::blocks, C, 2 * C}};
}

}  // namespace weft::cuda::kernels
