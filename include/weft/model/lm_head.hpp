#pragma once
// ---- language-model head: rows of width C -> logits over the vocabulary ----
#include "weft/core/diagnostics.hpp"   // diag::name_found
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/core/shape.hpp"         // shape, axis
#include "weft/model/layer.hpp"        // leaf_layer, frame, npos_param
#include "weft/ops/matmul.hpp"         // matmul_forward/backward

#include <cstddef>
#include <type_traits>

namespace weft {

/// The head reuses a (vocab, width) parameter of the model, found by its dotted path (GPT-2 ties
/// the head to the token embedding: `tied<"wte.weight">`).
template <fixed_string Path>
struct tied {
  static constexpr auto path = Path;
  static constexpr bool is_tied = true;
};
/// The head owns its (vocab, width) weight.
struct untied {
  static constexpr bool is_tied = false;
};

namespace detail {
template <std::size_t V, std::size_t C, class Tie>
using lm_head_params =
    std::conditional_t<Tie::is_tied, param_list<>,
                       param_list<param<"weight", shape<axis<"vocab", V>, axis<"width", C>>, role::vocab, init::normal<20>>>>;

template <class Root, class Tie>
consteval std::size_t tied_offset() {
  constexpr std::size_t off = Root::find_param(Tie::path.view());
  // The condition is the named variable template itself, so the compiler prints the path.
  static_assert(diag::name_found<Tie::path, off != npos_param>,
                "weft::lm_head: the tied parameter path names no parameter of the model. Use the dotted path of "
                "the embedding table, e.g. tied<\"wte.weight\">.");
  return off;
}
}  // namespace detail

/// logits = in · Wᵀ with W (vocab, width); no bias.
template <std::size_t V, std::size_t C, class Tie = untied>
struct lm_head : leaf_layer<detail::lm_head_params<V, C, Tie>> {
  static constexpr std::size_t vocab_size = V;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = V;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static auto* weight(const F& f) {
    if constexpr (Tie::is_tied) return f.root_param(detail::tied_offset<typename F::root_type, Tie>());
    else return f.params;
  }
  template <class F>
  static auto* weight_grad(const F& f) {
    if constexpr (Tie::is_tied) return f.root_grad(detail::tied_offset<typename F::root_type, Tie>());
    else return f.grads;
  }

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    // (batch, seq, vocab) = (batch, seq, width) · Wᵀ, W stored (vocab, width)
    ops::matmul_forward<F::rows, C, V>(f.ctx, view<F::rows, V>(f, out), view<F::rows, C>(f, in),
                                       linear_weight<C, V>(f, weight(f)), ops::none);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::matmul_backward<F::rows, C, V>(f.ctx, view<F::rows, C>(f, din), linear_weight<C, V>(f, weight_grad(f)),
                                        ops::none, view<F::rows, V>(f, dout), view<F::rows, C>(f, in),
                                        linear_weight<C, V>(f, weight(f)));
  }
};

}  // namespace weft
