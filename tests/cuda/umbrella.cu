// nvcc compiles weft's host-safe umbrella header for sm_90a (compile and link; no GPU needed).
#include <weft/weft.hpp>

#include <cstdio>

using tile = weft::shape<weft::axis<"rows", 64>, weft::axis<"cols", 128>>;

__global__ void fill_tile(float* out) {
  // One thread per element of a (rows, cols) tile, using weft's compile-time shape.
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < tile::product) out[i] = static_cast<float>(i % tile::size_of<"cols">);
}

int main() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  std::printf("weft umbrella compiled by nvcc; cudaGetDeviceCount -> %d (%d devices)\n", static_cast<int>(e), n);
  return 0;
}
