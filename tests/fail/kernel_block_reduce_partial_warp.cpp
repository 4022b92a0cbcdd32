// expect: weft::cuda::kernels::block_reduce_storage: the block size is not a multiple of 32
// The warp-shuffle reduction needs whole warps: 48 threads is one and a half.
#include "weft/backend/cuda/kernels/grid.hpp"

int main() {
  weft::cuda::kernels::block_reduce_storage<48, float> s;
  (void)s;
}
