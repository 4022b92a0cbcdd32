#pragma once
// ---- launchers of GELU, SwiGLU and residual (elementwise.hpp) ----
#include "weft/backend/cuda/kernels/elementwise.hpp"  // make_gelu_*, make_swiglu_*, make_geglu_*, make_residual_*
#include "weft/backend/cuda/kernels/launch.cuh"       // launch

namespace weft::cuda::kernels {

template <std::size_t N, gelu_form Form = gelu_form::tanh, class T>
cudaError_t launch_gelu_forward(cudaStream_t s, T* out, const T* inp) {
  return launch(s, make_gelu_forward<N, Form>(out, inp));
}
template <std::size_t N, gelu_form Form = gelu_form::tanh, class T>
cudaError_t launch_gelu_backward(cudaStream_t s, T* dinp, const T* inp, const T* dout) {
  return launch(s, make_gelu_backward<N, Form>(dinp, inp, dout));
}
template <std::size_t N, std::size_t H, class T>
cudaError_t launch_swiglu_forward(cudaStream_t s, T* out, const T* inp) {
  return launch(s, make_swiglu_forward<N, H>(out, inp));
}
template <std::size_t N, std::size_t H, class T>
cudaError_t launch_swiglu_backward(cudaStream_t s, T* dinp, const T* inp, const T* dout) {
  return launch(s, make_swiglu_backward<N, H>(dinp, inp, dout));
}
template <std::size_t N, std::size_t H, class T>
cudaError_t launch_geglu_forward(cudaStream_t s, T* out, const T* inp) {
  return launch(s, make_geglu_forward<N, H>(out, inp));
}
template <std::size_t N, std::size_t H, class T>
cudaError_t launch_geglu_backward(cudaStream_t s, T* dinp, const T* inp, const T* dout) {
  return launch(s, make_geglu_backward<N, H>(dinp, inp, dout));
}
template <std::size_t N, class T>
cudaError_t launch_residual_forward(cudaStream_t s, T* out, const T* a, const T* b) {
  return launch(s, make_residual_forward<N>(out, a, b));
}
template <std::size_t N, class T>
cudaError_t launch_residual_backward(cudaStream_t s, T* da, T* db, const T* dout) {
  return launch(s, make_residual_backward<N>(da, db, dout));
}

}  // namespace weft::cuda::kernels
