// expect: weft::ops: this op reads its operands dense and row-major, and the view is strided or transposed
#include "weft/ops/swiglu.hpp"
using namespace weft;
void f(float* out, const float* in) {
  // swiglu<6, 3> reads (6, 6) rows; the transpose of a dense (6, 6) view is not dense row-major.
  ops::swiglu_forward<6, 3>(host_context{}, packed_view<host_space, 6, 3>(out), transpose(packed_view<host_space, 6, 6>(in)));
}
