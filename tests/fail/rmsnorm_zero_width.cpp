// expect: weft::rmsnorm: the width is 0
#include "weft/model/rmsnorm.hpp"
using ln = weft::rmsnorm<0>;
static_assert(ln::in_width == 0);
