// expect: weft::ops: the op writes this operand, but the view's elements are const
#include "weft/ops/residual.hpp"
using namespace weft;
void f(const float* out, const float* a, const float* b) {
  ops::residual_forward<12>(host_context{}, packed_view<host_space, 12>(out), packed_view<host_space, 12>(a),
                            packed_view<host_space, 12>(b));
}
