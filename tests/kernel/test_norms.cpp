// Layernorm (plain and fused with the residual add) and rmsnorm, forward and backward, on the
// emulated grid against the host ops in double. Sizes cover one sweep per row (C = 768), a
// masked partial warp (C = 100) and two sweeps with a masked tail (C = 5000); N = 37 leaves the
// last backward block short of rows, N = 1403 gives each row group of the backward several rows
// (norm_backward_shape) and a short last block too.
#include <weft/backend/cuda/kernels/layernorm.hpp>  // make_layernorm_*, make_residual_layernorm_forward
#include <weft/backend/cuda/kernels/rmsnorm.hpp>    // make_rmsnorm_*
#include <weft/ops/layernorm.hpp>
#include <weft/ops/residual.hpp>
#include <weft/ops/rmsnorm.hpp>

#include "kernel_check.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t N, std::size_t C>
void ref_layernorm_forward(double* out, double* mean, double* rstd, const double* in, const double* w,
                           const double* b) {
  weft::ops::layernorm_forward<N, C>(weft::host_context{}, out, mean, rstd, in, w, b);
}
template <std::size_t N, std::size_t C>
void ref_layernorm_backward(double* din, double* dw, double* db, const double* dout, const double* in,
                            const double* w, const double* mean, const double* rstd) {
  weft::ops::layernorm_backward<N, C>(weft::host_context{}, din, dw, db, dout, in, w, mean, rstd);
}
template <std::size_t N>
void ref_residual_forward(double* out, const double* a, const double* b) {
  weft::ops::residual_forward<N>(weft::host_context{}, out, a, b);
}
template <std::size_t N, std::size_t C>
void ref_rmsnorm_forward(double* out, double* rstd, const double* in, const double* w) {
  weft::ops::rmsnorm_forward<N, C>(weft::host_context{}, out, rstd, in, w);
}
template <std::size_t N, std::size_t C>
void ref_rmsnorm_backward(double* din, double* dw, const double* dout, const double* in, const double* w,
                          const double* rstd) {
  weft::ops::rmsnorm_backward<N, C>(weft::host_context{}, din, dw, dout, in, w, rstd);
}

std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

template <class T, std::size_t N, std::size_t C>
void layernorm_case() {
  const std::string tag = " N=" + std::to_string(N) + " C=" + std::to_string(C);
  std::mt19937 rng(40 + C);
  auto x = kcheck::random<T>(N * C, rng, -2, 3), w = kcheck::random<T>(C, rng, 0.5, 1.5),
       b = kcheck::random<T>(C, rng), res = kcheck::random<T>(N * C, rng);
  const auto rw = kcheck::widen(w), rb = kcheck::widen(b);

  // ---- forward, fused with the residual add: h = x + res, out = layernorm(h) ----
  std::vector<T> h(N * C), y(N * C);
  std::vector<float> mean(N), rstd(N);
  k::emulate_launch(k::make_residual_layernorm_forward<N, C>(h.data(), y.data(), mean.data(), rstd.data(), x.data(),
                                                             res.data(), w.data(), b.data()));
  std::vector<double> rh(N * C), ry(N * C), rmean(N), rrstd(N);
  ref_residual_forward<N * C>(rh.data(), kcheck::widen(x).data(), kcheck::widen(res).data());
  kcheck::check("residual+layernorm residual" + tag, h, rh, 1);
  // the layernorm reference reads the residual stream as stored (rounded to T)
  const auto rh_t = kcheck::widen(h);
  ref_layernorm_forward<N, C>(ry.data(), rmean.data(), rrstd.data(), rh_t.data(), rw.data(), rb.data());
  kcheck::check("residual+layernorm out" + tag, y, ry, 4);
  kcheck::check("residual+layernorm mean" + tag, mean, rmean, 64, 0.1);  // f32 stats
  kcheck::check("residual+layernorm rstd" + tag, rstd, rrstd, 64);

  // ---- forward, plain ----
  std::vector<T> y2(N * C);
  k::emulate_launch(k::make_layernorm_forward<N, C>(y2.data(), mean.data(), rstd.data(), h.data(), w.data(), b.data()));
  kcheck::check("layernorm_forward out" + tag, y2, ry, 4);

  // ---- backward: both sides use the reference's statistics (rounded to f32) ----
  auto dy = kcheck::random<T>(N * C, rng), dx = kcheck::random<T>(N * C, rng), dw = kcheck::random<T>(C, rng),
       db = kcheck::random<T>(C, rng);
  auto rdx = kcheck::widen(dx), rdw = kcheck::widen(dw), rdb = kcheck::widen(db);
  const auto fmean = to_f32(rmean), frstd = to_f32(rrstd);
  std::vector<float> scratch(k::layernorm_backward_scratch_v<N, C>);
  auto ks = k::make_layernorm_backward<N, C>(dx.data(), dw.data(), db.data(), dy.data(), h.data(), w.data(),
                                             fmean.data(), frstd.data(), scratch.data());
  k::emulate_launch(ks.rows);
  k::emulate_launch(ks.columns);
  ref_layernorm_backward<N, C>(rdx.data(), rdw.data(), rdb.data(), kcheck::widen(dy).data(), rh_t.data(), rw.data(),
                               kcheck::widen(fmean).data(), kcheck::widen(frstd).data());
  kcheck::check("layernorm_backward dinp" + tag, dx, rdx, 4);
  kcheck::check("layernorm_backward dweight" + tag, dw, rdw, 4);
  kcheck::check("layernorm_backward dbias" + tag, db, rdb, 4);
}

template <class T, std::size_t N, std::size_t C>
void rmsnorm_case() {
  const std::string tag = " N=" + std::to_string(N) + " C=" + std::to_string(C);
  std::mt19937 rng(50 + C);
  auto x = kcheck::random<T>(N * C, rng, -2, 3), w = kcheck::random<T>(C, rng, 0.5, 1.5);
  const auto rx = kcheck::widen(x), rw = kcheck::widen(w);
  std::vector<T> y(N * C);
  std::vector<float> rstd(N);
  k::emulate_launch(k::make_rmsnorm_forward<N, C>(y.data(), rstd.data(), x.data(), w.data()));
  std::vector<double> ry(N * C), rrstd(N);
  ref_rmsnorm_forward<N, C>(ry.data(), rrstd.data(), rx.data(), rw.data());
  kcheck::check("rmsnorm_forward out" + tag, y, ry, 4);
  kcheck::check("rmsnorm_forward rstd" + tag, rstd, rrstd, 64);

  auto dy = kcheck::random<T>(N * C, rng), dx = kcheck::random<T>(N * C, rng), dw = kcheck::random<T>(C, rng);
  auto rdx = kcheck::widen(dx), rdw = kcheck::widen(dw);
  const auto frstd = to_f32(rrstd);
  std::vector<float> scratch(k::rmsnorm_backward_scratch_v<N, C>);
  auto ks = k::make_rmsnorm_backward<N, C>(dx.data(), dw.data(), dy.data(), x.data(), w.data(), frstd.data(),
                                           scratch.data());
  k::emulate_launch(ks.rows);
  k::emulate_launch(ks.dweight);
  ref_rmsnorm_backward<N, C>(rdx.data(), rdw.data(), kcheck::widen(dy).data(), rx.data(), rw.data(),
                             kcheck::widen(frstd).data());
  kcheck::check("rmsnorm_backward dinp" + tag, dx, rdx, 4);
  kcheck::check("rmsnorm_backward dweight" + tag, dw, rdw, 4);
}
}  // namespace

TEMPLATE_TEST_CASE("layernorm fused with the residual add, forward and backward", "[kernel][layernorm]", float, bf16) {
  layernorm_case<TestType, 37, 768>();
  layernorm_case<TestType, 37, 100>();
  layernorm_case<TestType, 5, 5000>();
  layernorm_case<TestType, 1403, 768>();  // several rows per group, a short last block
}

TEMPLATE_TEST_CASE("rmsnorm forward and backward", "[kernel][rmsnorm]", float, bf16) {
  rmsnorm_case<TestType, 37, 768>();
  rmsnorm_case<TestType, 37, 100>();
  rmsnorm_case<TestType, 5, 5000>();
  rmsnorm_case<TestType, 1403, 768>();
}

// A model's own epsilon (norm_eps<>: Qwen's 1e-6, ...) reaches the kernels as their `eps`; with
// small inputs (mean square about 3e-3) an epsilon of 1e-2 moves every output by far more than
// the tolerance, so a kernel that kept the default would fail.
TEMPLATE_TEST_CASE("norm kernels take the model's epsilon", "[kernel][layernorm][rmsnorm]", float, bf16) {
  using T = TestType;
  constexpr std::size_t N = 37, C = 100;
  constexpr double eps = 1e-2;
  std::mt19937 rng(77);
  auto x = kcheck::random<T>(N * C, rng, -0.1, 0.1), w = kcheck::random<T>(C, rng, 0.5, 1.5),
       b = kcheck::random<T>(C, rng);
  const auto rx = kcheck::widen(x), rw = kcheck::widen(w), rb = kcheck::widen(b);
  std::vector<T> y(N * C);
  std::vector<float> mean(N), rstd(N);
  std::vector<double> ry(N * C), rmean(N), rrstd(N), ry_default(N * C);
  auto max_rel_diff = [](const std::vector<double>& a, const std::vector<double>& r) {
    double d = 0, m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - r[i])), m = std::max(m, std::abs(r[i]));
    return d / m;
  };

  k::emulate_launch(k::make_rmsnorm_forward<N, C>(y.data(), rstd.data(), x.data(), w.data(), float(eps)));
  weft::ops::rmsnorm_forward<N, C, eps>(weft::host_context{}, ry.data(), rrstd.data(), rx.data(), rw.data());
  kcheck::check("rmsnorm_forward eps=1e-2 out", y, ry, 4);
  kcheck::check("rmsnorm_forward eps=1e-2 rstd", rstd, rrstd, 64);
  weft::ops::rmsnorm_forward<N, C>(weft::host_context{}, ry_default.data(), rrstd.data(), rx.data(), rw.data());
  CHECK(max_rel_diff(ry, ry_default) > 0.1);  // the epsilon bites

  k::emulate_launch(k::make_layernorm_forward<N, C>(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                                    float(eps)));
  weft::ops::layernorm_forward<N, C, eps>(weft::host_context{}, ry.data(), rmean.data(), rrstd.data(), rx.data(),
                                          rw.data(), rb.data());
  kcheck::check("layernorm_forward eps=1e-2 out", y, ry, 4);
  kcheck::check("layernorm_forward eps=1e-2 rstd", rstd, rrstd, 64);
  weft::ops::layernorm_forward<N, C>(weft::host_context{}, ry_default.data(), rmean.data(), rrstd.data(), rx.data(),
                                     rw.data(), rb.data());
  CHECK(max_rel_diff(ry, ry_default) > 0.1);
}
