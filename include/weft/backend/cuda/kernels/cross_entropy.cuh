#pragma once
// ---- launcher of the fused softmax + cross-entropy (cross_entropy.hpp) ----
#include "weft/backend/cuda/kernels/cross_entropy.hpp"  // make_softmax_cross_entropy_forward_backward
#include "weft/backend/cuda/kernels/launch.cuh"         // launch

namespace weft::cuda::kernels {

/// losses(N) f32; logits(N, Vp) overwritten with their gradient (padding columns 0).
template <std::size_t N, std::size_t V, std::size_t Vp, class T>
cudaError_t launch_softmax_cross_entropy_forward_backward(cudaStream_t s, float* losses, T* logits,
                                                          const std::int32_t* targets, float dloss) {
  return launch(s, make_softmax_cross_entropy_forward_backward<N, V, Vp>(losses, logits, targets, dloss));
}

/// Evaluation form: losses(N) only.
template <std::size_t N, std::size_t V, std::size_t Vp, class T>
cudaError_t launch_softmax_cross_entropy_forward(cudaStream_t s, float* losses, const T* logits,
                                                 const std::int32_t* targets) {
  return launch(s, make_softmax_cross_entropy_forward<N, V, Vp>(losses, logits, targets));
}

}  // namespace weft::cuda::kernels
