#pragma once
// ---- launchers of attention's row kernels (attention_rows.hpp) ----
#include "weft/backend/cuda/kernels/attention_rows.hpp"  // make_causal_softmax_rows, make_attention_dscores_rows
#include "weft/backend/cuda/kernels/launch.cuh"          // launch

namespace weft::cuda::kernels {

/// probs(rows, S) = causal softmax of the f32 scores(rows, S); row r is query position r % S;
/// W > 0: a sliding window of W keys.
template <std::size_t S, std::size_t W = 0, class T>
cudaError_t launch_causal_softmax_rows(cudaStream_t s, const float* scores, T* probs, std::size_t rows) {
  return launch(s, make_causal_softmax_rows<S, W>(scores, probs, rows));
}

/// dscores(rows, S) = probs ⊙ (dprobs - Σ probs·dprobs), causal (and windowed when W > 0).
template <std::size_t S, std::size_t W = 0, class T>
cudaError_t launch_attention_dscores_rows(cudaStream_t s, const float* dprobs, const T* probs, T* dscores,
                                          std::size_t rows) {
  return launch(s, make_attention_dscores_rows<S, W>(dprobs, probs, dscores, rows));
}

}  // namespace weft::cuda::kernels
