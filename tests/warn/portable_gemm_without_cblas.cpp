// expect: weft: float/double matrix products are built without CBLAS and use the portable loops
// Compiled by hand without WEFT_HAS_CBLAS, a float matrix product says so at build time.
#include <weft/ops/matmul.hpp>

int main() {
  float a[4]{}, b[4]{}, c[4]{};
  weft::ops::detail::gemm(false, false, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2);
}
