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
// from here, which instantiates the assertions.
template <std::size_t C, std::size_t H, std::size_t KVH>
struct attention_shape {
  static constexpr bool heads_positive = diag::at_least<H, 1> && diag::at_least<KVH, 1>;
  static_assert(heads_positive, "weft::attention: heads or kv_heads is 0. Give attention<C, H, KVH> at least one head of each.");
  static constexpr bool width_divisible_by_heads = diag::divisible<C, (H > 0 ? H : 1)>;
  static_assert(width_divisible_by_heads, "weft::attention: the width is not divisible by heads, so the heads would not cover it. Choose heads that divides the width (head size = width / heads).");
  static constexpr std::size_t head_size = (heads_positive && width_divisible_by_heads) ? C / H : 1;
  // What the layers are built with: after a failed check, sizes that raise no second error.
  static constexpr std::size_t h = heads_positive ? H : 1, kvh = heads_positive ? KVH : 1;
};
}  // namespace detail

/// `c_attn` (width -> packed q,k,v; column-parallel), attention, `c_proj` (heads·D -> width;
/// row-parallel, GPT-2's residual-scaled init). Names follow Hugging Face GPT-2. `Window` > 0 limits
/// each query to itself and the Window - 1 keys before it (sliding-window attention).
template <std::size_t C, std::size_t H, std::size_t KVH = H, class PosEnc = no_rope, bool Bias = true,
          export_layout Export = export_layout::as_is, std::size_t Window = 0>
using attention = sequential<
    named<"c_attn", linear<C, (detail::attention_shape<C, H, KVH>::h + 2 * detail::attention_shape<C, H, KVH>::kvh) *
                                  detail::attention_shape<C, H, KVH>::head_size,
                           role::column, Bias, init::normal<20>, Export,
                           packed<detail::attention_shape<C, H, KVH>::h * detail::attention_shape<C, H, KVH>::head_size,
                                  detail::attention_shape<C, H, KVH>::kvh * detail::attention_shape<C, H, KVH>::head_size,
                                  detail::attention_shape<C, H, KVH>::kvh * detail::attention_shape<C, H, KVH>::head_size>>>,
    causal_attention<detail::attention_shape<C, H, KVH>::h, detail::attention_shape<C, H, KVH>::kvh,
                     detail::attention_shape<C, H, KVH>::head_size, PosEnc, Window>,
    named<"c_proj", linear<detail::attention_shape<C, H, KVH>::h * detail::attention_shape<C, H, KVH>::head_size, C,
                           role::row, Bias, init::normal_residual<20>, Export>>>;

}  // namespace weft
