#pragma once
// ---- launcher of the two-pass sum of squares (sum_squares.hpp) ----
#include "weft/backend/cuda/kernels/launch.cuh"       // launch
#include "weft/backend/cuda/kernels/sum_squares.hpp"  // make_sum_squares, sum_squares_blocks

namespace weft::cuda::kernels {

/// *out (device) = Σ x(n)² in double (or += when accumulate); scratch: sum_squares_blocks(n) doubles.
template <class T>
cudaError_t launch_sum_squares(cudaStream_t s, double* out, const T* x, std::size_t n, double* scratch,
                               bool accumulate = false) {
  const auto k = make_sum_squares(out, x, n, scratch, accumulate);
  if (const cudaError_t e = launch(s, k.partial); e != cudaSuccess) return e;
  return launch(s, k.total);
}

/// *out (device) = mean of losses(n) in double; scratch: sum_squares_blocks(n) doubles.
template <class T>
cudaError_t launch_mean_loss(cudaStream_t s, double* out, const T* losses, std::size_t n, double* scratch) {
  const auto k = make_mean_loss(out, losses, n, scratch);
  if (const cudaError_t e = launch(s, k.partial); e != cudaSuccess) return e;
  return launch(s, k.total);
}

}  // namespace weft::cuda::kernels
