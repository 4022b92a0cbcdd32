// expect: weft::ops: ops::none passed for an operand the op needs
#include "weft/ops/rmsnorm.hpp"
using namespace weft;
void f(float* out, float* rstd, const float* in) {
  // rmsnorm needs its gain; only operands declared *_opt may be ops::none.
  ops::rmsnorm_forward<2, 4>(host_context{}, packed_view<host_space, 2, 4>(out), packed_view<host_space, 2>(rstd),
                             packed_view<host_space, 2, 4>(in), ops::none);
}
