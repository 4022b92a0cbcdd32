#pragma once
// ---- launcher of the fused AdamW (adamw.hpp) ----
#include "weft/backend/cuda/kernels/adamw.hpp"   // make_adamw, adamw_hyper
#include "weft/backend/cuda/kernels/launch.cuh"  // launch

namespace weft::cuda::kernels {

/// One AdamW step over n parameters; param_out (P, e.g. bf16) may be null.
template <class G, class P = float>
cudaError_t launch_adamw(cudaStream_t s, float* master, const G* grad, float* m, float* v, P* param_out,
                         std::size_t n, adamw_hyper h) {
  return launch(s, make_adamw<G, P>(master, grad, m, v, param_out, n, h));
}

}  // namespace weft::cuda::kernels
