#pragma once
// ---- launchers of rmsnorm (rmsnorm.hpp) ----
#include "weft/backend/cuda/kernels/launch.cuh"   // launch
#include "weft/backend/cuda/kernels/rmsnorm.hpp"  // make_rmsnorm_*

namespace weft::cuda::kernels {

template <std::size_t N, std::size_t C, class T>
cudaError_t launch_rmsnorm_forward(cudaStream_t s, T* out, float* rstd, const T* inp, const T* weight,
                                   float eps = rmsnorm_eps) {
  return launch(s, make_rmsnorm_forward<N, C>(out, rstd, inp, weight, eps));
}
/// scratch: rmsnorm_backward_scratch_v<N, C> floats.
template <std::size_t N, std::size_t C, class T>
cudaError_t launch_rmsnorm_backward(cudaStream_t s, T* dinp, T* dweight, const T* dout, const T* inp,
                                    const T* weight, const float* rstd, float* scratch) {
  const auto k = make_rmsnorm_backward<N, C>(dinp, dweight, dout, inp, weight, rstd, scratch);
  if (const cudaError_t e = launch(s, k.rows); e != cudaSuccess) return e;
  return launch(s, k.dweight);
}

}  // namespace weft::cuda::kernels
