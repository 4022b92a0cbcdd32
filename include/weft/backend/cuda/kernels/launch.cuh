#pragma once
// ---- the one `__global__` behind every phased kernel, and its launcher ----
// A phased kernel (grid.hpp) is a struct of pointers and integers; this wrapper runs its phases
// back to back with a barrier between them. Template arguments are kernel structs templated on
// integers and element types only: nvcc 13 rejects a `__global__` template argument holding a
// class with an array member (fixed_string, so any shape), so names never reach here.
#include "weft/backend/cuda/kernels/grid.hpp"  // phased_kernel, block_context, launch_config

#include <cuda_runtime.h>

namespace weft::cuda::kernels {

/// The most threads a launch of K uses: K::threads where the kernel declares it, else CUDA's
/// 1024. It is the kernel's launch bound, so the compiler keeps registers per thread within what
/// a block of that size can have (a 1024-thread block gets at most 64; without the bound a
/// register-hungry body compiles to more, and the launch fails with "too many resources").
template <class K>
constexpr unsigned max_threads_v = [] {
  if constexpr (requires { K::threads; }) return static_cast<unsigned>(K::threads);
  else return 1024u;
}();

/// Runs K's phases for this thread, __syncthreads() between them.
template <class K>
__global__ void __launch_bounds__(max_threads_v<K>) run_phases(K k) {
  __shared__ typename K::shared sh;
  typename K::locals loc{};
  const block_context c = block_context::current();
#pragma unroll 1
  for (int p = 0; p < K::phases; ++p) {
    k.phase(p, c, sh, loc);
    if (p + 1 < K::phases) {
      if (warp_barrier_after<K>(p)) __syncwarp();
      else __syncthreads();
    }
  }
}

/// Launches `k` on `stream` over `cfg`; returns the launch error (cudaSuccess when queued).
template <phased_kernel K>
cudaError_t launch(cudaStream_t stream, launch_config cfg, const K& k) {
  if (cfg.grid.count() == 0) return cudaSuccess;
  if (cfg.block.count() > max_threads_v<K>) return cudaErrorInvalidConfiguration;  // over the launch bound
  run_phases<K><<<dim3(cfg.grid.x, cfg.grid.y, cfg.grid.z), dim3(cfg.block.x, cfg.block.y, cfg.block.z), 0, stream>>>(k);
  return cudaGetLastError();
}

/// Launches `k` over its own config().
template <phased_kernel K>
cudaError_t launch(cudaStream_t stream, const K& k) {
  return launch(stream, k.config(), k);
}

}  // namespace weft::cuda::kernels
