#pragma once
// ---- rmsnorm forward and backward (LLaMA) ----
// As layernorm.hpp without the mean and the bias: forward is two phases (Σx², then write),
// backward two phases per row (Σ g·x, then dx) plus the dweight partials, cut and summed as the
// layernorm backward's (norm_backward_shape, norm_column_sum_kernel). rstd is kept in f32.
#include "weft/backend/cuda/kernels/grid.hpp"        // block_reduce_*, load_vec, store_vec, math
#include "weft/backend/cuda/kernels/layernorm.hpp"   // norm_backward_shape, norm_column_sum_kernel
#include "weft/backend/cuda/kernels/tiling.hpp"      // row_tiling_for

#include <cstddef>

namespace weft::cuda::kernels {

/// The epsilon inside the square root by default (as ops::rmsnorm_eps); a kernel's `eps` member
/// carries the model's (ops::rmsnorm_forward_op's Eps).
inline constexpr float rmsnorm_eps = 1e-5f;

/// out(N, C) = inp * rstd * weight(C); rstd(N) in f32.
template <std::size_t N, std::size_t C, class T>
struct rmsnorm_forward_kernel {
  using tiling = row_tiling_for<T, C>;
  static constexpr unsigned threads = tiling::threads;
  static constexpr std::size_t W = tiling::width;

  T* out;
  float* rstd;
  const T* inp;
  const T* weight;
  float eps = rmsnorm_eps;

  struct shared {
    block_reduce_storage<threads, float> sq;
  };
  struct locals {
    float x[tiling::per_thread];
  };
  static constexpr int phases = 2;
  launch_config config() const { return {{static_cast<unsigned>(N), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t row = c.block_rank(), t = c.thread_rank(), at = row * C;
    if (p == 0) {
      float sq = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        const auto x = load_vec<W>(inp + at + col);
        for (std::size_t e = 0; e < W; ++e) {
          l.x[it * W + e] = to_f32(x.v[e]);
          sq += l.x[it * W + e] * l.x[it * W + e];
        }
      }
      block_reduce_put(c, s.sq, sq, sum_op{});
    } else {
      const float rs = 1.0f / math::sqrt(block_reduce_get(c, s.sq, sum_op{}) / float(C) + eps);
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        const auto w = load_vec<W>(weight + col);
        vec<T, W> y;
        for (std::size_t e = 0; e < W; ++e) y.v[e] = from_f32<T>(l.x[it * W + e] * rs * to_f32(w.v[e]));
        store_vec<W>(out + at + col, y);
      }
      if (t == 0) rstd[row] = rs;
    }
  }
};

/// Backward, pass 1: dinp(N, C) += rstd (g - xhat mean(g xhat)), g = dout w, xhat = x rstd;
/// partial(blocks, C) = the block's dweight sums. Cut as the layernorm backward
/// (norm_backward_shape: several row groups per block, the groups' partials added in order).
template <std::size_t N, std::size_t C, class T>
struct rmsnorm_backward_kernel {
  using shape = norm_backward_shape<N, C, sizeof(T)>;
  using tiling = row_tiling_for<T, C>;
  static_assert(tiling::threads == shape::group_threads && tiling::width == shape::width);
  static constexpr unsigned threads = shape::threads;
  static constexpr std::size_t W = tiling::width;
  static constexpr std::size_t G = shape::groups;
  static constexpr std::size_t R = shape::rows_per_group;
  static constexpr std::size_t blocks = shape::blocks;
  static constexpr unsigned group_warps = tiling::threads / warp_size;

  T* dinp;
  float* partial;  // (blocks, C)
  const T* dout;
  const T* inp;
  const T* weight;
  const float* rstd;

  struct shared {
    block_reduce_storage<threads, float> gx;
    float part[G > 1 ? G : 1][G > 1 ? C : 1];  // (group, C): the groups' dweight partials
  };
  struct locals {
    float dw[tiling::per_thread];
    float xhat[tiling::per_thread], g[tiling::per_thread];
    float dx[tiling::per_thread];  // dinp of the current row, loaded with x and dout
  };
  static constexpr int phases = static_cast<int>(2 * R + (G > 1 ? 2 : 1));
  launch_config config() const { return {{static_cast<unsigned>(blocks), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t group = c.thread_rank() / tiling::threads, t = c.thread_rank() % tiling::threads;
    if (p >= static_cast<int>(2 * R)) {  // the block's partials
      if constexpr (G == 1) {
        float* pw = partial + c.block_rank() * C;  // (C)
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          for (std::size_t e = 0; e < W; ++e) pw[col + e] = l.dw[it * W + e];
        }
      } else if (p == static_cast<int>(2 * R)) {
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          for (std::size_t e = 0; e < W; ++e) s.part[group][col + e] = l.dw[it * W + e];
        }
      } else {  // groups added in order
        float* pw = partial + c.block_rank() * C;  // (C)
        for (std::size_t col = c.thread_rank(); col < C; col += threads) {
          float sum = s.part[0][col];
          for (std::size_t q = 1; q < G; ++q) sum += s.part[q][col];
          pw[col] = sum;
        }
      }
      return;
    }
    const std::size_t row = c.block_rank() * shape::rows_per_block + static_cast<std::size_t>(p / 2) * G + group;
    const bool live = row < N;
    const std::size_t at = row * C;
    if (p % 2 == 0) {
      float gxs = 0;
      if (live) {
        const float rs = rstd[row];
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          const auto x = load_vec<W>(inp + at + col);
          const auto dy = load_vec<W>(dout + at + col);
          const auto w = load_vec<W>(weight + col);
          const auto dx = load_vec<W>(dinp + at + col);
          for (std::size_t e = 0; e < W; ++e) {
            const std::size_t j = it * W + e;
            const float d = to_f32(dy.v[e]);
            l.dx[j] = to_f32(dx.v[e]);
            l.xhat[j] = to_f32(x.v[e]) * rs;
            l.g[j] = d * to_f32(w.v[e]);
            gxs += l.g[j] * l.xhat[j];
            l.dw[j] += d * l.xhat[j];
          }
        }
      }
      block_reduce_put(c, s.gx, gxs, sum_op{});
    } else {
      const float gx_mean =
          detail::group_reduce_sum(s.gx, static_cast<unsigned>(group) * group_warps, group_warps) / float(C);
      if (!live) return;
      const float rs = rstd[row];
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        vec<T, W> dx;
        for (std::size_t e = 0; e < W; ++e) {
          const std::size_t j = it * W + e;
          dx.v[e] = from_f32<T>(l.dx[j] + rs * (l.g[j] - l.xhat[j] * gx_mean));
        }
        store_vec<W>(dinp + at + col, dx);
      }
    }
  }
};

/// Floats of scratch the rmsnorm backward needs (any element type).
template <std::size_t N, std::size_t C>
inline constexpr std::size_t rmsnorm_backward_scratch_v = norm_backward_blocks_v<N, C> * C;

template <std::size_t N, std::size_t C, class T>
struct rmsnorm_backward_kernels {
  rmsnorm_backward_kernel<N, C, T> rows;
  norm_column_sum_kernel<T> dweight;
};

/// out, rstd = rmsnorm(inp).
template <std::size_t N, std::size_t C, class T>
rmsnorm_forward_kernel<N, C, T> make_rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight,
                                                     float eps = rmsnorm_eps) {
  return {out, rstd, inp, weight, eps};
}
/// dinp, dweight += the gradients; scratch: rmsnorm_backward_scratch_v<N, C> floats.
template <std::size_t N, std::size_t C, class T>
rmsnorm_backward_kernels<N, C, T> make_rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp,
                                                        const T* weight, const float* rstd, float* scratch) {
  using rows = rmsnorm_backward_kernel<N, C, T>;
  static_assert(rows::blocks * C <= rmsnorm_backward_scratch_v<N, C>);
  return {rows{dinp, scratch, dout, inp, weight, rstd}, norm_column_sum_kernel<T>{dweight, nullptr, scratch, rows::blocks, C}};
}

}  // namespace weft::cuda::kernels
