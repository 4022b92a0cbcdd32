#pragma once
// ---- layer normalisation over the width axis, with gain and bias ----
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"     // shape, axis
#include "weft/model/layer.hpp"    // leaf_layer, frame
#include "weft/model/norm_stats.hpp"  // norm_stat_slots, norm_stats
#include "weft/ops/layernorm.hpp"  // layernorm_forward/backward

#include <cstddef>

namespace weft {

/// LayerNorm(width) with epsilon Eps (1e-5, GPT-2's, unless given: gpt_config's norm_eps<>);
/// keeps the per-row mean and 1/std (in ops::stat_t: f32 for 16-bit activations, norm_stats.hpp).
template <std::size_t C, double Eps = ops::layernorm_eps>
struct layernorm : leaf_layer<param_list<param<"weight", shape<axis<"width", C>>, role::replicated, init::ones>,
                                         param<"bias", shape<axis<"width", C>>, role::replicated, init::zeros>>> {
  static constexpr bool width_positive = diag::at_least<C, 1>;
  static_assert(width_positive, "weft::layernorm: the width is 0. Give layernorm<C> a width of at least 1.");
  static constexpr bool eps_valid = Eps > 0 && Eps < 1;
  static_assert(eps_valid, "weft::layernorm: the epsilon is not in (0, 1). Give layernorm<C, Eps> the model's epsilon (1e-5 for GPT-2, as torch.nn.LayerNorm).");
  static constexpr double eps = eps_valid ? Eps : ops::layernorm_eps;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = norm_stat_slots<2 * B * S>;  // mean (rows), rstd (rows)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t N = F::rows;
    auto* stats = norm_stats(f.kept);  // mean (N), rstd (N)
    ops::layernorm_forward<N, C, eps>(f.ctx, view<N, C>(f, out), view<N>(f, stats), view<N>(f, stats + N), view<N, C>(f, in),
                                 view<C>(f, f.params), view<C>(f, f.params + C));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t N = F::rows;
    const auto* stats = norm_stats(f.kept);
    ops::layernorm_backward<N, C>(f.ctx, view<N, C>(f, din), view<C>(f, f.grads), view<C>(f, f.grads + C),
                                  view<N, C>(f, dout), view<N, C>(f, in), view<C>(f, f.params), view<N>(f, stats),
                                  view<N>(f, stats + N));
  }
};

}  // namespace weft
