#pragma once
// ---- flash_attention_core: causal attention that keeps row statistics, not probabilities ----
// causal_attention<H, KVH, D, PosEnc> with FlashAttention's memory contract (ops/flash_attention.hpp):
// forward keeps each row's log-sum-exp (B, H, S) in the precision's statistics type and a copy of
// the output (B, S, H·D); backward recomputes the probabilities from q, k and the log-sum-exp.
// Nothing of size (S, S) is kept or borrowed, so attention's memory grows with S, not S².
//   kept:      norm_stat_slots<B·H·S> + B·S·H·D (+ B·S·qkv_width, the rotated q, k, v, with rope)
//   workspace: 0 (B·S·qkv_width with rope: the rotated gradient)
// A layer's backward is given its input and the output's gradient, not its output, hence the
// copy (B·S·H·D: one activation of the projection's width, against B·H·S·S probabilities).
// A plan selects it with the strategy option flash_attention (parallel/strategy.hpp), which maps
// every causal_attention of the model to it (parallel/recompute.hpp); it can also be written in a
// model directly. The same parameters (none); the numbers differ from causal_attention's only by
// rounding (the backward's row term is dout·out instead of Σ p·dp).
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/layer.hpp"             // frame, view
#include "weft/model/norm_stats.hpp"        // norm_stat_slots, norm_stats
#include "weft/ops/copy.hpp"                // copy
#include "weft/ops/fill.hpp"                // zero
#include "weft/ops/flash_attention.hpp"     // flash_attention_forward/backward
#include "weft/ops/rope.hpp"                // rope_forward/backward

#include <cstddef>

namespace weft {

/// Causal attention keeping (log-sum-exp, output) instead of probabilities (see the top of this file).
template <std::size_t H, std::size_t KVH, std::size_t D, class PosEnc = no_rope, std::size_t Window = 0>
struct flash_attention_core : causal_attention<H, KVH, D, PosEnc, Window> {
  using base = causal_attention<H, KVH, D, PosEnc, Window>;
  using base::in_width;
  using base::out_width;
  using base::qkv_width;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t stats_count = norm_stat_slots<B * H * S>;  // lse (batch, heads, seq)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t rotated_count = PosEnc::enabled ? B * S * qkv_width : 0;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = stats_count<B, S> + B * S * out_width + rotated_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = rotated_count<B, S>;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t B = F::batch, S = F::seq;
    using T = typename F::value_type;
    auto* lse = norm_stats(f.kept);                     // (batch, heads, seq)
    T* kept_out = f.kept + stats_count<B, S>;           // (batch, seq, heads·D)
    const T* qkv = in;
    if constexpr (PosEnc::enabled) {
      T* rotated = kept_out + B * S * out_width;  // (batch, seq, qkv_width)
      ops::rope_forward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, rotated), view<B * S, qkv_width>(f, in));
      qkv = rotated;
    }
    ops::flash_attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, out), view<B * H * S>(f, lse),
                                                  view<B * S, qkv_width>(f, qkv));
    ops::copy(f.ctx, view<B * S, out_width>(f, kept_out), view<B * S, out_width>(f, static_cast<const T*>(out)));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t B = F::batch, S = F::seq;
    using T = typename F::value_type;
    const auto* lse = norm_stats(f.kept);
    const T* kept_out = f.kept + stats_count<B, S>;
    if constexpr (PosEnc::enabled) {
      const T* rotated = kept_out + B * S * out_width;
      const auto drot = view<B * S, qkv_width>(f, f.scratch);
      ops::zero(f.ctx, drot);
      ops::flash_attention_backward<B, S, H, KVH, D, Window>(f.ctx, drot, view<B * S, out_width>(f, dout),
                                                     view<B * S, qkv_width>(f, rotated),
                                                     view<B * S, out_width>(f, kept_out), view<B * H * S>(f, lse));
      ops::rope_backward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, din), drot);
    } else {
      ops::flash_attention_backward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, qkv_width>(f, din), view<B * S, out_width>(f, dout),
                                                     view<B * S, qkv_width>(f, in), view<B * S, out_width>(f, kept_out),
                                                     view<B * H * S>(f, lse));
    }
  }
};

}  // namespace weft
