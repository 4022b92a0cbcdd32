#pragma once
// ---- cuda_staging_copier: device buffers staged through host memory (comm/staging.hpp) ----
// staging_communicator<mpi_communicator, cuda_staging_copier> lets several processes share one
// GPU, where NCCL refuses two ranks on one device: each collective copies its device buffer to
// the host on the context's stream (so it follows every op queued before it), waits, runs the
// MPI operation, and copies the result back on the same stream (so every op queued after it
// sees it). Slow by construction (two PCIe copies and a stream sync per operation); it exists
// to run every multi-rank strategy on one lent GPU and compare it with the single-GPU run.
// The copies are cudaMemcpyDefault: an executor also reduces small host buffers (a step's loss
// and overflow flag) through the same communicator, and unified addressing tells the driver
// which side each pointer is on. (A DeviceToHost copy of a host buffer is cudaErrorInvalidValue:
// seen on an H200 on 2026-12-04, the first run of test_gpu_shared_dp.)
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
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream), "staging copy to the host");
    check(cudaStreamSynchronize(stream), "staging copy to the host");
  }
  void to_device(void* dst, const void* src, std::size_t n) const {
    if (n == 0) return;
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream), "staging copy to the device");
    check(cudaStreamSynchronize(stream), "staging copy to the device");  // the host buffer is reused next
  }
};
static_assert(staging_copier<cuda_staging_copier>);

}  // namespace weft::cuda
