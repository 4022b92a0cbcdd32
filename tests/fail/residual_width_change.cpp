// expect: weft::residual: the inner layer changes the width
#include "weft/model/linear.hpp"
#include "weft/model/residual.hpp"
using m = weft::residual<weft::linear<8, 16>>;
static_assert(m::param_count > 0);
