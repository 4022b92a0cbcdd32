// expect: weft::causal_attention: heads, kv_heads or the head size is 0
#include "weft/model/causal_attention.hpp"
using core = weft::causal_attention<4, 2, 0>;
static_assert(core::out_width == 0);
