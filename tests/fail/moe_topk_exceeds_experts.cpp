// expect: weft::moe_mlp: top-k is larger than the number of experts
// 3 of 2 experts per token.
#include "weft/model/moe.hpp"

constexpr auto n = weft::moe_mlp<8, 2, 3, 4>::param_count;
