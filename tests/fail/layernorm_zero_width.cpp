// expect: weft::layernorm: the width is 0
#include "weft/model/layernorm.hpp"
using ln = weft::layernorm<0>;
static_assert(ln::in_width == 0);
