// expect: weft::moe_mlp: an option is not a moe_mlp option
// int is no option.
#include "weft/model/moe.hpp"

constexpr auto n = weft::moe_mlp<8, 4, 2, 4, int>::param_count;
