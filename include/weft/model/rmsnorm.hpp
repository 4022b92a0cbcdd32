#pragma once
// ---- RMS normalisation over the width axis, with a gain (LLaMA) ----
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"   // shape, axis
#include "weft/model/layer.hpp"  // leaf_layer, frame
#include "weft/model/norm_stats.hpp"  // norm_stat_slots, norm_stats
#include "weft/ops/rmsnorm.hpp"  // rmsnorm_forward/backward

#include "weft/ops/accumulate.hpp"  // accumulate (the unit offset)
#include "weft/ops/fill.hpp"  // fill (the unit offset)

#include <cstddef>
#include <type_traits>

namespace weft {

/// RMSNorm(width) with epsilon Eps inside the square root (1e-5, LLaMA's, unless given:
/// rmsnorm<C, 1e-6> for Qwen and Gemma; llama_config's norm_eps<> sets it); keeps the per-row
/// 1/rms (ops::stat_t: f32 for 16-bit activations, norm_stats.hpp).
/// `UnitOffset`: Gemma's form x̂·(1 + w), its weight w initialised to 0 (transformers'
/// GemmaRMSNorm / Gemma3RMSNorm). The gain g = 1 + w is formed in the workspace (C elements, in
/// the element type) and the ordinary rmsnorm ops run with it; dL/dw = dL/dg, so backward
/// accumulates the gain's gradient into w's.
template <std::size_t C, double Eps = ops::rmsnorm_eps, bool UnitOffset = false>
struct rmsnorm : leaf_layer<param_list<param<"weight", shape<axis<"width", C>>, role::replicated,
                                             std::conditional_t<UnitOffset, init::zeros, init::ones>>>> {
  static constexpr bool width_positive = diag::at_least<C, 1>;
  static_assert(width_positive, "weft::rmsnorm: the width is 0. Give rmsnorm<C> a width of at least 1.");
  static constexpr bool eps_valid = Eps > 0 && Eps < 1;
  static_assert(eps_valid, "weft::rmsnorm: the epsilon is not in (0, 1). Give rmsnorm<C, Eps> the model's epsilon (1e-5 for LLaMA, 1e-6 for Qwen and Gemma).");
  static constexpr double eps = eps_valid ? Eps : ops::rmsnorm_eps;
  static constexpr bool unit_offset = UnitOffset;
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = norm_stat_slots<B * S>;  // rstd (rows)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = UnitOffset ? C : 0;  // the gain 1 + w

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t N = F::rows;
    ops::rmsnorm_forward<N, C, eps>(f.ctx, view<N, C>(f, out), view<N>(f, norm_stats(f.kept)), view<N, C>(f, in),
                               view<C>(f, gain(f)));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t N = F::rows;
    ops::rmsnorm_backward<N, C>(f.ctx, view<N, C>(f, din), view<C>(f, f.grads), view<N, C>(f, dout), view<N, C>(f, in),
                                view<C>(f, gain(f)), view<N>(f, norm_stats(f.kept)));
  }

 private:
  // The gain the ops multiply by: the weight, or (UnitOffset) 1 + weight in the workspace.
  template <class F>
  static const typename F::value_type* gain(const F& f) {
    using T = typename F::value_type;
    if constexpr (UnitOffset) {
      ops::fill(f.ctx, f.scratch, C, static_cast<T>(1.0));
      ops::accumulate(f.ctx, f.scratch, f.params, C);
      return f.scratch;
    } else {
      return f.params;
    }
  }
};

}  // namespace weft
