// expect: weft::ops::attention: heads is not divisible by kv_heads
#include "weft/ops/attention.hpp"

void f(float* out, float* att, const float* qkv) { weft::ops::attention_forward<1, 4, 6, 4, 8>(weft::host_context{}, out, att, qkv); }
