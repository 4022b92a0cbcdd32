#pragma once
// ---- launchers of the rotary embedding (rope.hpp) ----
#include "weft/backend/cuda/kernels/launch.cuh"  // launch
#include "weft/backend/cuda/kernels/rope.hpp"    // make_rope_*

namespace weft::cuda::kernels {

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling, class T>
cudaError_t launch_rope_forward(cudaStream_t s, T* qkv_out, const T* qkv_in) {
  return launch(s, make_rope_forward<B, S, H, KVH, D, Base, R, Scaling>(qkv_out, qkv_in));
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling, class T>
cudaError_t launch_rope_backward(cudaStream_t s, T* dqkv_in, const T* dqkv_out) {
  return launch(s, make_rope_backward<B, S, H, KVH, D, Base, R, Scaling>(dqkv_in, dqkv_out));
}

}  // namespace weft::cuda::kernels
