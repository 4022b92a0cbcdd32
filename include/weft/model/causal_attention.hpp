#pragma once
// ---- causal self-attention core: packed (q, k, v) heads -> concatenated head outputs ----
// Input rows hold H query heads, then KVH key heads, then KVH value heads, D each; output rows
// hold the H head outputs. Grouped-query attention: query head h reads kv head h / (H / KVH).
#include "weft/core/diagnostics.hpp"  // diag::divisible
#include "weft/model/layer.hpp"       // stateless_layer, frame
#include "weft/model/rope.hpp"        // no_rope, rope
#include "weft/ops/attention.hpp"     // attention_forward/backward
#include "weft/ops/fill.hpp"          // zero
#include "weft/ops/rope.hpp"          // rope_forward/backward

#include <algorithm>
#include <cstddef>

namespace weft {

/// Softmax(q·kᵀ/√D, causal)·v over H heads sharing KVH key/value heads, with optional rope and,
/// with Window > 0, a sliding window: each query sees itself and the Window - 1 keys before it
/// (Mistral's, and Gemma 2's local layers', sliding_window).
template <std::size_t H, std::size_t KVH, std::size_t D, class PosEnc = no_rope, std::size_t Window = 0>
struct causal_attention : stateless_layer {
  static constexpr bool sizes_positive = diag::at_least<H, 1> && diag::at_least<KVH, 1> && diag::at_least<D, 1>;
  static_assert(sizes_positive, "weft::causal_attention: heads, kv_heads or the head size is 0. Give each at least 1.");
  static constexpr bool head_size_even_for_rope = !PosEnc::enabled || diag::divisible<PosEnc::template dims<D>, 2> || PosEnc::template dims<D> != D;
  static_assert(head_size_even_for_rope, "weft::causal_attention: the head size is odd, but rotary embeddings rotate pairs of it. Use an even head size (width / heads) with rope, or no_rope.");
  static constexpr bool rotary_dims_fit = !PosEnc::enabled || PosEnc::template dims<D> == D || PosEnc::template fits<D>;
  static_assert(rotary_dims_fit, "weft::causal_attention: the rotary dimensions of rotary<Base, Dims> are odd or exceed the head size. Choose an even Dims of at most the head size (width / heads), or 0 to rotate the whole head.");
  static constexpr bool kv_divides = diag::divisible<H, (KVH > 0 ? KVH : 1)>;  // KVH = 0: reported above
  static_assert(kv_divides, "weft::causal_attention: heads is not divisible by kv_heads. Choose kv_heads that divides heads.");
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;
  static constexpr std::size_t in_width = qkv_width;
  static constexpr std::size_t window = Window;  ///< keys each query sees (0: all before it)
  static constexpr std::size_t out_width = H * D;

  template <std::size_t B, std::size_t S>
  static constexpr std::size_t probs_count = B * H * S * S;  // (batch, heads, seq, seq)
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = probs_count<B, S> + (PosEnc::enabled ? B * S * qkv_width : 0);
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = probs_count<B, S> + (PosEnc::enabled ? B * S * qkv_width : 0);

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t B = F::batch, S = F::seq;
    auto* probs = f.kept;  // (batch, heads, seq, seq)
    if constexpr (PosEnc::enabled) {
      auto* rotated = f.kept + probs_count<B, S>;  // (batch, seq, qkv_width)
      ops::rope_forward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, rotated), view<B * S, qkv_width>(f, in));
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, out), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, rotated));
    } else {
      ops::attention_forward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, out_width>(f, out), view<B, H, S, S>(f, probs),
                                              view<B * S, qkv_width>(f, in));
    }
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    constexpr std::size_t B = F::batch, S = F::seq;
    const auto* probs = f.kept;
    auto* dprobs = f.scratch;  // (batch, heads, seq, seq)
    if constexpr (PosEnc::enabled) {
      const auto* rotated = f.kept + probs_count<B, S>;
      auto* drotated = f.scratch + probs_count<B, S>;  // (batch, seq, qkv_width)
      const auto drot = view<B * S, qkv_width>(f, drotated);
      ops::zero(f.ctx, drot);
      ops::attention_backward<B, S, H, KVH, D, Window>(f.ctx, drot, view<B, H, S, S>(f, dprobs), view<B * S, out_width>(f, dout),
                                               view<B * S, qkv_width>(f, rotated), view<B, H, S, S>(f, probs));
      ops::rope_backward<B, S, H, KVH, D, PosEnc::base, PosEnc::template dims<D>, typename PosEnc::scaling>(f.ctx, view<B * S, qkv_width>(f, din), drot);
    } else {
      ops::attention_backward<B, S, H, KVH, D, Window>(f.ctx, view<B * S, qkv_width>(f, din), view<B, H, S, S>(f, dprobs),
                                               view<B * S, out_width>(f, dout), view<B * S, qkv_width>(f, in),
                                               view<B, H, S, S>(f, probs));
    }
  }
};

}  // namespace weft
