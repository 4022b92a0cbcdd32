// expect: weft::causal_attention: the head size is odd, but rotary embeddings
#include "weft/model/causal_attention.hpp"
using core = weft::causal_attention<4, 2, 7, weft::rope>;
static_assert(core::in_width > 0);
