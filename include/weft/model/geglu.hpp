#pragma once
// ---- GeGLU gate: (rows, [gate | up]) -> (rows, gelu(gate) * up) ----
#include "weft/model/layer.hpp"  // stateless_layer, frame
#include "weft/ops/geglu.hpp"    // geglu_forward/backward

#include <cstddef>

namespace weft {

/// Takes rows of width 2H (gate then up), gives rows of width H: gelu(gate) * up (Gemma). As
/// swiglu<H>, but with GPT-2's tanh GELU in place of SiLU.
template <std::size_t H>
struct geglu : stateless_layer {
  static constexpr std::size_t in_width = 2 * H;
  static constexpr std::size_t out_width = H;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    ops::geglu_forward<F::rows, H>(f.ctx, view<F::rows, H>(f, out), view<F::rows, 2 * H>(f, in));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::geglu_backward<F::rows, H>(f.ctx, view<F::rows, 2 * H>(f, din), view<F::rows, 2 * H>(f, in),
                                    view<F::rows, H>(f, dout));
  }
};

}  // namespace weft
