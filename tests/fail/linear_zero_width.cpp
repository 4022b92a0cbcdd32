// expect: weft::linear: the in or out width is 0
#include "weft/model/linear.hpp"
using fc = weft::linear<8, 0>;
static_assert(fc::out_width == 0);
