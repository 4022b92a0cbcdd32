// expect: weft::rotary: the base .rope_theta. is below 2
#include "weft/model/rope.hpp"
using pos = weft::rotary<1>;
static_assert(pos::enabled);
