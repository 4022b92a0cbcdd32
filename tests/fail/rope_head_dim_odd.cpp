// expect: weft::ops::rope: the rotated dimension is odd
#include "weft/ops/rope.hpp"

void f(float* out, const float* in) { weft::ops::rope_forward<1, 4, 4, 2, 7>(weft::host_context{}, out, in); }
