#pragma once
// ---- the layer contract, checked one member at a time ----
// Compositions (sequential, residual, named, repeat, parallel_branches) take any type and pass
// each child through checked_layer_t<L>: when L satisfies `layer` that is L itself; when it does
// not, one static_assert per missing or ill-formed member says which, in weft's words, and the
// composition goes on with a stand-in (no parameters, no activations, the widths L declares),
// so the mistake is reported once, at the user's line, instead of as a cascade of errors in
// every type built from it (plan, training_step, ...).
#include "weft/model/layer.hpp"  // layer, param_info, init_context, detail::probe_frame

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

namespace detail {
// One named condition per member of the contract; the compiler prints the layer type with it:
//   note: 'weft::detail::layer_has_scratch_count<my_layer<512> >' evaluates to false
template <class L>
inline constexpr bool layer_has_in_width = requires {
  { L::in_width } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_out_width = requires {
  { L::out_width } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_param_count = requires {
  { L::param_count } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_kept_count = requires {
  { L::template kept_count<1, 1> } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_scratch_count = requires {
  { L::template scratch_count<1, 1> } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_find_param = requires(std::string_view path) {
  { L::find_param(path) } -> std::convertible_to<std::size_t>;
};
template <class L>
inline constexpr bool layer_has_visit_params = requires(const std::string& prefix, const init_context& ic) {
  L::visit_params(prefix, std::size_t{0}, ic, param_sink{});
};
template <class L>
inline constexpr bool layer_has_forward = requires(const probe_frame& f, const double* in, double* out) {
  L::forward(f, in, out);
};
template <class L>
inline constexpr bool layer_has_backward = requires(const probe_frame& f, const double* in, double* out) {
  L::backward(f, in, in, out);
};

/// Stands in for a type that is not a layer after its diagnostic, so nothing else fails.
template <class L>
struct invalid_layer : stateless_layer {
  static constexpr bool weft_invalid_layer = true;
  static constexpr std::size_t in_width = [] {
    if constexpr (layer_has_in_width<L>) return static_cast<std::size_t>(L::in_width);
    else if constexpr (layer_has_out_width<L>) return static_cast<std::size_t>(L::out_width);
    else return std::size_t{0};
  }();
  static constexpr std::size_t out_width = [] {
    if constexpr (layer_has_out_width<L>) return static_cast<std::size_t>(L::out_width);
    else return in_width;
  }();
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;
  template <class F>
  static void forward(const F&, const typename F::value_type*, typename F::value_type*) {}
  template <class F>
  static void backward(const F&, const typename F::value_type*, const typename F::value_type*,
                       typename F::value_type*) {}
};

template <class L>
inline constexpr bool is_invalid_layer = requires { L::weft_invalid_layer; };
}  // namespace detail

/// Diagnoses every member of the `layer` contract that `L` lacks, each in one sentence.
template <class L>
struct layer_check {
  static_assert(detail::layer_has_in_width<L>,
                "weft::layer: the layer has no in_width (see layer_has_in_width<Layer>). Declare `static constexpr "
                "std::size_t in_width`, the width of its input rows (0 if it reads token ids).");
  static_assert(detail::layer_has_out_width<L>,
                "weft::layer: the layer has no out_width (see layer_has_out_width<Layer>). Declare `static constexpr "
                "std::size_t out_width`, the width of its output rows.");
  static_assert(detail::layer_has_param_count<L>,
                "weft::layer: the layer has no param_count (see layer_has_param_count<Layer>). Derive from "
                "leaf_layer<param_list<...>> (or stateless_layer when it has no parameters).");
  static_assert(detail::layer_has_kept_count<L>,
                "weft::layer: the layer has no kept_count<B, S> (see layer_has_kept_count<Layer>). Declare `template "
                "<std::size_t B, std::size_t S> static constexpr std::size_t kept_count`, the elements it keeps for "
                "backward (0 if none).");
  static_assert(detail::layer_has_scratch_count<L>,
                "weft::layer: the layer has no scratch_count<B, S> (see layer_has_scratch_count<Layer>). Declare "
                "`template <std::size_t B, std::size_t S> static constexpr std::size_t scratch_count`, the workspace "
                "elements it needs while running (0 if none).");
  static_assert(detail::layer_has_find_param<L>,
                "weft::layer: the layer has no constexpr find_param(std::string_view) (see "
                "layer_has_find_param<Layer>). Derive from leaf_layer<param_list<...>> or stateless_layer, which "
                "provide it.");
  static_assert(detail::layer_has_visit_params<L>,
                "weft::layer: the layer has no visit_params(prefix, base, init_context, f) (see "
                "layer_has_visit_params<Layer>). Derive from leaf_layer<param_list<...>> or stateless_layer, which "
                "provide it.");
  static_assert(detail::layer_has_forward<L>,
                "weft::layer: the layer has no forward(frame, in, out) callable with a weft::frame (see "
                "layer_has_forward<Layer>). Declare `template <class F> static void forward(const F& f, const "
                "typename F::value_type* in, typename F::value_type* out)`.");
  static_assert(detail::layer_has_backward<L>,
                "weft::layer: the layer has no backward(frame, in, dout, din) callable with a weft::frame (see "
                "layer_has_backward<Layer>). Declare `template <class F> static void backward(const F& f, const "
                "typename F::value_type* in, const typename F::value_type* dout, typename F::value_type* din)`.");
  static constexpr bool ok = layer<L>;
};

namespace detail {
template <class L>
struct as_layer {
  using type = L;
};
template <class L>
  requires(!layer<L>)
struct as_layer<L> {
  static_assert(sizeof(layer_check<L>) > 0);  // instantiates the diagnostics, once per type
  using type = invalid_layer<L>;
};
}  // namespace detail

/// `L` when it is a layer; otherwise, after one diagnostic per missing member, a stand-in.
template <class L>
using checked_layer_t = typename detail::as_layer<L>::type;

}  // namespace weft
