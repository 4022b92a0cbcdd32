// expect: weft::layout: a tile size does not divide its axis size
// Cutting 4 rows into tiles of 3.
#include "weft/core/layout_policy.hpp"

using s = weft::shape<weft::axis<"rows", 4>, weft::axis<"cols", 8>>;
using d = weft::divide<weft::row_major::mapping<s>, weft::shape<weft::axis<"rows", 3>>>;
d::tile_mapping t;
