#pragma once
// ---- launchers of the tensor-core flash attention (flash_attention.hpp) ----
#include "weft/backend/cuda/kernels/flash_attention.hpp"  // make_mma_attention_forward/backward
#include "weft/backend/cuda/kernels/launch.cuh"           // launch

namespace weft::cuda::kernels {

/// out(B, S, H*D) = causal attention of qkv (B, S, (H + 2 KVH) D) on tensor cores, with a sliding
/// window of W keys when W > 0; lse(B, H, S) f32.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
cudaError_t launch_mma_attention_forward(cudaStream_t s, T* out, float* lse, const T* qkv) {
  return launch(s, make_mma_attention_forward<B, S, H, KVH, D, W>(out, lse, qkv));
}

/// dqkv += the attention gradient on tensor cores (delta, then dq and dk/dv; no atomics).
/// `delta` is a (B, H, S) f32 work buffer.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
cudaError_t launch_mma_attention_backward(cudaStream_t s, T* dqkv, float* delta, const T* dout, const T* qkv,
                                          const T* out, const float* lse) {
  const auto k = make_mma_attention_backward<B, S, H, KVH, D, W>(dqkv, delta, dout, qkv, out, lse);
  if (const cudaError_t e = launch(s, k.delta); e != cudaSuccess) return e;
  if (const cudaError_t e = launch(s, k.dq); e != cudaSuccess) return e;
  return launch(s, k.dkv);
}

}  // namespace weft::cuda::kernels
