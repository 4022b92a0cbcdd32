#pragma once
// ---- residual connection: out = in + Inner(in) ----
#include "weft/core/diagnostics.hpp"  // diag::equal
#include "weft/model/layer.hpp"       // layer
#include "weft/model/layer_check.hpp" // checked_layer_t
#include "weft/ops/accumulate.hpp"    // accumulate
#include "weft/ops/residual.hpp"      // residual_forward

#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

/// Adds the input back to the output of `Inner`, whose widths must agree.
template <class InnerLayer>
struct residual {
  using Inner = checked_layer_t<InnerLayer>;  // InnerLayer, or a stand-in after its diagnostic
  using inner = Inner;
  static constexpr bool widths_agree = diag::equal<Inner::in_width, Inner::out_width>;
  static_assert(widths_agree, "weft::residual: the inner layer changes the width. Wrap only width-preserving layers in residual<>.");
  static constexpr std::size_t in_width = Inner::in_width;
  static constexpr std::size_t out_width = Inner::out_width;
  static constexpr std::size_t param_count = Inner::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = Inner::template kept_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = Inner::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) { return Inner::find_param(path); }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    Inner::visit_params(prefix, base, ic, f);
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    Inner::forward(f, in, out);                             // (rows, width)
    const auto y = view<F::rows, in_width>(f, out);
    ops::residual_forward<F::rows * in_width>(f.ctx, y, y, view<F::rows, in_width>(f, in));  // out += in
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::accumulate(f.ctx, view<F::rows, in_width>(f, din), view<F::rows, in_width>(f, dout));  // the skip path
    Inner::backward(f, in, dout, din);                      // the inner path
  }
};

}  // namespace weft
