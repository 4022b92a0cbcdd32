// expect: weft::ops: the views of an element-wise op hold different numbers of elements
#include "weft/ops/copy.hpp"
using namespace weft;
void f(float* dst, const float* src) {
  ops::copy(host_context{}, packed_view<host_space, 4, 8>(dst), packed_view<host_space, 4, 7>(src));
}
