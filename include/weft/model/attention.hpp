#pragma once
// ---- multi-head attention sub-layer: qkv projection, causal attention, output projection ----
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/linear.hpp"            // linear, packed
#include "weft/model/named.hpp"             // named
#include "weft/model/rope.hpp"              // no_rope, rope
#include "weft/model/sequential.hpp"        // sequential

#include <cstddef>

namespace weft {

/// `c_attn` (width -> packed q,k,v; column-parallel), attention, `c_proj` (heads·D -> width;
/// row-parallel, GPT-2's residual-scaled init). Names follow Hugging Face GPT-2.
template <std::size_t C, std::size_t H, std::size_t KVH = H, class PosEnc = no_rope, bool Bias = true,
          export_layout Export = export_layout::as_is>
using attention =
    sequential<named<"c_attn", linear<C, (H + 2 * KVH) * (C / H), role::column, Bias, init::normal<20>, Export,
                                      packed<H*(C / H), KVH*(C / H), KVH*(C / H)>>>,
               causal_attention<H, KVH, C / H, PosEnc>,
               named<"c_proj", linear<H*(C / H), C, role::row, Bias, init::normal_residual<20>, Export>>>;

}  // namespace weft
