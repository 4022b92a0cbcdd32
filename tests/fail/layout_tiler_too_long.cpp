// expect: weft::layout::divide: the tiler has more sizes than the layout has modes
// Three tile sizes for a rank-2 layout.
#include "weft/core/layout_algebra.hpp"

using a = weft::layout<weft::mode<4, 1>, weft::mode<6, 4>>;
weft::zipped_divide_t<a, weft::tiler<2, 3, 1>> z;
