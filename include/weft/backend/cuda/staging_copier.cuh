#pragma once
// ---- cuda_staging_copier: device buffers staged through host memory (comm/staging.hpp) ----
// staging_communicator<mpi_communicator, cuda_staging_copier> lets several processes share one
// GPU, where NCCL refuses two ranks on one device: each collective copies its device buffer to
// the host on the context's stream (so it follows every op queued before it), waits, runs the
// MPI operation, and copies the result back on the same stream (so every op queued after it
// sees it). Slow by construction (two PCIe copies and a stream sync per operation); it exists
// to run every multi-rank strategy on one lent GPU and compare it with the single-GPU run.
#include "weft/backend/cuda/context.cuh"  // cuda_context, check
#include "weft/comm/staging.hpp"          // staging_copier

#include <cuda_runtime.h>

#include <cstddef>

namespace weft::cuda {

/// See the top of the file.
struct cuda_staging_copier {
  cudaStream_t stream = nullptr;

  void to_host(void* dst, const void* src, std::size_t n) const {
    if (n == 0) return;
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream), "staging copy to the host");
    check(cudaStreamSynchronize(stream), "staging copy to the host");
  }
  void to_device(void* dst, const void* src, std::size_t n) const {
    if (n == 0) return;
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream), "staging copy to the device");
    check(cudaStreamSynchronize(stream), "staging copy to the device");  // the host buffer is reused next
  }
};
static_assert(staging_copier<cuda_staging_copier>);

}  // namespace weft::cuda
