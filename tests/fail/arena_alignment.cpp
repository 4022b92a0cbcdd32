// expect: weft::arena_layout: the alignment is not a power of two
// 48 is not a power of two.
#include "weft/tensor/arena_layout.hpp"

using s = weft::shape<weft::axis<"n", 4>>;
using l = weft::basic_arena_layout<48, weft::buffer<"w", float, s>>;
constexpr auto n = l::bytes;
