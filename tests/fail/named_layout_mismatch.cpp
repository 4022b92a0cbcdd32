// expect: weft::named_layout: the layout's modes do not match the shape's axes
// The layout's second mode has 6 coordinates, the axis "cols" 8.
#include "weft/core/layout_policy.hpp"

using s = weft::shape<weft::axis<"rows", 4>, weft::axis<"cols", 8>>;
weft::named_layout<s, weft::layout<weft::mode<4, 8>, weft::mode<6, 1>>> m;
