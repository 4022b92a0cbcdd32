#pragma once
// ---- gated activations: (rows, [gate | up]) -> (rows, act(gate) * up) ----
// swiglu<H> (LLaMA: silu) and geglu<H> (Gemma: GPT-2's tanh GELU) are one layer template,
// gated_unit<H, Kind>, so that tensor parallelism, the plan's counts and the structure text
// treat them alike.
#include "weft/model/layer.hpp"  // stateless_layer, frame
#include "weft/ops/geglu.hpp"    // geglu_forward/backward
#include "weft/ops/swiglu.hpp"   // swiglu_forward/backward

#include <cstddef>

namespace weft {

/// The activation of a gated unit.
enum class gate_kind { silu, gelu_tanh };

/// Takes rows of width 2H (gate then up), gives rows of width H: act(gate) * up.
template <std::size_t H, gate_kind Kind>
struct gated_unit : stateless_layer {
  static constexpr std::size_t in_width = 2 * H;
  static constexpr std::size_t out_width = H;
  static constexpr gate_kind kind = Kind;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    if constexpr (Kind == gate_kind::silu)
      ops::swiglu_forward<F::rows, H>(f.ctx, view<F::rows, H>(f, out), view<F::rows, 2 * H>(f, in));
    else ops::geglu_forward<F::rows, H>(f.ctx, view<F::rows, H>(f, out), view<F::rows, 2 * H>(f, in));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    if constexpr (Kind == gate_kind::silu)
      ops::swiglu_backward<F::rows, H>(f.ctx, view<F::rows, 2 * H>(f, din), view<F::rows, 2 * H>(f, in),
                                       view<F::rows, H>(f, dout));
    else
      ops::geglu_backward<F::rows, H>(f.ctx, view<F::rows, 2 * H>(f, din), view<F::rows, 2 * H>(f, in),
                                      view<F::rows, H>(f, dout));
  }
};

/// SwiGLU (LLaMA): silu(gate) * up.
template <std::size_t H>
using swiglu = gated_unit<H, gate_kind::silu>;
/// GeGLU (Gemma): gelu(gate) * up, GPT-2's tanh GELU.
template <std::size_t H>
using geglu = gated_unit<H, gate_kind::gelu_tanh>;

}  // namespace weft
