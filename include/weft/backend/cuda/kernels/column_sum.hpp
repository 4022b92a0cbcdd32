#pragma once
// ---- column sums of per-block partials: the deterministic second pass of weight gradients ----
// A row kernel (layernorm/rmsnorm backward, a bias gradient) leaves one f32 row of partial
// column sums per block, partial(blocks, cols); this kernel adds them up in block order, one
// thread per column, and accumulates the result into out(cols). No atomics: the sum depends
// only on the sizes.
#include "weft/backend/cuda/kernels/grid.hpp"    // block_context, to_f32, from_f32
#include "weft/backend/cuda/kernels/tiling.hpp"  // flat_config

#include <cstddef>

namespace weft::cuda::kernels {

/// out(cols) += sum over b < rows of partial[b * stride + (0 .. cols)].
template <class T>
struct column_sum_kernel {
  T* out;
  const float* partial;  // (rows, stride >= cols)
  std::size_t rows;
  std::size_t cols;
  std::size_t stride;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(cols, 128); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t j = c.global_rank(); j < cols; j += c.global_threads()) {
      float s = 0;
      for (std::size_t b = 0; b < rows; ++b) s += partial[b * stride + j];
      out[j] = from_f32<T>(to_f32(out[j]) + s);
    }
  }
};

/// Bias gradient, first pass: partial(blocks, OC) column sums of dout(N, OC) over row chunks of
/// `RowsPerBlock`, one thread per column in a block (deterministic; the cuBLASLt BGRADB
/// epilogue does the same inside a matmul).
template <std::size_t N, std::size_t OC, class T, std::size_t RowsPerBlock = 64>
struct bias_partial_kernel {
  static constexpr std::size_t blocks_y = ceil_div(N, RowsPerBlock);
  float* partial;  // (blocks_y, OC)
  const T* dout;   // (N, OC)
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const {
    return {{static_cast<unsigned>(ceil_div(OC, 128)), static_cast<unsigned>(blocks_y), 1}, {128, 1, 1}};
  }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    const std::size_t j = std::size_t{c.block_idx.x} * c.block_dim.x + c.thread_idx.x;
    if (j >= OC) return;
    const std::size_t r0 = std::size_t{c.block_idx.y} * RowsPerBlock;
    float s = 0;
    for (std::size_t r = r0; r < r0 + RowsPerBlock && r < N; ++r) s += to_f32(dout[r * OC + j]);
    partial[c.block_idx.y * OC + j] = s;
  }
};

/// The two passes of dbias(OC) += column sums of dout(N, OC); scratch holds
/// bias_backward_scratch_v<N, OC> floats.
template <std::size_t N, std::size_t OC, class T>
struct bias_backward_kernels {
  bias_partial_kernel<N, OC, T> partial;
  column_sum_kernel<T> total;
};
template <std::size_t N, std::size_t OC>
inline constexpr std::size_t bias_backward_scratch_v = ceil_div(N, 64) * OC;
template <std::size_t N, std::size_t OC, class T>
bias_backward_kernels<N, OC, T> make_bias_backward(T* dbias, const T* dout, float* scratch) {
  return {{scratch, dout}, {dbias, scratch, bias_partial_kernel<N, OC, T>::blocks_y, OC, OC}};
}

}  // namespace weft::cuda::kernels
