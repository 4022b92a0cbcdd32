// GELU, SwiGLU, residual and bias-gradient kernels on the emulated grid against the host ops
// (double reference).
#include <weft/backend/cuda/kernels/column_sum.hpp>   // make_bias_backward, bias_backward_scratch_v
#include <weft/backend/cuda/kernels/elementwise.hpp>  // make_gelu_*, make_swiglu_*, make_geglu_*, make_residual_*
#include <weft/ops/gelu.hpp>
#include <weft/ops/matmul.hpp>
#include <weft/ops/residual.hpp>
#include <weft/ops/geglu.hpp>
#include <weft/ops/swiglu.hpp>

#include "kernel_check.hpp"

namespace k = weft::cuda::kernels;
using weft::bf16;

#include <algorithm>
#include <cmath>

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t N, weft::gelu_form Form = weft::gelu_form::tanh>
void ref_gelu_forward(double* out, const double* in) { weft::ops::gelu_forward<N, Form>(weft::host_context{}, out, in); }
template <std::size_t N, weft::gelu_form Form = weft::gelu_form::tanh>
void ref_gelu_backward(double* din, const double* in, const double* dout) {
  weft::ops::gelu_backward<N, Form>(weft::host_context{}, din, in, dout);
}
template <std::size_t N, std::size_t H>
void ref_swiglu_forward(double* out, const double* in) { weft::ops::swiglu_forward<N, H>(weft::host_context{}, out, in); }
template <std::size_t N, std::size_t H>
void ref_swiglu_backward(double* din, const double* in, const double* dout) {
  weft::ops::swiglu_backward<N, H>(weft::host_context{}, din, in, dout);
}
template <std::size_t N, std::size_t H>
void ref_geglu_forward(double* out, const double* in) { weft::ops::geglu_forward<N, H>(weft::host_context{}, out, in); }
template <std::size_t N, std::size_t H>
void ref_geglu_backward(double* din, const double* in, const double* dout) {
  weft::ops::geglu_backward<N, H>(weft::host_context{}, din, in, dout);
}
template <std::size_t N>
void ref_residual_forward(double* out, const double* a, const double* b) {
  weft::ops::residual_forward<N>(weft::host_context{}, out, a, b);
}
template <std::size_t N>
void ref_residual_backward(double* da, double* db, const double* dout) {
  weft::ops::residual_backward<N>(weft::host_context{}, da, db, dout);
}
}  // namespace

TEMPLATE_TEST_CASE("gelu forward and backward", "[kernel][gelu]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 4 * 3 * 128 + 8;  // not a multiple of a block's sweep
  std::mt19937 rng(10);
  auto x = kcheck::random<T>(N, rng, -4, 4), dy = kcheck::random<T>(N, rng), dx = kcheck::random<T>(N, rng);
  std::vector<T> y(N);
  k::emulate_launch(k::make_gelu_forward<N>(y.data(), x.data()));
  const auto rx = kcheck::widen(x), rdy = kcheck::widen(dy);
  std::vector<double> ry(N);
  ref_gelu_forward<N>(ry.data(), rx.data());
  kcheck::check("gelu_forward", y, ry, 4);
  auto rdx = kcheck::widen(dx);
  k::emulate_launch(k::make_gelu_backward<N>(dx.data(), x.data(), dy.data()));
  ref_gelu_backward<N>(rdx.data(), rx.data(), rdy.data());
  kcheck::check("gelu_backward", dx, rdx, 4);
}

TEMPLATE_TEST_CASE("exact (erf) gelu forward and backward", "[kernel][gelu]", float, bf16) {
  using T = TestType;
  constexpr auto erf = weft::gelu_form::erf;
  constexpr std::size_t N = 4 * 3 * 128 + 8;
  std::mt19937 rng(12);
  auto x = kcheck::random<T>(N, rng, -6, 6), dy = kcheck::random<T>(N, rng), dx = kcheck::random<T>(N, rng);
  std::vector<T> y(N);
  k::emulate_launch(k::make_gelu_forward<N, erf>(y.data(), x.data()));
  const auto rx = kcheck::widen(x), rdy = kcheck::widen(dy);
  std::vector<double> ry(N), ry_tanh(N);
  ref_gelu_forward<N, erf>(ry.data(), rx.data());
  kcheck::check("gelu_forward erf", y, ry, 4);
  // the tanh form is another function: the kernel must not have computed it
  ref_gelu_forward<N>(ry_tanh.data(), rx.data());
  double apart = 0;
  for (std::size_t i = 0; i < N; ++i) apart = std::max(apart, std::abs(ry[i] - ry_tanh[i]));
  CHECK(apart > 1e-4);
  auto rdx = kcheck::widen(dx);
  k::emulate_launch(k::make_gelu_backward<N, erf>(dx.data(), x.data(), dy.data()));
  ref_gelu_backward<N, erf>(rdx.data(), rx.data(), rdy.data());
  kcheck::check("gelu_backward erf", dx, rdx, 4);
}

TEMPLATE_TEST_CASE("swiglu forward and backward", "[kernel][swiglu]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 37, H = 200;
  std::mt19937 rng(11);
  auto in = kcheck::random<T>(N * 2 * H, rng, -3, 3), dy = kcheck::random<T>(N * H, rng),
       din = kcheck::random<T>(N * 2 * H, rng);
  std::vector<T> y(N * H);
  k::emulate_launch(k::make_swiglu_forward<N, H>(y.data(), in.data()));
  const auto rin = kcheck::widen(in), rdy = kcheck::widen(dy);
  std::vector<double> ry(N * H);
  ref_swiglu_forward<N, H>(ry.data(), rin.data());
  kcheck::check("swiglu_forward", y, ry, 4);
  auto rdin = kcheck::widen(din);
  k::emulate_launch(k::make_swiglu_backward<N, H>(din.data(), in.data(), dy.data()));
  ref_swiglu_backward<N, H>(rdin.data(), rin.data(), rdy.data());
  kcheck::check("swiglu_backward", din, rdin, 4);
}

TEMPLATE_TEST_CASE("geglu forward and backward", "[kernel][geglu]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 29, H = 136;
  std::mt19937 rng(12);
  auto in = kcheck::random<T>(N * 2 * H, rng, -3, 3), dy = kcheck::random<T>(N * H, rng),
       din = kcheck::random<T>(N * 2 * H, rng);
  std::vector<T> y(N * H);
  k::emulate_launch(k::make_geglu_forward<N, H>(y.data(), in.data()));
  const auto rin = kcheck::widen(in), rdy = kcheck::widen(dy);
  std::vector<double> ry(N * H);
  ref_geglu_forward<N, H>(ry.data(), rin.data());
  kcheck::check("geglu_forward", y, ry, 4);
  auto rdin = kcheck::widen(din);
  k::emulate_launch(k::make_geglu_backward<N, H>(din.data(), in.data(), dy.data()));
  ref_geglu_backward<N, H>(rdin.data(), rin.data(), rdy.data());
  kcheck::check("geglu_backward", din, rdin, 4);
}

TEMPLATE_TEST_CASE("residual forward and backward", "[kernel][residual]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 5 * 768 + 2;
  std::mt19937 rng(12);
  auto a = kcheck::random<T>(N, rng), b = kcheck::random<T>(N, rng), g = kcheck::random<T>(N, rng);
  auto da = kcheck::random<T>(N, rng), db = kcheck::random<T>(N, rng);
  std::vector<T> y(N);
  k::emulate_launch(k::make_residual_forward<N>(y.data(), a.data(), b.data()));
  std::vector<double> ry(N);
  const auto ra = kcheck::widen(a), rb = kcheck::widen(b), rg = kcheck::widen(g);
  ref_residual_forward<N>(ry.data(), ra.data(), rb.data());
  kcheck::check("residual_forward", y, ry, 1);
  auto rda = kcheck::widen(da), rdb = kcheck::widen(db);
  k::emulate_launch(k::make_residual_backward<N>(da.data(), db.data(), g.data()));
  ref_residual_backward<N>(rda.data(), rdb.data(), rg.data());
  kcheck::check("residual_backward da", da, rda, 1);
  kcheck::check("residual_backward db", db, rdb, 1);
}

// ---- bias gradient: per-block partial column sums, then an ordered column sum ----
namespace {
template <std::size_t N, std::size_t OC>
void ref_bias_backward(double* db, const double* dout) { weft::ops::bias_backward<N, OC>(weft::host_context{}, db, dout); }
}  // namespace

TEMPLATE_TEST_CASE("bias gradient, two passes, deterministic", "[kernel][bias_backward]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 150, OC = 300;  // 3 row chunks, the last short; 3 column blocks, the last short
  std::mt19937 rng(13);
  auto dout = kcheck::random<T>(N * OC, rng), db = kcheck::random<T>(OC, rng);
  auto rdb = kcheck::widen(db);
  std::vector<float> scratch(k::bias_backward_scratch_v<N, OC>);
  auto ks = k::make_bias_backward<N, OC>(db.data(), dout.data(), scratch.data());
  k::emulate_launch(ks.partial);
  k::emulate_launch(ks.total);
  ref_bias_backward<N, OC>(rdb.data(), kcheck::widen(dout).data());
  kcheck::check("bias_backward", db, rdb, 4);
}
