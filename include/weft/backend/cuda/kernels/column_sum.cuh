#pragma once
// ---- launcher of the deterministic bias gradient (column_sum.hpp) ----
#include "weft/backend/cuda/kernels/column_sum.hpp"  // make_bias_backward, bias_backward_scratch_v
#include "weft/backend/cuda/kernels/launch.cuh"      // launch

namespace weft::cuda::kernels {

/// dbias(OC) += column sums of dout(N, OC); scratch: bias_backward_scratch_v<N, OC> floats.
template <std::size_t N, std::size_t OC, class T>
cudaError_t launch_bias_backward(cudaStream_t s, T* dbias, const T* dout, float* scratch) {
  const auto k = make_bias_backward<N, OC>(dbias, dout, scratch);
  if (const cudaError_t e = launch(s, k.partial); e != cudaSuccess) return e;
  return launch(s, k.total);
}

}  // namespace weft::cuda::kernels
