#pragma once
// ---- RMS normalisation over the width axis, with a gain (LLaMA) ----
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/core/shape.hpp"   // shape, axis
#include "weft/model/layer.hpp"  // leaf_layer, frame
#include "weft/model/norm_stats.hpp"  // norm_stat_slots, norm_stats
#include "weft/ops/rmsnorm.hpp"  // rmsnorm_forward/backward

#include <cstddef>

namespace weft {

/// RMSNorm(width) with eps 1e-5; keeps the per-row 1/rms (ops::stat_t: f32 for 16-bit
/// activations, norm_stats.hpp).
template <std::size_t C>
struct rmsnorm : leaf_layer<param_list<param<"weight", shape<axis<"width", C>>, role::replicated, init::ones>>> {
  static constexpr bool width_positive = diag::at_least<C, 1>;
  static_assert(width_positive, "weft::rmsnorm: the width is 0. Give rmsnorm<C> a width of at least 1.");
  static constexpr std::size_t in_width = C;
  static constexpr std::size_t out_width = C;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = norm_stat_slots<B * S>;  // rstd (rows)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = 0;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    ops::rmsnorm_forward<F::rows, C>(f.ctx, out, norm_stats(f.kept), in, f.params);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    ops::rmsnorm_backward<F::rows, C>(f.ctx, din, f.grads, dout, in, f.params, norm_stats(f.kept));
  }
};

}  // namespace weft
