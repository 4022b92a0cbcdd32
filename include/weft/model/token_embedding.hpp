#pragma once
// ---- token embedding: ids -> rows of a (vocab, width) table ----
#include "weft/core/shape.hpp"     // shape, axis
#include "weft/model/layer.hpp"    // leaf_layer, frame
#include "weft/ops/embedding.hpp"  // embedding_forward/backward

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace weft {

/// Looks up each token id in a (vocab, width) table. Vocabulary-parallel under tensor parallelism.
/// A frame's padding_token (training_step::set_padding_token) gets no gradient from its lookups.
template <std::size_t V, std::size_t C>
struct token_embedding
    : leaf_layer<param_list<param<"weight", shape<axis<"vocab", V>, axis<"width", C>>, role::vocab, init::normal<20>>>> {
  static constexpr std::size_t vocab_size = V;
  static constexpr std::size_t in_width = 0;  // token ids, not activations
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* /*in*/, typename F::value_type* out) {
    ops::embedding_forward<F::rows, V, C>(f.ctx, view<F::rows, C>(f, out), view<F::rows>(f, f.tokens),
                                          view<V, C>(f, f.params));  // (batch, seq, width)
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type* /*din*/) {
    if (!f.grads) return;
    if (f.padding_token < 0) {
      ops::embedding_backward<F::rows, V, C>(f.ctx, view<V, C>(f, f.grads), view<F::rows, C>(f, dout),
                                             view<F::rows>(f, f.tokens));
    } else if constexpr (host_execution_context<typename F::context_type>) {
      // torch's padding_idx: the lookups of the padding token add nothing to its row (a tied
      // head still adds its own gradient to it)
      using T = typename F::value_type;
      for (std::size_t r = 0; r < F::rows; ++r) {
        const std::int32_t t = f.tokens[r];
        if (t == f.padding_token) continue;
        T* g = f.grads + static_cast<std::size_t>(t) * C;
        const T* d = dout + r * C;
        for (std::size_t c = 0; c < C; ++c) g[c] = T(ops::compute_t<T>(g[c]) + ops::compute_t<T>(d[c]));
      }
    } else {
      throw std::logic_error("weft::token_embedding: a padding token (training_step::set_padding_token) is supported on "
                             "the host only");
    }
  }
};

}  // namespace weft
