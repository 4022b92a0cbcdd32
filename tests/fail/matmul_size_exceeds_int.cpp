// expect: weft::ops::matmul: a size exceeds INT_MAX
// 2^31 rows cannot be passed to BLAS as an int.
#include "weft/ops/matmul.hpp"

void f(float* out, const float* inp, const float* w) {
  weft::ops::matmul_forward<std::size_t{1} << 31, 4, 4>(weft::host_context{}, out, inp, w, nullptr);
}
