#pragma once
// ---- pre-norm transformer block ----
#include "weft/model/layer.hpp"       // layer
#include "weft/model/named.hpp"       // named
#include "weft/model/residual.hpp"    // residual
#include "weft/model/sequential.hpp"  // sequential

namespace weft {

/// x + Attn(Norm1(x)), then + Mlp(Norm2(·)). Parameter names: ln_1, attn, ln_2, mlp.
template <class Norm1, class Attn, class Norm2, class Mlp>  // each checked by the compositions
using block = sequential<residual<sequential<named<"ln_1", Norm1>, named<"attn", Attn>>>,
                         residual<sequential<named<"ln_2", Norm2>, named<"mlp", Mlp>>>>;

}  // namespace weft
