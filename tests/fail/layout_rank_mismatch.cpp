// expect: weft::layout::strided: the stride list and the shape differ in length
// Three strides for a rank-2 shape.
#include "weft/core/layout_policy.hpp"

using s = weft::shape<weft::axis<"rows", 4>, weft::axis<"cols", 8>>;
weft::strided<8, 1, 1>::mapping<s> m;
