// expect: weft::causal_attention: the rotary dimensions of rotary<Base, Dims> are odd or exceed the head size
// Partial rotary over 10 elements of an 8-element head.
#include "weft/model/causal_attention.hpp"
using core = weft::causal_attention<4, 2, 8, weft::rotary<10000, 10>>;
static_assert(core::in_width > 0);
