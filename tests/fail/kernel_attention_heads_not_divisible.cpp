// expect: weft::cuda::kernels::attention: heads is not divisible by kv_heads
// 6 query heads cannot share 4 kv heads evenly.
#include "weft/backend/cuda/kernels/attention.hpp"

int main() {
  weft::cuda::kernels::flash_attention_forward_kernel<1, 8, 6, 4, 64, float> k{};
  (void)k;
}
