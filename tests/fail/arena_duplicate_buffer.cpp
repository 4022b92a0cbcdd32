// expect: weft::arena_layout: a buffer name occurs twice
// Two buffers called "w".
#include "weft/tensor/arena_layout.hpp"

using s = weft::shape<weft::axis<"n", 4>>;
using l = weft::arena_layout<weft::buffer<"w", float, s>, weft::buffer<"w", double, s>>;
constexpr auto n = l::bytes;
