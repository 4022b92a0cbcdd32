#pragma once
// ---- affine map of the width axis: out = in · Wᵀ + b ----
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"   // shape, axis
#include "weft/model/layer.hpp"  // leaf_layer, frame
#include "weft/ops/matmul.hpp"   // matmul_forward/backward

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

namespace weft {

/// How the out axis of a fused weight packs separate projections: segment widths, in order
/// (attention's c_attn is packed<q, k, v>, SwiGLU's gate_up packed<gate, up>). Tensor
/// parallelism cuts each segment separately, so rank r holds [q_r | k_r | v_r].
/// packed<> is one segment, the whole axis.
template <std::size_t... Widths>
struct packed {
  static constexpr std::size_t count = sizeof...(Widths);
  static constexpr std::size_t total = (std::size_t{0} + ... + Widths);
  static constexpr std::array<std::size_t, sizeof...(Widths)> widths{Widths...};
  using weft_packed_tag = void;
};

namespace detail {
template <std::size_t Out, class Packing>
inline constexpr bool packing_fits = (Packing::count == 0 || Packing::total == Out);

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
/// `Export` = transposed writes it as (in, out) in checkpoints (Hugging Face GPT-2's Conv1D);
/// `Packing` = packed<...> names the segments of a fused out axis (see packed).
template <std::size_t In, std::size_t Out, role Role = role::replicated, bool Bias = true, class Init = init::normal<20>,
          export_layout Export = export_layout::as_is, class Packing = packed<>>
struct linear : leaf_layer<detail::linear_params<In, Out, Role, Bias, Init, Export>> {
  static constexpr bool widths_positive = diag::at_least<In, 1> && diag::at_least<Out, 1>;
  static_assert(widths_positive, "weft::linear: the in or out width is 0. Give linear<In, Out> widths of at least 1.");
  static constexpr bool packing_fits = detail::packing_fits<Out, Packing>;
  static_assert(packing_fits, "weft::linear: the packed<> segment widths do not add up to the out width. Make them sum to Out.");
  using packing = Packing;
  static constexpr std::size_t in_width = In;
  static constexpr std::size_t out_width = Out;

  /// As leaf_layer's, plus the packed segments of the weight and bias (for tensor-parallel shard maps).
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    leaf_layer<detail::linear_params<In, Out, Role, Bias, Init, Export>>::visit_params(
        prefix, base, ic, [&](param_info i) {
          i.segments.assign(Packing::widths.begin(), Packing::widths.end());
          f(i);
        });
  }
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;  // backward needs only the input
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    const auto y = view<F::rows, Out>(f, out);
    const auto x = view<F::rows, In>(f, in);
    const auto w = linear_weight<In, Out>(f, f.params);  // (In, Out) view of the (Out, In) weight
    if constexpr (Bias)
      ops::matmul_forward<F::rows, In, Out>(f.ctx, y, x, w, view<Out>(f, f.params + In * Out));
    else
      ops::matmul_forward<F::rows, In, Out>(f.ctx, y, x, w, ops::none);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    const auto dx = view<F::rows, In>(f, din);  // a null din: the input needs no gradient
    const auto dw = linear_weight<In, Out>(f, f.grads);
    const auto dy = view<F::rows, Out>(f, dout);
    const auto x = view<F::rows, In>(f, in);
    const auto w = linear_weight<In, Out>(f, f.params);
    if constexpr (Bias)
      ops::matmul_backward<F::rows, In, Out>(f.ctx, dx, dw, view<Out>(f, f.grads ? f.grads + In * Out : nullptr), dy, x, w);
    else
      ops::matmul_backward<F::rows, In, Out>(f.ctx, dx, dw, ops::none, dy, x, w);
  }
};

}  // namespace weft
