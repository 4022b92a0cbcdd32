// layernorm forward/backward: mean/variance formula, finite differences, accumulation,
// float vs double, and an N-row call against N one-row calls (threaded path).
#include "weft/ops/layernorm.hpp"  // layernorm_forward, layernorm_backward

#include <catch2/catch.hpp>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 6, C = 8;
}

TEST_CASE("layernorm forward matches the mean/variance formula", "[ops][layernorm]") {
  // An offset and spread so the mean matters.
  const auto inp = random_vector(N * C, 1, -2.0, 5.0), w = random_vector(C, 2), b = random_vector(C, 3);
  std::vector<double> out(N * C), mean(N), rstd(N);
  layernorm_forward<N, C>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
  std::vector<double> ref(N * C), ref_mean(N), ref_rstd(N);
  for (std::size_t n = 0; n < N; ++n) {
    long double m = 0, var = 0;
    for (std::size_t i = 0; i < C; ++i) m += inp[n * C + i];
    m /= C;
    for (std::size_t i = 0; i < C; ++i) var += (inp[n * C + i] - m) * (inp[n * C + i] - m);
    var /= C;  // biased, as torch
    const long double s = 1.0L / std::sqrt(var + 1e-5L);
    ref_mean[n] = double(m);
    ref_rstd[n] = double(s);
    for (std::size_t i = 0; i < C; ++i) ref[n * C + i] = double((inp[n * C + i] - m) * s * w[i] + b[i]);
  }
  CHECK(rel_err(out, ref) < 1e-14);
  CHECK(rel_err(mean, ref_mean) < 1e-14);
  CHECK(rel_err(rstd, ref_rstd) < 1e-14);
}

TEST_CASE("layernorm backward matches finite differences and accumulates", "[ops][layernorm]") {
  auto inp = random_vector(N * C, 4, -2.0, 3.0), w = random_vector(C, 5), b = random_vector(C, 6);
  const auto r = random_vector(N * C, 7);
  std::vector<double> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward<N, C>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
    return dot(out, r);
  };
  const auto fd_inp = fd_gradient(inp, loss), fd_w = fd_gradient(w, loss), fd_b = fd_gradient(b, loss);
  loss();  // mean, rstd of the unperturbed input
  const auto g0_inp = random_vector(N * C, 8), g0_w = random_vector(C, 9), g0_b = random_vector(C, 10);
  auto dinp = g0_inp, dw = g0_w, db = g0_b;
  layernorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), mean.data(),
                                                 rstd.data());
  CHECK(rel_err(minus(dinp, g0_inp), fd_inp) < 1e-6);
  CHECK(rel_err(minus(dw, g0_w), fd_w) < 1e-6);
  CHECK(rel_err(minus(db, g0_b), fd_b) < 1e-6);
}

TEST_CASE("layernorm in float agrees with double", "[ops][layernorm]") {
  const auto inp = random_vector(N * C, 11, -2.0, 3.0), w = random_vector(C, 12), b = random_vector(C, 13);
  const auto dout = random_vector(N * C, 14);
  std::vector<double> out(N * C), mean(N), rstd(N), dinp(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_forward<N, C>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
  layernorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                                                 rstd.data());
  const auto inp_f = convert<float>(inp), w_f = convert<float>(w), b_f = convert<float>(b);
  const auto dout_f = convert<float>(dout);
  std::vector<float> out_f(N * C), mean_f(N), rstd_f(N), dinp_f(N * C, 0.f), dw_f(C, 0.f), db_f(C, 0.f);
  layernorm_forward<N, C>(weft::host_context{}, out_f.data(), mean_f.data(), rstd_f.data(), inp_f.data(), w_f.data(), b_f.data());
  layernorm_backward<N, C>(weft::host_context{}, dinp_f.data(), dw_f.data(), db_f.data(), dout_f.data(), inp_f.data(), w_f.data(),
                                                 mean_f.data(), rstd_f.data());
  CHECK(rel_err(out_f, out) < 1e-5);
  CHECK(rel_err(rstd_f, rstd) < 1e-5);
  CHECK(rel_err(dinp_f, dinp) < 1e-5);
  CHECK(rel_err(dw_f, dw) < 1e-5);
  CHECK(rel_err(db_f, db) < 1e-5);
}

TEST_CASE("layernorm over many rows equals one row at a time", "[ops][layernorm]") {
  constexpr std::size_t BN = 64, BC = 700;  // above the threading threshold, ragged column blocks
  const auto inp = random_vector(BN * BC, 15), w = random_vector(BC, 16), b = random_vector(BC, 17);
  const auto dout = random_vector(BN * BC, 18);
  std::vector<double> out(BN * BC), mean(BN), rstd(BN), dinp(BN * BC, 0.0), dw(BC, 0.0), db(BC, 0.0);
  layernorm_forward<BN, BC>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
  layernorm_backward<BN, BC>(weft::host_context{}, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), mean.data(),
                                                   rstd.data());
  std::vector<double> out1(BN * BC), mean1(BN), rstd1(BN), dinp1(BN * BC, 0.0), dw1(BC, 0.0), db1(BC, 0.0);
  for (std::size_t n = 0; n < BN; ++n) {
    const std::size_t o = n * BC;
    layernorm_forward<1, BC>(weft::host_context{}, &out1[o], &mean1[n], &rstd1[n], &inp[o], w.data(), b.data());
    layernorm_backward<1, BC>(weft::host_context{}, &dinp1[o], dw1.data(), db1.data(), &dout[o], &inp[o], w.data(), &mean1[n],
                                                    &rstd1[n]);
  }
  CHECK(rel_err(out, out1) < 1e-14);
  CHECK(rel_err(dinp, dinp1) < 1e-14);
  CHECK(rel_err(dw, dw1) < 1e-12);
  CHECK(rel_err(db, db1) < 1e-12);
}

TEST_CASE("layernorm takes the model's epsilon", "[ops][layernorm]") {
  // A small spread (variance about 3e-3): an epsilon of 1e-2 changes every output.
  constexpr double eps = 1e-2;
  auto inp = random_vector(N * C, 21, -0.1, 0.1), w = random_vector(C, 22), b = random_vector(C, 23);
  std::vector<double> out(N * C), mean(N), rstd(N), out_default(N * C);
  layernorm_forward<N, C, eps>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
  std::vector<double> ref(N * C);
  for (std::size_t n = 0; n < N; ++n) {
    long double m = 0, var = 0;
    for (std::size_t i = 0; i < C; ++i) m += inp[n * C + i];
    m /= C;
    for (std::size_t i = 0; i < C; ++i) var += (inp[n * C + i] - m) * (inp[n * C + i] - m);
    const long double s = 1.0L / std::sqrt(var / C + (long double)eps);
    for (std::size_t i = 0; i < C; ++i) ref[n * C + i] = double((inp[n * C + i] - m) * s * w[i] + b[i]);
  }
  CHECK(rel_err(out, ref) < 1e-14);
  layernorm_forward<N, C>(weft::host_context{}, out_default.data(), mean.data(), rstd.data(), inp.data(), w.data(),
                          b.data());
  CHECK(rel_err(out_default, ref) > 0.05);  // the default epsilon gives another result

  const auto r = random_vector(N * C, 24);
  auto loss = [&] {
    layernorm_forward<N, C, eps>(weft::host_context{}, out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data());
    return dot(out, r);
  };
  const auto fd_inp = fd_gradient(inp, loss);
  loss();
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward<N, C>(weft::host_context{}, dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(),
                           mean.data(), rstd.data());
  CHECK(rel_err(dinp, fd_inp) < 1e-6);
}
