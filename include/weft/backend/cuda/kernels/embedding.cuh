#pragma once
// ---- launchers of the embeddings (embedding.hpp) ----
#include "weft/backend/cuda/kernels/embedding.hpp"  // make_embedding_*, make_positional_backward
#include "weft/backend/cuda/kernels/launch.cuh"     // launch

namespace weft::cuda::kernels {

/// out(B*S, C) = wte[idx] (+ wpe[s] when wpe is not null).
template <std::size_t B, std::size_t S, std::size_t V, std::size_t C, class T>
cudaError_t launch_embedding_forward(cudaStream_t s, T* out, const std::int32_t* idx, const T* wte, const T* wpe) {
  return launch(s, make_embedding_forward<B, S, V, C>(out, idx, wte, wpe));
}
/// dtable(V, C) += scatter of dout by idx, deterministic, no atomics; scratch:
/// embedding_backward_scratch_v<N, V, C> floats. Launches the sort, its merge passes, the pieces
/// and the combine kernel in stream order.
template <std::size_t N, std::size_t V, std::size_t C, class T>
cudaError_t launch_embedding_backward(cudaStream_t s, T* dtable, const T* dout, const std::int32_t* idx,
                                      float* scratch) {
  return make_embedding_backward<N, V, C>(dtable, dout, idx, scratch).run([&](const auto& k) { return launch(s, k); });
}
/// dwpe(S, C) += Σ_b dout(B, S, C)[b].
template <std::size_t B, std::size_t S, std::size_t C, class T>
cudaError_t launch_positional_backward(cudaStream_t s, T* dwpe, const T* dout) {
  return launch(s, make_positional_backward<B, S, C>(dwpe, dout));
}

}  // namespace weft::cuda::kernels
