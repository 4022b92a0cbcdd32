// expect: weft::linear_rope_scaling: the factor is 0
#include "weft/model/rope.hpp"
static_assert(weft::linear_rope_scaling<0>::enabled);
