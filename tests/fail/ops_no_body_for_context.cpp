// expect: weft::ops: no body of this op takes this execution context and these arguments
// A context whose backend declares no gelu body (its op headers were never included).
#include "weft/ops/gelu.hpp"

struct device_only_context {
  using memory_space = weft::device_space;
};

void f(float* out, const float* inp) { weft::ops::gelu_forward<8>(device_only_context{}, out, inp); }
