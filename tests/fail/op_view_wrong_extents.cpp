// expect: weft::ops: a view's extents differ from the op's operand
#include "weft/ops/layernorm.hpp"
using namespace weft;
void f(float* out, float* mean, float* rstd, const float* in, const float* w, const float* b) {
  // layernorm<4, 8> takes (4, 8) rows; the input view is (8, 4).
  ops::layernorm_forward<4, 8>(host_context{}, packed_view<host_space, 4, 8>(out), packed_view<host_space, 4>(mean),
                               packed_view<host_space, 4>(rstd), packed_view<host_space, 8, 4>(in),
                               packed_view<host_space, 8>(w), packed_view<host_space, 8>(b));
}
