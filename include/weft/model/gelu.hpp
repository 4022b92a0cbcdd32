#pragma once
// ---- GELU activation: the tanh form (GPT-2) or the exact erf form (GPT-NeoX, BERT) ----
#include "weft/model/layer.hpp"  // stateless_layer, frame
#include "weft/ops/gelu.hpp"     // gelu_forward/backward

#include <cstddef>

namespace weft {

/// Elementwise GELU over rows of width `C`, in form `Form` (core/gelu_form.hpp; tanh by default).
template <std::size_t C, gelu_form Form = gelu_form::tanh>
struct gelu : stateless_layer {
  static constexpr gelu_form form = Form;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    ops::gelu_forward<F::rows * C, Form>(f.ctx, view<F::rows, C>(f, out), view<F::rows, C>(f, in));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::gelu_backward<F::rows * C, Form>(f.ctx, view<F::rows, C>(f, din), view<F::rows, C>(f, in),
                                    view<F::rows, C>(f, dout));
  }
};

}  // namespace weft
