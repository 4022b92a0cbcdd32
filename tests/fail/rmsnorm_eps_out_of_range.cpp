// expect: weft::rmsnorm: the epsilon is not in \(0, 1\)
#include "weft/model/rmsnorm.hpp"
using ln = weft::rmsnorm<8, -1e-6>;
static_assert(ln::param_count == 8);
