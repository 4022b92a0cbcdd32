// expect: weft::shape::split: the axis size is not divisible
// 768 is not divisible by 5.
#include "weft/core/shape.hpp"

using s = weft::shape<weft::axis<"width", 768>>;
using per_rank = s::split<"width", 5>;
per_rank p;
