// expect: weft::llama3_rope_scaling: the factors are out of range
// The blend between the bands divides by HighFreqFactor - LowFreqFactor: equal factors have no band.
#include "weft/core/rope_scaling.hpp"
using scaling = weft::llama3_rope_scaling<8, 4, 4>;
static_assert(scaling::enabled);
