// expect: weft::cuda::kernels::rope: the rotary dimension is odd, 0 or above the head dimension
// Rotate-half pairs i with i + D/2: D = 15 has no halves.
#include "weft/backend/cuda/kernels/rope.hpp"

int main() {
  weft::cuda::kernels::rope_kernel<1, 4, 2, 1, 15, 10000, 15, weft::no_rope_scaling, float, false> k{};
  (void)k;
}
