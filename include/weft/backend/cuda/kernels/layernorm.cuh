#pragma once
// ---- launchers of layernorm (layernorm.hpp) ----
#include "weft/backend/cuda/kernels/launch.cuh"     // launch
#include "weft/backend/cuda/kernels/layernorm.hpp"  // make_layernorm_*, make_residual_layernorm_forward

namespace weft::cuda::kernels {

template <std::size_t N, std::size_t C, class T>
cudaError_t launch_layernorm_forward(cudaStream_t s, T* out, float* mean, float* rstd, const T* inp, const T* weight,
                                     const T* bias, float eps = layernorm_eps) {
  return launch(s, make_layernorm_forward<N, C>(out, mean, rstd, inp, weight, bias, eps));
}
/// residual_out = inp + residual, then layernorm of it.
template <std::size_t N, std::size_t C, class T>
cudaError_t launch_residual_layernorm_forward(cudaStream_t s, T* residual_out, T* out, float* mean, float* rstd,
                                              const T* inp, const T* residual, const T* weight, const T* bias,
                                              float eps = layernorm_eps) {
  return launch(s, make_residual_layernorm_forward<N, C>(residual_out, out, mean, rstd, inp, residual, weight, bias, eps));
}
/// scratch: layernorm_backward_scratch_v<N, C> floats.
template <std::size_t N, std::size_t C, class T>
cudaError_t launch_layernorm_backward(cudaStream_t s, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                                      const T* weight, const float* mean, const float* rstd, float* scratch) {
  const auto k = make_layernorm_backward<N, C>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, scratch);
  if (const cudaError_t e = launch(s, k.rows); e != cudaSuccess) return e;
  return launch(s, k.columns);
}

}  // namespace weft::cuda::kernels
