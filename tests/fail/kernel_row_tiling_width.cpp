// expect: weft::cuda::kernels::row_tiling: the vector width does not divide the row
// Vectors of 4 cannot tile a row of 10 columns.
#include "weft/backend/cuda/kernels/tiling.hpp"

int main() {
  weft::cuda::kernels::row_tiling<10, 32, 4> t;
  (void)t;
}
