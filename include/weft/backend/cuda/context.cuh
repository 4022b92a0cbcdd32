#pragma once
// ---- cuda_context: the execution context of the CUDA backend ----
// A small copyable value that travels in every frame (model/layer.hpp) like host_context: the
// stream every op is queued on, the cuBLASLt handle of the matrix products, a device scratch the
// ops borrow from (reduction partials, the norms' and the bias gradient's partials) and
// cuBLASLt's workspace. Ops on one context run in stream order, so one scratch serves them all.
// The context owns nothing: `cuda_resources` below (or the caller) creates and destroys the
// stream, the handle and the workspace; copies of a context share them.
//
// Ops that return a value to the host (sum_squares, mean_loss, the norm behind clip) copy one
// double back and synchronise the stream: an executor's scalar decisions (clip, skip, log)
// happen on the host, as on the host backend.
#include "weft/exec/context.hpp"   // execution_context
#include "weft/exec/memory.hpp"    // context_with_memory
#include "weft/tensor/space.hpp"   // device_space

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace weft::cuda {

/// A failed CUDA or cuBLASLt call: one line naming the op and the error.
struct cuda_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws cuda_error naming `what` when `e` is not cudaSuccess.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw cuda_error(std::string("weft::cuda: ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
/// Throws cuda_error naming `what` when `s` is not CUBLAS_STATUS_SUCCESS.
inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw cuda_error(std::string("weft::cuda: ") + what + ": cuBLASLt status " + std::to_string(static_cast<int>(s)));
}

/// The CUDA backend's execution context (see the top of the file).
struct cuda_context {
  using memory_space = device_space;  ///< the buffers given to its ops are device memory
  cudaStream_t stream = nullptr;      ///< every op is queued here
  cublasLtHandle_t blas = nullptr;    ///< matrix products
  void* scratch = nullptr;            ///< device scratch the ops borrow (stream-ordered)
  std::size_t scratch_bytes = 0;
  void* blas_workspace = nullptr;     ///< cuBLASLt's workspace
  std::size_t blas_workspace_bytes = 0;
  double* host_result = nullptr;      ///< pinned host double for results read back (may be null)

  /// `count` U's of the scratch at `offset_bytes` (rounded up to 256); throws when they do not fit.
  template <class U>
  U* borrow(std::size_t count, std::size_t offset_bytes = 0, const char* who = "op") const {
    const std::size_t at = (offset_bytes + 255) / 256 * 256;
    if (at + count * sizeof(U) > scratch_bytes)
      throw cuda_error(std::string("weft::cuda: ") + who + " needs " + std::to_string(at + count * sizeof(U)) +
                       " bytes of scratch, the context has " + std::to_string(scratch_bytes) +
                       ". Give cuda_resources more scratch.");
    return reinterpret_cast<U*>(static_cast<char*>(scratch) + at);
  }
};
static_assert(execution_context<cuda_context>);

/// Owns what a cuda_context points to: a stream, a cuBLASLt handle, the ops' scratch, cuBLASLt's
/// workspace and a pinned result slot. Creating one needs a device; the error names the call
/// that failed.
class cuda_resources {
 public:
  static constexpr std::size_t default_scratch_bytes = std::size_t{32} << 20;
  static constexpr std::size_t default_blas_workspace_bytes = std::size_t{32} << 20;

  explicit cuda_resources(std::size_t scratch_bytes = default_scratch_bytes,
                          std::size_t blas_workspace_bytes = default_blas_workspace_bytes) {
    try {
      check(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cublasLtCreate(&ctx_.blas), "cublasLtCreate");
      check(cudaMalloc(&ctx_.scratch, scratch_bytes), "cudaMalloc(scratch)");
      ctx_.scratch_bytes = scratch_bytes;
      check(cudaMalloc(&ctx_.blas_workspace, blas_workspace_bytes), "cudaMalloc(cuBLASLt workspace)");
      ctx_.blas_workspace_bytes = blas_workspace_bytes;
      check(cudaMallocHost(reinterpret_cast<void**>(&ctx_.host_result), sizeof(double)), "cudaMallocHost");
    } catch (...) {
      release();
      throw;
    }
  }
  cuda_resources(const cuda_resources&) = delete;
  cuda_resources& operator=(const cuda_resources&) = delete;
  ~cuda_resources() { release(); }

  const cuda_context& context() const { return ctx_; }
  /// Waits for every op queued so far.
  void synchronize() const { check(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize"); }

 private:
  void release() noexcept {
    if (ctx_.host_result) cudaFreeHost(ctx_.host_result);
    if (ctx_.blas_workspace) cudaFree(ctx_.blas_workspace);
    if (ctx_.scratch) cudaFree(ctx_.scratch);
    if (ctx_.blas) cublasLtDestroy(ctx_.blas);
    if (ctx_.stream) cudaStreamDestroy(ctx_.stream);
    ctx_ = {};
  }
  cuda_context ctx_{};
};

// ---- the memory hooks of exec/memory.hpp: the arena in device memory ----
// A plan larger than the device's free memory is one line before anything runs.
inline void* context_allocate(const cuda_context& c, std::size_t bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (bytes > free_bytes)
    throw cuda_error("weft::cuda: the plan's arena needs " + std::to_string(bytes >> 20) + " MiB of device memory; " +
                     std::to_string(free_bytes >> 20) + " of " + std::to_string(total_bytes >> 20) +
                     " MiB are free. Shrink the micro-batch, the sequence or the model, or shard it (zero<>, "
                     "tensor_parallel, pipeline).");
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc(arena)");
  check(cudaMemsetAsync(p, 0, bytes, c.stream), "cudaMemset(arena)");
  check(cudaStreamSynchronize(c.stream), "cudaMemset(arena)");
  return p;
}
inline void context_release(const cuda_context&, void* p, std::size_t) noexcept { cudaFree(p); }
inline void copy_to_context(const cuda_context& c, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c.stream), "copy to the device");
  check(cudaStreamSynchronize(c.stream), "copy to the device");  // the host buffer may change next
}
inline void copy_from_context(const cuda_context& c, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c.stream), "copy to the host");
  check(cudaStreamSynchronize(c.stream), "copy to the host");
}

/// Whether a CUDA device can be used here (false, quietly, where the driver reports none).
inline bool device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static_assert(context_with_memory<cuda_context>);

}  // namespace weft::cuda
