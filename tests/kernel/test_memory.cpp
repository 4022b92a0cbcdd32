// Memory kernels (cast, fill/zero, accumulate, scale, clip) on the emulated grid against the host ops.
#include <weft/backend/cuda/kernels/memory.hpp>  // make_cast, make_fill, make_zero, make_accumulate, make_clip
#include <weft/ops/accumulate.hpp>
#include <weft/ops/clip.hpp>
#include <weft/ops/copy.hpp>
#include <weft/ops/fill.hpp>
#include <weft/ops/sum_squares.hpp>

#include "kernel_check.hpp"

#include <cmath>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
void ref_accumulate(double* y, const double* x, std::size_t n, double alpha) {
  weft::ops::accumulate(weft::host_context{}, y, x, n, alpha);
}
void ref_fill(double* x, std::size_t n, double v) { weft::ops::fill(weft::host_context{}, x, n, v); }
void ref_clip(double* g, std::size_t n, double norm, double max_norm) {
  weft::ops::clip(weft::host_context{}, g, n, norm, max_norm);
}
void ref_copy(double* dst, const double* src, std::size_t n) { weft::ops::copy(weft::host_context{}, dst, src, n); }
double ref_sum_squares(const double* x, std::size_t n) { return weft::ops::sum_squares(weft::host_context{}, x, n); }
}  // namespace

TEMPLATE_TEST_CASE("cast f32 <-> bf16 rounds to nearest even and widens exactly", "[kernel][memory]", float) {
  std::mt19937 rng(1);
  const std::size_t n = 3001;
  auto x = kcheck::random<float>(n, rng, -100, 100);
  std::vector<bf16> b(n);
  k::emulate_launch(k::make_cast(b.data(), x.data(), n));
  std::vector<double> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = static_cast<double>(x[i]);
  kcheck::check("cast f32->bf16", b, ref, 0.5);  // at most half an ulp
  for (std::size_t i = 0; i < n; ++i) REQUIRE(b[i].bits == bf16(x[i]).bits);
  std::vector<float> back(n);
  k::emulate_launch(k::make_cast(back.data(), b.data(), n));
  for (std::size_t i = 0; i < n; ++i) REQUIRE(back[i] == static_cast<float>(b[i]));
}

TEMPLATE_TEST_CASE("fill and zero", "[kernel][memory]", float, bf16) {
  const std::size_t n = 1000;
  std::vector<TestType> x(n, TestType(1.0f));
  k::emulate_launch(k::make_fill(x.data(), n - 1, TestType(2.5f)));
  std::vector<double> ref(n, 1.0);
  ref_fill(ref.data(), n - 1, 2.5);
  kcheck::check("fill", x, ref, 0);
  k::emulate_launch(k::make_zero(x.data() + 10, 500));
  std::vector<double> ref0(500, 0.0);
  ref_fill(ref.data() + 10, 500, 0.0);
  kcheck::check("zero", x, ref, 0);
}

TEMPLATE_TEST_CASE("copy", "[kernel][memory]", float, bf16) {
  std::mt19937 rng(4);
  const std::size_t n = 4097;
  auto src = kcheck::random<TestType>(n, rng);
  std::vector<TestType> dst(n + 1, TestType(7.0f));
  k::emulate_launch(k::make_copy(dst.data(), src.data(), n));
  std::vector<double> ref(n + 1, 7.0);
  ref_copy(ref.data(), kcheck::widen(src).data(), n);
  kcheck::check("copy", dst, ref, 0);  // exact, and the element past n untouched
}

TEMPLATE_TEST_CASE("accumulate y += alpha * x", "[kernel][memory]", float, bf16) {
  std::mt19937 rng(2);
  const std::size_t n = 70000;  // more than one sweep of the grid
  auto y = kcheck::random<TestType>(n, rng), x = kcheck::random<TestType>(n, rng);
  auto ry = kcheck::widen(y);
  const auto rx = kcheck::widen(x);
  k::emulate_launch(k::make_accumulate(y.data(), x.data(), n, 0.75f));
  ref_accumulate(ry.data(), rx.data(), n, 0.75);
  kcheck::check("accumulate", y, ry, 1.0);
}

TEMPLATE_TEST_CASE("clip scales by max_norm / norm when the norm exceeds it", "[kernel][memory]", float, bf16) {
  std::mt19937 rng(3);
  const std::size_t n = 5000;
  auto g = kcheck::random<TestType>(n, rng, -2, 2);
  auto rg = kcheck::widen(g);
  const double ss = ref_sum_squares(rg.data(), n);
  const double max_norm = std::sqrt(ss) / 3;
  auto kept = g;
  const double big = 1e30;
  k::emulate_launch(k::make_clip(kept.data(), n, &big, -1.0));  // clipping off: untouched
  for (std::size_t i = 0; i < n; ++i) REQUIRE(kept[i] == g[i]);
  k::emulate_launch(k::make_clip(g.data(), n, &ss, max_norm));
  ref_clip(rg.data(), n, std::sqrt(ss), max_norm);
  kcheck::check("clip", g, rg, 1.0);
}
