// expect: weft::ops::gemm: C must be a row-major view
#include "weft/ops/gemm.hpp"
using namespace weft;
void f(float* c, const float* a, const float* b) {
  ops::gemm(host_context{}, make_tensor<shape<axis<"m", 6>, axis<"n", 5>>, column_major>(c),
            make_tensor<shape<axis<"m", 6>, axis<"k", 8>>>(a), make_tensor<shape<axis<"k", 8>, axis<"n", 5>>>(b));
}
