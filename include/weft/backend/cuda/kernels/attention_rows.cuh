#pragma once
// ---- launchers of attention's row kernels (attention_rows.hpp) ----
#include "weft/backend/cuda/kernels/attention_rows.hpp"  // make_causal_softmax_rows, make_attention_dscores_rows
#include "weft/backend/cuda/kernels/launch.cuh"          // launch

namespace weft::cuda::kernels {

/// probs(rows, S) = causal softmax of the f32 scores(rows, S); row r is query position r % S.
template <std::size_t S, class T>
cudaError_t launch_causal_softmax_rows(cudaStream_t s, const float* scores, T* probs, std::size_t rows) {
  return launch(s, make_causal_softmax_rows<S>(scores, probs, rows));
}

/// dscores(rows, S) = probs ⊙ (dprobs - Σ probs·dprobs), causal.
template <std::size_t S, class T>
cudaError_t launch_attention_dscores_rows(cudaStream_t s, const float* dprobs, const T* probs, T* dscores,
                                          std::size_t rows) {
  return launch(s, make_attention_dscores_rows<S>(dprobs, probs, dscores, rows));
}

}  // namespace weft::cuda::kernels
