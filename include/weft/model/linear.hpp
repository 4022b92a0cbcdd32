#pragma once
// ---- affine map of the width axis: out = in · Wᵀ + b ----
#include "weft/core/shape.hpp"   // shape, axis
#include "weft/model/layer.hpp"  // leaf_layer, frame
#include "weft/ops/matmul.hpp"   // matmul_forward/backward

#include <cstddef>
#include <type_traits>

namespace weft {

namespace detail {
template <std::size_t In, std::size_t Out, role Role, class Init, export_layout Export>
using linear_weight = param<"weight", shape<axis<"out", Out>, axis<"in", In>>, Role, Init, Export>;
// Megatron: a column-parallel layer splits its bias with its outputs; a row-parallel one keeps
// the bias whole (added once after the reduction).
template <std::size_t Out, role Role>
using linear_bias = param<"bias", shape<axis<"out", Out>>, (Role == role::column ? role::column : role::replicated),
                          init::zeros>;
template <std::size_t In, std::size_t Out, role Role, bool Bias, class Init, export_layout Export>
using linear_params =
    std::conditional_t<Bias, param_list<linear_weight<In, Out, Role, Init, Export>, linear_bias<Out, Role>>,
                       param_list<linear_weight<In, Out, Role, Init, Export>>>;
}  // namespace detail

/// A (out, in) weight, like torch.nn.Linear, optionally a bias. `Role` is its tensor-parallel cut;
/// `Export` = transposed writes it as (in, out) in checkpoints (Hugging Face GPT-2's Conv1D).
template <std::size_t In, std::size_t Out, role Role = role::replicated, bool Bias = true, class Init = init::normal<20>,
          export_layout Export = export_layout::as_is>
struct linear : leaf_layer<detail::linear_params<In, Out, Role, Bias, Init, Export>> {
  static constexpr std::size_t in_width = In;
  static constexpr std::size_t out_width = Out;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;  // backward needs only the input
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    ops::matmul_forward<F::rows, In, Out>(out, in, f.params, Bias ? f.params + In * Out : nullptr);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::matmul_backward<F::rows, In, Out>(din, f.grads, (Bias && f.grads) ? f.grads + In * Out : nullptr, dout, in,
                                           f.params);
  }
};

}  // namespace weft
