// expect: weft::arena_layout: no buffer has this name
// The layout has "wte" but not "wpe".
#include "weft/tensor/arena_layout.hpp"

using s = weft::shape<weft::axis<"n", 4>>;
using l = weft::arena_layout<weft::buffer<"wte", float, s>>;
constexpr auto off = l::offset_of<"wpe">;
