// The GEMM-efficiency curve: bounded by e_max, rising and saturating in every dimension.
#include <weft/planner/gemm_efficiency.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

TEST_CASE("gemm efficiency rises with each dimension and stays below e_max", "[planner][gemm]") {
  const gemm_curve c = gpu_gemm_curve();
  double last = 0;
  for (double d : {16.0, 64.0, 256.0, 1024.0, 8192.0, 65536.0}) {
    const double e = gemm_efficiency(d, d, d, c);
    CHECK(e > last);
    CHECK(e < c.e_max);
    last = e;
  }
  CHECK(last > 0.95 * c.e_max);
  // a dimension at its half-point halves that factor
  CHECK(gemm_efficiency(c.m0, 1e12, 1e12, c) == Approx(c.e_max / 2).epsilon(1e-6));
  // a thin product (attention scores with 64-wide heads) is slower per FLOP than a square one
  CHECK(gemm_seconds(2048, 2048, 64, 312e12) / (2.0 * 2048 * 2048 * 64) >
        gemm_seconds(2048, 2048, 2048, 312e12) / (2.0 * 2048 * 2048 * 2048));
}
