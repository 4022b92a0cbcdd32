// expect: weft::ops: a view lives in another memory space than the execution context's
#include "weft/ops/gelu.hpp"
using namespace weft;
// A context whose ops work on device memory (the CUDA context's memory space), without CUDA.
struct device_like_context {
  using memory_space = device_space;
};
void f(float* out, const float* in) {
  ops::gelu_forward<16>(device_like_context{}, packed_view<host_space, 16>(out), packed_view<host_space, 16>(in));
}
