#pragma once
// ---- layernorm forward (optionally fused with the residual add) and backward ----
// One block per row in the forward; the row lives in registers (locals) between the phases:
//   0: load (x = inp + residual, written back as the new residual stream, when fused); Σx
//   1: mean; Σ(x - mean)²              (two-pass variance, as the host op)
//   2: rstd; out = (x - mean) rstd w + b; mean and rstd kept in f32
// The columns a thread holds come from row_tiling (a weft layout (vector element, thread,
// sweep) -> column), so C picks the vector width, the block size and the unrolling.
// Backward (norm_backward_shape): a block holds several row groups, each covering one row as
// the forward's block does; two phases per row (reduce Σg, Σg·xhat over the group; write dx),
// each group keeps its columns' dweight/dbias partials in registers over its rows, the groups add
// theirs in order through shared memory, and the block writes one row of `partial`;
// norm_column_sum_kernel then adds the blocks' rows, in fixed slices of rows, in order (no
// atomics). Order of a dweight/dbias column: rows in order within a group, groups in order
// within a block, blocks in order within a slice of blocks, slices in order.
#include "weft/backend/cuda/kernels/grid.hpp"        // block_reduce_*, load_vec, store_vec, math
#include "weft/backend/cuda/kernels/tiling.hpp"      // row_tiling_for

#include <cstddef>

namespace weft::cuda::kernels {

/// The epsilon inside the square root by default (as ops::layernorm_eps); a kernel's `eps`
/// member carries the model's (ops::layernorm_forward_op's Eps).
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
  float eps = layernorm_eps;

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
      const float rs = 1.0f / math::sqrt(block_reduce_get(c, s.sq, sum_op{}) / float(C) + eps);
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

// ---- the norms' backward: shape, group reductions, the column sum of the partials ----

/// How the layernorm and rmsnorm backward cut N rows of C elements of `Bytes`-byte elements:
/// a group of tiling::threads threads covers one row (as the forward's block does); a block holds
/// `groups` groups (up to 512 threads), so that many rows are in flight per block, and each group
/// walks `rows_per_group` rows, rows b * rows_per_block + k * groups + g for k = 0, 1, ...
/// rows_per_group is picked so that the grid is about two blocks per SM of an H100/H200 (264),
/// i.e. every row of a GPT-2 micro-batch is in flight in one or two steps, not 16 rows walked one
/// after another by 256 blocks (what the earlier kernel did: 11-15% of the copy rate).
template <std::size_t N, std::size_t C, std::size_t Bytes>
struct norm_backward_shape {
  static constexpr std::size_t width = [] {
    std::size_t w = 16 / Bytes;
    while (w > 1 && C % w != 0) w /= 2;
    return w;
  }();
  static constexpr unsigned group_threads = row_threads_v<C, width>;
  static constexpr std::size_t groups = group_threads >= 512 ? 1 : 512 / group_threads;
  static constexpr unsigned threads = static_cast<unsigned>(groups * group_threads);
  static constexpr std::size_t rows_per_group = [] {
    const std::size_t r = ceil_div(N, groups * 264);
    return r < 1 ? 1 : (r > 16 ? 16 : r);
  }();
  static constexpr std::size_t rows_per_block = groups * rows_per_group;
  static constexpr std::size_t blocks = ceil_div(N, rows_per_block);
};

/// Partial rows (blocks) of the norm backward: the most any element size up to 8 bytes gives.
template <std::size_t N, std::size_t C>
inline constexpr std::size_t norm_backward_blocks_v = [] {
  std::size_t b = 0;
  for (std::size_t x : {norm_backward_shape<N, C, 1>::blocks, norm_backward_shape<N, C, 2>::blocks,
                        norm_backward_shape<N, C, 4>::blocks, norm_backward_shape<N, C, 8>::blocks})
    b = x > b ? x : b;
  return b;
}();

namespace detail {

/// The second half of a reduction over one group of `warps` warps starting at `first_warp`
/// (the first half is block_reduce_put in the phase before): the warps' butterflies combined in
/// warp order, as block_reduce_get does for the whole block; host and device agree bit for bit.
template <unsigned Threads>
WEFT_HOST_DEVICE float group_reduce_sum(const block_reduce_storage<Threads, float>& s, unsigned first_warp,
                                        unsigned warps) {
#if defined(__CUDA_ARCH__)
  float r = s.slot[first_warp];
  for (unsigned w = 1; w < warps; ++w) r += s.slot[first_warp + w];
  return r;
#else
  float r = 0;
  for (unsigned w = 0; w < warps; ++w) {
    float a[warp_size], b[warp_size];  // the 32 lanes of the warp
    for (unsigned l = 0; l < warp_size; ++l) a[l] = s.slot[(first_warp + w) * warp_size + l];
    for (unsigned o = warp_size / 2; o > 0; o /= 2) {
      for (unsigned l = 0; l < warp_size; ++l) b[l] = a[l] + a[l ^ o];  // what __shfl_xor_sync does
      for (unsigned l = 0; l < warp_size; ++l) a[l] = b[l];
    }
    r = w == 0 ? a[0] : r + a[0];
  }
  return r;
#endif
}

}  // namespace detail

/// The norms' second pass: out0(C) += column sums of partial(rows, 0 .. C), and out1(C) += those
/// of partial(rows, C .. 2C) when out1 is not null (rows of width 2C then). A block takes 32
/// columns and 8 slices of consecutive rows; each thread sums its slice's rows in order, then
/// the slices are added in order (so 8x the threads of one-thread-per-column, and one launch for
/// dweight and dbias together). The order depends only on the sizes: deterministic, no atomics.
template <class T>
struct norm_column_sum_kernel {
  static constexpr unsigned slices = 8;
  static constexpr unsigned threads = slices * warp_size;
  T* out0;
  T* out1;  // null: one output
  const float* partial;  // (rows, width)
  std::size_t rows;
  std::size_t cols;  // C
  struct shared {
    float part[slices][warp_size];  // (slice, column in the block)
  };
  struct locals {};
  static constexpr int phases = 2;
  std::size_t width() const { return out1 != nullptr ? 2 * cols : cols; }
  launch_config config() const {
    return {{static_cast<unsigned>(ceil_div(width(), warp_size)), 1, 1}, {warp_size, slices, 1}};
  }
  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals&) const {
    const std::size_t wd = out1 != nullptr ? 2 * cols : cols;
    const std::size_t col = std::size_t{c.block_idx.x} * warp_size + c.thread_idx.x;
    if (p == 0) {
      const std::size_t per = ceil_div(rows, slices), r0 = c.thread_idx.y * per;
      const std::size_t r1 = r0 + per < rows ? r0 + per : rows;
      float sum = 0;
      if (col < wd)
        for (std::size_t r = r0; r < r1; ++r) sum += partial[r * wd + col];
      s.part[c.thread_idx.y][c.thread_idx.x] = sum;
    } else if (c.thread_idx.y == 0 && col < wd) {
      float total = s.part[0][c.thread_idx.x];
      for (unsigned y = 1; y < slices; ++y) total += s.part[y][c.thread_idx.x];
      T* o = col < cols ? out0 + col : out1 + (col - cols);
      *o = from_f32<T>(to_f32(*o) + total);
    }
  }
};

/// Backward, pass 1: dinp(N, C) += ...; partial(blocks, 2, C) = per-block dweight, dbias sums.
/// Per row two phases: (load x, dout, w and the dinp being accumulated into; Σg, Σg·xhat per
/// group), (the group's sums; write dx). The block's groups then add their column partials in
/// group order through shared memory and write one row of `partial`.
template <std::size_t N, std::size_t C, class T>
struct layernorm_backward_kernel {
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
  float* partial;  // (blocks, 2, C): dweight rows then dbias rows
  const T* dout;
  const T* inp;
  const T* weight;
  const float* mean;
  const float* rstd;

  struct shared {
    block_reduce_storage<threads, float> g, gx;
    float part[G > 1 ? G : 1][2][G > 1 ? C : 1];  // (group, dweight/dbias, C): the groups' partials
  };
  struct locals {
    float dw[tiling::per_thread], db[tiling::per_thread];  // this group's column partials
    float xhat[tiling::per_thread], g[tiling::per_thread];  // the current row
    float dx[tiling::per_thread];                           // dinp of the current row, loaded early
  };
  static constexpr int phases = static_cast<int>(2 * R + (G > 1 ? 2 : 1));
  launch_config config() const { return {{static_cast<unsigned>(blocks), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t group = c.thread_rank() / tiling::threads, t = c.thread_rank() % tiling::threads;
    if (p >= static_cast<int>(2 * R)) {  // the block's partials
      if constexpr (G == 1) {
        float* pw = partial + c.block_rank() * 2 * C;  // (C)
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          for (std::size_t e = 0; e < W; ++e) {
            pw[col + e] = l.dw[it * W + e];
            pw[C + col + e] = l.db[it * W + e];
          }
        }
      } else if (p == static_cast<int>(2 * R)) {
        for (std::size_t it = 0; it < tiling::iters; ++it) {
          const std::size_t col = tiling::column(t, it);
          if (col >= C) continue;
          for (std::size_t e = 0; e < W; ++e) {
            s.part[group][0][col + e] = l.dw[it * W + e];
            s.part[group][1][col + e] = l.db[it * W + e];
          }
        }
      } else {  // groups added in order, every thread of the block on its columns of (2, C)
        float* pw = partial + c.block_rank() * 2 * C;  // (2, C)
        for (std::size_t i = c.thread_rank(); i < 2 * C; i += threads) {
          const std::size_t which = i / C, col = i % C;
          float sum = s.part[0][which][col];
          for (std::size_t q = 1; q < G; ++q) sum += s.part[q][which][col];
          pw[i] = sum;
        }
      }
      return;
    }
    const std::size_t row = c.block_rank() * shape::rows_per_block + static_cast<std::size_t>(p / 2) * G + group;
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
          const auto dx = load_vec<W>(dinp + at + col);  // with the rest: one memory round trip per row
          for (std::size_t e = 0; e < W; ++e) {
            const std::size_t j = it * W + e;
            const float d = to_f32(dy.v[e]);
            l.dx[j] = to_f32(dx.v[e]);
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
      const unsigned first = static_cast<unsigned>(group) * group_warps;
      const float g_mean = detail::group_reduce_sum(s.g, first, group_warps) / float(C);
      const float gx_mean = detail::group_reduce_sum(s.gx, first, group_warps) / float(C);
      if (!live) return;
      const float rs = rstd[row];
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= C) continue;
        vec<T, W> dx;
        for (std::size_t e = 0; e < W; ++e) {
          const std::size_t j = it * W + e;
          dx.v[e] = from_f32<T>(l.dx[j] + rs * (l.g[j] - g_mean - l.xhat[j] * gx_mean));
        }
        store_vec<W>(dinp + at + col, dx);
      }
    }
  }
};

/// Floats of scratch the layernorm backward needs (any element type).
template <std::size_t N, std::size_t C>
inline constexpr std::size_t layernorm_backward_scratch_v = norm_backward_blocks_v<N, C> * 2 * C;

/// The kernels of one layernorm backward: rows, then the dweight and dbias column sums.
template <std::size_t N, std::size_t C, class T>
struct layernorm_backward_kernels {
  layernorm_backward_kernel<N, C, T> rows;
  norm_column_sum_kernel<T> columns;  // partial rows of 2C: dweight, dbias
};

/// out, mean, rstd = layernorm(inp) (see layernorm_forward_kernel).
template <std::size_t N, std::size_t C, class T>
layernorm_forward_kernel<N, C, T> make_layernorm_forward(T* out, float* mean, float* rstd, const T* inp,
                                                         const T* weight, const T* bias, float eps = layernorm_eps) {
  return {out, mean, rstd, inp, nullptr, nullptr, weight, bias, eps};
}
/// residual_out = inp + residual; out, mean, rstd = layernorm(residual_out).
template <std::size_t N, std::size_t C, class T>
layernorm_forward_kernel<N, C, T> make_residual_layernorm_forward(T* residual_out, T* out, float* mean, float* rstd,
                                                                  const T* inp, const T* residual, const T* weight,
                                                                  const T* bias, float eps = layernorm_eps) {
  return {out, mean, rstd, inp, residual, residual_out, weight, bias, eps};
}
/// dinp, dweight, dbias += the gradients; scratch: layernorm_backward_scratch_v<N, C> floats.
template <std::size_t N, std::size_t C, class T>
layernorm_backward_kernels<N, C, T> make_layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout,
                                                            const T* inp, const T* weight, const float* mean,
                                                            const float* rstd, float* scratch) {
  using rows = layernorm_backward_kernel<N, C, T>;
  static_assert(rows::blocks * 2 * C <= layernorm_backward_scratch_v<N, C>);
  // Block b's dweight partials start at b * 2C, its dbias partials at b * 2C + C.
  return {rows{dinp, scratch, dout, inp, weight, mean, rstd},
          norm_column_sum_kernel<T>{dweight, dbias, scratch, rows::blocks, C}};
}

}  // namespace weft::cuda::kernels
