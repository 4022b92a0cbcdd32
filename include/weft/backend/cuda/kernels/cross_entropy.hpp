#pragma once
// ---- fused softmax + cross-entropy, forward and backward in place, padded vocabulary ----
// logits(N, Vp): rows padded from V to Vp columns (Vp a multiple of 64/128 makes the lm-head
// matmul and the vector width happy); columns >= V are ignored on input and written 0. One
// block per row, three phases over the row (read from global memory each time, a row of 50k
// does not fit in registers):
//   0: Σ-max over v < V                       1: Σ exp(z - max); thread 0 keeps z[target]
//   2: loss = max + log Σ - z[target]; dlogits = dloss (softmax - onehot), written in place
// A negative target ignores the row: loss 0, gradient 0. Losses are f32.
#include "weft/backend/cuda/kernels/grid.hpp"    // block_reduce_*, load_vec, store_vec, math
#include "weft/backend/cuda/kernels/tiling.hpp"  // row_tiling_for

#include <cstddef>
#include <cstdint>

namespace weft::cuda::kernels {

/// WriteGradient = false is the evaluation form: losses only, logits untouched.
template <std::size_t N, std::size_t V, std::size_t Vp, class T, bool WriteGradient = true>
struct cross_entropy_kernel {
  static constexpr bool padding_holds_vocabulary = V <= Vp;
  static_assert(padding_holds_vocabulary,
                "weft::cuda::kernels::cross_entropy: the padded vocabulary is smaller than the vocabulary. Give Vp >= V "
                "(V rounded up to a multiple of 64 or 128).");
  using tiling = row_tiling_for<T, Vp>;
  static constexpr unsigned threads = tiling::threads;
  static constexpr std::size_t W = tiling::width;

  float* losses;                // (N)
  T* logits;                    // (N, Vp) logits in, dlogits out
  const std::int32_t* targets;  // (N)
  float dloss;                  // gradient scale of every row (e.g. 1 / tokens)

  struct shared {
    block_reduce_storage<threads, float> mx, sum;
  };
  struct locals {
    float mx, target_logit;
  };
  static constexpr int phases = 3;
  launch_config config() const { return {{static_cast<unsigned>(N), 1, 1}, {threads, 1, 1}}; }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t row = c.block_rank(), t = c.thread_rank();
    T* z = logits + row * Vp;  // (Vp)
    const std::int32_t target = targets[row];
    if (p == 0) {
      float mx = -3.402823466e38f;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= V) continue;
        const auto x = load_vec<W>(z + col);
        for (std::size_t e = 0; e < W && col + e < V; ++e) mx = max_op{}(mx, to_f32(x.v[e]));
      }
      block_reduce_put(c, s.mx, mx, max_op{});
    } else if (p == 1) {
      l.mx = block_reduce_get(c, s.mx, max_op{});
      float sum = 0;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= V) continue;
        const auto x = load_vec<W>(z + col);
        for (std::size_t e = 0; e < W && col + e < V; ++e) sum += math::exp(to_f32(x.v[e]) - l.mx);
      }
      block_reduce_put(c, s.sum, sum, sum_op{});
      if (t == 0 && target >= 0) l.target_logit = to_f32(z[target]);  // read before phase 2 overwrites
    } else {
      const float sum = block_reduce_get(c, s.sum, sum_op{});
      const bool ignore = target < 0;
      if (t == 0) losses[row] = ignore ? 0.0f : l.mx + math::log(sum) - l.target_logit;
      if constexpr (!WriteGradient) return;
      const float scale = ignore ? 0.0f : dloss / sum;
      for (std::size_t it = 0; it < tiling::iters; ++it) {
        const std::size_t col = tiling::column(t, it);
        if (col >= Vp) continue;
        auto x = load_vec<W>(z + col);
        for (std::size_t e = 0; e < W; ++e) {
          const std::size_t v = col + e;
          float g = 0;
          if (v < V && !ignore) g = math::exp(to_f32(x.v[e]) - l.mx) * scale - (std::int32_t(v) == target ? dloss : 0.0f);
          x.v[e] = from_f32<T>(g);
        }
        store_vec<W>(z + col, x);
      }
    }
  }
};

/// losses(N) = cross-entropy of logits(N, Vp)[:, :V]; logits overwritten with dloss (softmax -
/// onehot), padded columns 0.
template <std::size_t N, std::size_t V, std::size_t Vp, class T>
cross_entropy_kernel<N, V, Vp, T> make_softmax_cross_entropy_forward_backward(float* losses, T* logits,
                                                                             const std::int32_t* targets,
                                                                             float dloss) {
  return {losses, logits, targets, dloss};
}

/// Evaluation form: losses(N) only; logits(N, Vp) are read, not written.
template <std::size_t N, std::size_t V, std::size_t Vp, class T>
cross_entropy_kernel<N, V, Vp, T, false> make_softmax_cross_entropy_forward(float* losses, const T* logits,
                                                                            const std::int32_t* targets) {
  return {losses, const_cast<T*>(logits), targets, 0.0f};  // never written: WriteGradient is false
}

}  // namespace weft::cuda::kernels
