#pragma once
// ---- layer normalisation with a gain and no bias (OLMo, PaLM, Gemma-style LayerNorm) ----
// torch.nn.LayerNorm(C, bias=False): out = (x - mean) · rstd · weight. It runs the layernorm op
// with a zero bias held in workspace (and a throw-away bias gradient beside it), so it needs no
// op of its own and has one parameter, "weight".
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"        // shape, axis
#include "weft/model/layer.hpp"       // leaf_layer, frame
#include "weft/model/norm_stats.hpp"  // norm_stat_slots, norm_stats
#include "weft/ops/fill.hpp"          // zero
#include "weft/ops/layernorm.hpp"     // layernorm_forward/backward

#include <cstddef>

namespace weft {

/// LayerNorm(width) without bias, epsilon Eps (1e-5 unless given); keeps the per-row mean and 1/std (ops::stat_t).
template <std::size_t C, double Eps = ops::layernorm_eps>
struct bias_free_layernorm
    : leaf_layer<param_list<param<"weight", shape<axis<"width", C>>, role::replicated, init::ones>>> {
  static constexpr bool width_positive = diag::at_least<C, 1>;
  static_assert(width_positive, "weft::bias_free_layernorm: the width is 0. Give bias_free_layernorm<C> a width of at least 1.");
  static constexpr bool eps_valid = Eps > 0 && Eps < 1;
  static_assert(eps_valid, "weft::bias_free_layernorm: the epsilon is not in (0, 1). Give bias_free_layernorm<C, Eps> the model's epsilon (1e-5 for GPT-2, as torch.nn.LayerNorm).");
  static constexpr double eps = eps_valid ? Eps : ops::layernorm_eps;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = norm_stat_slots<2 * B * S>;  // mean (rows), rstd (rows)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 2 * C;  // the zero bias (C), its dropped gradient (C)

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t N = F::rows;
    const auto zero_bias = view<C>(f, f.scratch);
    ops::zero(f.ctx, zero_bias);
    auto* stats = norm_stats(f.kept);  // mean (N), rstd (N)
    ops::layernorm_forward<N, C, eps>(f.ctx, view<N, C>(f, out), view<N>(f, stats), view<N>(f, stats + N), view<N, C>(f, in),
                                 view<C>(f, f.params), zero_bias);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t N = F::rows;
    const auto dropped_dbias = view<C>(f, f.scratch + C);  // never read
    ops::zero(f.ctx, dropped_dbias);
    const auto* stats = norm_stats(f.kept);
    ops::layernorm_backward<N, C>(f.ctx, view<N, C>(f, din), view<C>(f, f.grads), dropped_dbias, view<N, C>(f, dout),
                                  view<N, C>(f, in), view<C>(f, f.params), view<N>(f, stats), view<N>(f, stats + N));
  }
};

}  // namespace weft
