// expect: weft::ops::gemm: the extents do not chain
#include "weft/ops/gemm.hpp"
using namespace weft;
void f(float* c, const float* a, const float* w) {
  // an (out, in) weight passed row-major as (out, in): K of A (8) meets 5 rows of B
  ops::gemm(host_context{}, make_tensor<shape<axis<"row", 6>, axis<"out", 5>>>(c),
            make_tensor<shape<axis<"row", 6>, axis<"in", 8>>>(a), make_tensor<shape<axis<"out", 5>, axis<"in", 8>>>(w));
}
