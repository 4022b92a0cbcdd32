// expect: weft::layout::compose: the right layout does not step evenly
// Stride 3 through a first mode of 4: the elements 0, 3, 6 straddle modes unevenly.
#include "weft/core/layout_algebra.hpp"

using a = weft::layout<weft::mode<4, 1>, weft::mode<6, 8>>;
weft::compose_t<a, weft::mode<3, 3>> r;
