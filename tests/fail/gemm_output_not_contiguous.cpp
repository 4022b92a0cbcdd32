// expect: weft::ops::gemm: C has no contiguous mode
#include "weft/ops/gemm.hpp"
using namespace weft;
void f(float* c, const float* a, const float* b) {
  // C(6, 5) with rows 10 apart and columns 2 apart: neither mode is contiguous.
  ops::gemm(host_context{}, tensor<float, layout<mode<6, 10>, mode<5, 2>>>{c},
            make_tensor<shape<axis<"m", 6>, axis<"k", 8>>>(a), make_tensor<shape<axis<"k", 8>, axis<"n", 5>>>(b));
}
