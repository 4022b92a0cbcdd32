// expect: weft::layout::complement: the layout's leaves overlap
// Leaves (4:1) and (2:2) overlap (offsets 2 and 3 are reached twice).
#include "weft/core/layout_algebra.hpp"

weft::complement_t<weft::layout<weft::mode<4, 1>, weft::mode<2, 2>>, 16> c;
