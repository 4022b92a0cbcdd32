// rmsnorm forward/backward: the root-mean-square formula, finite differences, accumulation,
// float vs double, and an N-row call against N one-row calls (threaded path).
#include "weft/ops/rmsnorm.hpp"  // rmsnorm_forward, rmsnorm_backward

#include <catch2/catch.hpp>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 6, C = 8;
}

TEST_CASE("rmsnorm forward matches the root-mean-square formula", "[ops][rmsnorm]") {
  const auto inp = random_vector(N * C, 1, -2.0, 3.0), w = random_vector(C, 2);
  std::vector<double> out(N * C), rstd(N);
  rmsnorm_forward<N, C>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
  std::vector<double> ref(N * C), ref_rstd(N);
  for (std::size_t n = 0; n < N; ++n) {
    long double ms = 0;
    for (std::size_t i = 0; i < C; ++i) ms += (long double)inp[n * C + i] * inp[n * C + i];
    const long double s = 1.0L / std::sqrt(ms / C + 1e-5L);
    ref_rstd[n] = double(s);
    for (std::size_t i = 0; i < C; ++i) ref[n * C + i] = double(inp[n * C + i] * s * w[i]);
  }
  CHECK(rel_err(out, ref) < 1e-14);
  CHECK(rel_err(rstd, ref_rstd) < 1e-14);
}

TEST_CASE("rmsnorm backward matches finite differences and accumulates", "[ops][rmsnorm]") {
  auto inp = random_vector(N * C, 3, -2.0, 3.0), w = random_vector(C, 4);
  const auto r = random_vector(N * C, 5);
  std::vector<double> out(N * C), rstd(N);
  auto loss = [&] {
    rmsnorm_forward<N, C>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
    return dot(out, r);
  };
  const auto fd_inp = fd_gradient(inp, loss), fd_w = fd_gradient(w, loss);
  loss();
  const auto g0_inp = random_vector(N * C, 6), g0_w = random_vector(C, 7);
  auto dinp = g0_inp, dw = g0_w;
  rmsnorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), r.data(), inp.data(), w.data(), rstd.data());
  CHECK(rel_err(minus(dinp, g0_inp), fd_inp) < 1e-6);
  CHECK(rel_err(minus(dw, g0_w), fd_w) < 1e-6);
}

TEST_CASE("rmsnorm in float agrees with double", "[ops][rmsnorm]") {
  const auto inp = random_vector(N * C, 8, -2.0, 3.0), w = random_vector(C, 9), dout = random_vector(N * C, 10);
  std::vector<double> out(N * C), rstd(N), dinp(N * C, 0.0), dw(C, 0.0);
  rmsnorm_forward<N, C>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
  rmsnorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data());
  const auto inp_f = convert<float>(inp), w_f = convert<float>(w), dout_f = convert<float>(dout);
  std::vector<float> out_f(N * C), rstd_f(N), dinp_f(N * C, 0.f), dw_f(C, 0.f);
  rmsnorm_forward<N, C>(weft::host_context{}, out_f.data(), rstd_f.data(), inp_f.data(), w_f.data());
  rmsnorm_backward<N, C>(weft::host_context{}, dinp_f.data(), dw_f.data(), dout_f.data(), inp_f.data(), w_f.data(), rstd_f.data());
  CHECK(rel_err(out_f, out) < 1e-5);
  CHECK(rel_err(rstd_f, rstd) < 1e-5);
  CHECK(rel_err(dinp_f, dinp) < 1e-5);
  CHECK(rel_err(dw_f, dw) < 1e-5);
}

TEST_CASE("rmsnorm over many rows equals one row at a time", "[ops][rmsnorm]") {
  constexpr std::size_t BN = 64, BC = 700;
  const auto inp = random_vector(BN * BC, 11), w = random_vector(BC, 12), dout = random_vector(BN * BC, 13);
  std::vector<double> out(BN * BC), rstd(BN), dinp(BN * BC, 0.0), dw(BC, 0.0);
  rmsnorm_forward<BN, BC>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
  rmsnorm_backward<BN, BC>(weft::host_context{}, dinp.data(), dw.data(), dout.data(), inp.data(), w.data(), rstd.data());
  std::vector<double> out1(BN * BC), rstd1(BN), dinp1(BN * BC, 0.0), dw1(BC, 0.0);
  for (std::size_t n = 0; n < BN; ++n) {
    const std::size_t o = n * BC;
    rmsnorm_forward<1, BC>(weft::host_context{}, &out1[o], &rstd1[n], &inp[o], w.data());
    rmsnorm_backward<1, BC>(weft::host_context{}, &dinp1[o], dw1.data(), &dout[o], &inp[o], w.data(), &rstd1[n]);
  }
  CHECK(rel_err(out, out1) < 1e-14);
  CHECK(rel_err(dinp, dinp1) < 1e-14);
  CHECK(rel_err(dw, dw1) < 1e-12);
}

TEST_CASE("rmsnorm takes the model's epsilon", "[ops][rmsnorm]") {
  // Small inputs (mean square about 3e-3): an epsilon of 1e-2 changes every output.
  constexpr double eps = 1e-2;
  auto inp = random_vector(N * C, 11, -0.1, 0.1), w = random_vector(C, 12);
  std::vector<double> out(N * C), rstd(N), out_default(N * C), rstd_default(N);
  rmsnorm_forward<N, C, eps>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
  rmsnorm_forward<N, C>(weft::host_context{}, out_default.data(), rstd_default.data(), inp.data(), w.data());
  std::vector<double> ref(N * C), ref_rstd(N);
  for (std::size_t n = 0; n < N; ++n) {
    long double ms = 0;
    for (std::size_t i = 0; i < C; ++i) ms += (long double)inp[n * C + i] * inp[n * C + i];
    const long double s = 1.0L / std::sqrt(ms / C + (long double)eps);
    ref_rstd[n] = double(s);
    for (std::size_t i = 0; i < C; ++i) ref[n * C + i] = double(inp[n * C + i] * s * w[i]);
  }
  CHECK(rel_err(out, ref) < 1e-14);
  CHECK(rel_err(rstd, ref_rstd) < 1e-14);
  CHECK(rel_err(out_default, ref) > 0.1);  // the default epsilon gives another result
  STATIC_REQUIRE(rmsnorm_forward_op<N, C, eps>::eps == eps);
  STATIC_REQUIRE(rmsnorm_forward_op<N, C>::eps == 1e-5);

  // the backward reads the kept rstd, so it is right for any epsilon: finite differences
  const auto r = random_vector(N * C, 13);
  auto loss = [&] {
    rmsnorm_forward<N, C, eps>(weft::host_context{}, out.data(), rstd.data(), inp.data(), w.data());
    return dot(out, r);
  };
  const auto fd_inp = fd_gradient(inp, loss), fd_w = fd_gradient(w, loss);
  loss();
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0);
  rmsnorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), r.data(), inp.data(), w.data(), rstd.data());
  CHECK(rel_err(dinp, fd_inp) < 1e-6);
  CHECK(rel_err(dw, fd_w) < 1e-6);
}
