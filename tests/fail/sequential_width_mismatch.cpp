// expect: weft::sequential: a layer's output width differs
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
using m = weft::sequential<weft::linear<8, 16>, weft::linear<12, 8>>;
static_assert(m::param_count > 0);
