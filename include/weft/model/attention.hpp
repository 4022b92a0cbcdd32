#pragma once
// ---- multi-head attention sub-layer: qkv projection, causal attention, output projection ----
#include "weft/core/diagnostics.hpp"       // diag::divisible, diag::at_least
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/linear.hpp"            // linear, packed
#include "weft/model/named.hpp"             // named
#include "weft/model/rope.hpp"              // no_rope, rope
#include "weft/model/sequential.hpp"        // sequential

#include <cstddef>

namespace weft {

namespace detail {
// The shape checks of attention<C, H, KVH, ...>, at the user's line: the alias reads head_size
// from here, which instantiates the assertions. HeadDim > 0 sets the head size apart from the
// width (Qwen 3, Gemma: heads · head_dim need not be the width); 0 takes width / heads.
template <std::size_t C, std::size_t H, std::size_t KVH, std::size_t HeadDim = 0>
struct attention_shape {
  static constexpr bool heads_positive = diag::at_least<H, 1> && diag::at_least<KVH, 1>;
  static_assert(heads_positive, "weft::attention: heads or kv_heads is 0. Give attention<C, H, KVH> at least one head of each.");
  static constexpr bool width_divisible_by_heads = HeadDim > 0 || diag::divisible<C, (H > 0 ? H : 1)>;
  static_assert(width_divisible_by_heads, "weft::attention: the width is not divisible by heads, so the heads would not cover it. Choose heads that divides the width (head size = width / heads), or give the head size (HeadDim).");
  static constexpr std::size_t head_size =
      HeadDim > 0 ? HeadDim : (heads_positive && width_divisible_by_heads) ? C / (H > 0 ? H : 1) : 1;
  // What the layers are built with: after a failed check, sizes that raise no second error.
  static constexpr std::size_t h = heads_positive ? H : 1, kvh = heads_positive ? KVH : 1;
  static constexpr std::size_t q_width = h * head_size, kv_width = kvh * head_size;
};
}  // namespace detail

/// `c_attn` (width -> packed q,k,v; column-parallel), attention, `c_proj` (heads·D -> width;
/// row-parallel, GPT-2's residual-scaled init). Names follow Hugging Face GPT-2. `Window` > 0 limits
/// each query to itself and the Window - 1 keys before it (sliding-window attention). `HeadDim` > 0
/// sets the head size D apart from width / heads. `Bias` is c_attn's bias and, unless `OutBias`
/// says otherwise, c_proj's (Qwen 2: a bias on q, k, v only).
template <std::size_t C, std::size_t H, std::size_t KVH = H, class PosEnc = no_rope, bool Bias = true,
          export_layout Export = export_layout::as_is, std::size_t Window = 0, std::size_t HeadDim = 0,
          bool OutBias = Bias>
using attention = sequential<
    named<"c_attn", linear<C, detail::attention_shape<C, H, KVH, HeadDim>::q_width +
                                  2 * detail::attention_shape<C, H, KVH, HeadDim>::kv_width,
                           role::column, Bias, init::normal<20>, Export,
                           packed<detail::attention_shape<C, H, KVH, HeadDim>::q_width,
                                  detail::attention_shape<C, H, KVH, HeadDim>::kv_width,
                                  detail::attention_shape<C, H, KVH, HeadDim>::kv_width>>>,
    causal_attention<detail::attention_shape<C, H, KVH, HeadDim>::h, detail::attention_shape<C, H, KVH, HeadDim>::kvh,
                     detail::attention_shape<C, H, KVH, HeadDim>::head_size, PosEnc, Window>,
    named<"c_proj", linear<detail::attention_shape<C, H, KVH, HeadDim>::q_width, C, role::row, OutBias,
                           init::normal_residual<20>, Export>>>;

}  // namespace weft
