// expect: weft::layout: a tile size does not divide its axis size
// Tiles of 3 columns over 8 columns.
#include "weft/core/layout_policy.hpp"

using s = weft::shape<weft::axis<"rows", 4>, weft::axis<"cols", 8>>;
weft::tiled<weft::shape<weft::axis<"cols", 3>>>::mapping<s> m;
