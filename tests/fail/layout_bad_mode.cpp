// expect: weft::layout: a mode is neither a weft::mode<size, stride> nor a weft::layout
// int is not a mode.
#include "weft/core/layout.hpp"

weft::layout<weft::mode<4, 1>, int> l;
