#pragma once
// ---- learned positional embedding: adds row `s` of a (context, width) table at position s ----
#include "weft/core/diagnostics.hpp"  // diag::at_most
#include "weft/core/shape.hpp"        // shape, axis
#include "weft/model/layer.hpp"       // leaf_layer, frame
#include "weft/ops/accumulate.hpp"    // accumulate
#include "weft/ops/copy.hpp"          // copy
#include "weft/ops/embedding.hpp"     // positional_forward/backward

#include <algorithm>
#include <cstddef>

namespace weft {

/// out = in + table[position]; GPT-2's `wpe`. `Context` is the longest sequence it supports.
template <std::size_t Context, std::size_t C>
struct positional_embedding
    : leaf_layer<param_list<param<"weight", shape<axis<"context", Context>, axis<"width", C>>, role::replicated,
                                  init::normal<20>>>> {
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr bool fits = diag::at_most<F::seq, Context>;
    static_assert(fits, "weft::positional_embedding: the sequence is longer than the context. Raise context<N> or shorten seq<N>.");
    const auto y = view<F::rows, C>(f, out);
    if (out != in) ops::copy(f.ctx, y, view<F::rows, C>(f, in));
    // (batch, seq, width) += (seq, width): the first seq rows of the (context, width) table
    ops::positional_forward<F::batch, F::seq, C>(f.ctx, y, view<F::seq, C>(f, f.params));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type* din) {
    const auto dy = view<F::rows, C>(f, dout);
    if (f.grads) ops::positional_backward<F::batch, F::seq, C>(f.ctx, view<F::seq, C>(f, f.grads), dy);
    ops::accumulate(f.ctx, view<F::rows, C>(f, din), dy);  // the path around the addition
  }
};

}  // namespace weft
