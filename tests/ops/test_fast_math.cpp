// The vectorisable float exp / tanh / sigmoid / sqrt used by gelu, swiglu, cross-entropy and
// adamw: accuracy against the double std functions over their ranges, and the edges.
#include "weft/ops/detail/fast_math.hpp"  // exp_fast, tanh_fast, sigmoid_fast, sqrt_fast

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace weft::ops::detail;

TEST_CASE("exp_fast is within ~1 ulp of exp on [-87, 88] and saturates outside", "[ops][fast_math]") {
  double worst = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.00731f) {
    const double ref = std::exp(double(x));
    worst = std::max(worst, std::abs(double(exp_fast(x)) - ref) / ref);
  }
  CHECK(worst < 2e-7);
  CHECK(exp_fast(0.0f) == 1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {-100.0f, -1e30f, -inf}) {
    CHECK(exp_fast(x) >= 0.0f);
    CHECK(exp_fast(x) < 1e-37f);
  }
  for (float x : {100.0f, 1e30f, inf}) {
    CHECK(std::isfinite(exp_fast(x)));
    CHECK(exp_fast(x) > 1e38f);
  }
}

TEST_CASE("tanh_fast and sigmoid_fast match the double functions", "[ops][fast_math]") {
  double tanh_abs = 0, sigmoid_rel = 0;
  for (float u = -30.0f; u < 30.0f; u += 0.00377f) {
    tanh_abs = std::max(tanh_abs, std::abs(double(tanh_fast(u)) - std::tanh(double(u))));
    const double sig = 1.0 / (1.0 + std::exp(-double(u)));
    sigmoid_rel = std::max(sigmoid_rel, std::abs(double(sigmoid_fast(u)) - sig) / sig);
  }
  CHECK(tanh_abs < 2e-7);
  CHECK(sigmoid_rel < 3e-7);
  CHECK(tanh_fast(0.0f) == 0.0f);
  CHECK(tanh_fast(1e30f) == 1.0f);
  CHECK(tanh_fast(-1e30f) == -1.0f);
  CHECK(sigmoid_fast(-1e30f) < 1e-37f);
  CHECK(sigmoid_fast(1e30f) == 1.0f);
}

TEST_CASE("sqrt_fast is within ~1 ulp of sqrt, and sqrt_fast(0) = 0", "[ops][fast_math]") {
  double worst = 0;
  for (float x = 1e-30f; x < 1e30f; x *= 1.0013f) {
    const double ref = std::sqrt(double(x));
    worst = std::max(worst, std::abs(double(sqrt_fast(x)) - ref) / ref);
  }
  CHECK(worst < 3e-7);
  CHECK(sqrt_fast(0.0f) == 0.0f);
}

TEST_CASE("the fast functions are the std ones for double", "[ops][fast_math]") {
  for (double x : {-3.5, -0.25, 0.0, 0.7, 12.0}) {
    CHECK(exp_fast(x) == std::exp(x));
    CHECK(tanh_fast(x) == std::tanh(x));
    CHECK(sigmoid_fast(x) == 1.0 / (1.0 + std::exp(-x)));
  }
  CHECK(sqrt_fast(2.0) == std::sqrt(2.0));
}
