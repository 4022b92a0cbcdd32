#pragma once
// ---- multiply every row by sqrt(width): Gemma's scaled embedding ----
// Gemma multiplies its token embeddings by sqrt(width), the factor rounded to the model's element
// type first (Hugging Face: torch.tensor(hidden_size ** 0.5, dtype=hidden.dtype)). A stateless
// layer of width C, placed after the token embedding; elementwise, so replicated under tensor
// parallelism (on the sequence slice under sequence parallelism).
#include "weft/model/layer.hpp"   // stateless_layer, frame
#include "weft/ops/accumulate.hpp"  // accumulate
#include "weft/ops/copy.hpp"        // copy
#include "weft/ops/scale.hpp"       // scale

#include <cmath>
#include <cstddef>

namespace weft {

/// rows (width C) -> rows times sqrt(C), the factor rounded to the element type.
template <std::size_t C>
struct embedding_scale : stateless_layer {
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  /// sqrt(C) as the element type T holds it.
  template <class T>
  static T factor() {
    return static_cast<T>(std::sqrt(static_cast<double>(C)));
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    using T = typename F::value_type;
    ops::copy(f.ctx, view<F::rows, C>(f, out), view<F::rows, C>(f, in));
    ops::scale(f.ctx, out, F::rows * C, static_cast<double>(factor<T>()));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type*, const typename F::value_type* dout,
                       typename F::value_type* din) {
    using T = typename F::value_type;
    ops::accumulate(f.ctx, din, dout, F::rows * C, factor<T>());
  }
};

}  // namespace weft
