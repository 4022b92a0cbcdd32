#pragma once
// ---- launchers of the memory kernels (memory.hpp): stream, pointers, counts ----
#include "weft/backend/cuda/kernels/launch.cuh"  // launch
#include "weft/backend/cuda/kernels/memory.hpp"  // make_cast, make_fill, make_zero, make_copy, make_accumulate, make_scale, make_clip

namespace weft::cuda::kernels {

/// dst(n) = src(n) converted.
template <class Dst, class Src>
cudaError_t launch_cast(cudaStream_t s, Dst* dst, const Src* src, std::size_t n) {
  return launch(s, make_cast(dst, src, n));
}
/// x(n) = value.
template <class T>
cudaError_t launch_fill(cudaStream_t s, T* x, std::size_t n, T value) {
  return launch(s, make_fill(x, n, value));
}
/// x(n) = 0.
template <class T>
cudaError_t launch_zero(cudaStream_t s, T* x, std::size_t n) {
  return launch(s, make_zero(x, n));
}
/// dst(n) = src(n).
template <class T>
cudaError_t launch_copy(cudaStream_t s, T* dst, const T* src, std::size_t n) {
  return launch(s, make_copy(dst, src, n));
}
/// y(n) += alpha x(n).
template <class T>
cudaError_t launch_accumulate(cudaStream_t s, T* y, const T* x, std::size_t n, float alpha = 1.0f) {
  return launch(s, make_accumulate(y, x, n, alpha));
}
/// x(n) *= factor.
template <class T>
cudaError_t launch_scale(cudaStream_t s, T* x, std::size_t n, float factor) {
  return launch(s, make_scale(x, n, factor));
}
/// g(n) *= max_norm / sqrt(*sum_sq) when that exceeds max_norm > 0 (sum_sq on the device).
template <class T>
cudaError_t launch_clip(cudaStream_t s, T* g, std::size_t n, const double* sum_sq, double max_norm) {
  return launch(s, make_clip(g, n, sum_sq, max_norm));
}

}  // namespace weft::cuda::kernels
