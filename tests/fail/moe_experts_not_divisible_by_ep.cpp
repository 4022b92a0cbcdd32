// expect: weft::moe_expert_parallel: the number of experts is not divisible by the expert-parallel size
// 6 experts over 4 ranks.
#include "weft/model/moe_expert_parallel.hpp"

constexpr auto n = weft::moe_expert_parallel<weft::moe_mlp<8, 6, 2, 4>, 4>::param_count;
