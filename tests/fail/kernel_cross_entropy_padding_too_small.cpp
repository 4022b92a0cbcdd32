// expect: weft::cuda::kernels::cross_entropy: the padded vocabulary is smaller than the vocabulary
// A padded row of 96 columns cannot hold a vocabulary of 100.
#include "weft/backend/cuda/kernels/cross_entropy.hpp"

int main() {
  weft::cuda::kernels::cross_entropy_kernel<4, 100, 96, float> k{};
  (void)k;
}
