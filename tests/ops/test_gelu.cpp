// gelu (tanh form) forward/backward: the formula written out, finite differences,
// accumulation, float vs double.
#include "weft/ops/gelu.hpp"  // gelu_forward, gelu_backward

#include <catch2/catch.hpp>

#include <numbers>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 48;
}

TEST_CASE("gelu forward matches the tanh formula and is close to the erf form", "[ops][gelu]") {
  const auto inp = random_vector(N, 1, -4.0, 4.0);
  std::vector<double> out(N);
  gelu_forward<N>(weft::host_context{}, out.data(), inp.data());
  std::vector<double> ref(N), exact(N);
  for (std::size_t i = 0; i < N; ++i) {
    const double x = inp[i];
    ref[i] = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    exact[i] = 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  }
  CHECK(rel_err(out, ref) < 1e-15);
  CHECK(rel_err(out, exact) < 1e-3);  // the approximation is a close one, not the same function
}

TEST_CASE("gelu backward matches finite differences and accumulates", "[ops][gelu]") {
  auto inp = random_vector(N, 2, -4.0, 4.0);
  const auto r = random_vector(N, 3);
  auto loss = [&] {
    std::vector<double> out(N);
    gelu_forward<N>(weft::host_context{}, out.data(), inp.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(inp, loss);
  const auto g0 = random_vector(N, 4);
  auto dinp = g0;
  gelu_backward<N>(weft::host_context{}, dinp.data(), inp.data(), r.data());
  CHECK(rel_err(minus(dinp, g0), fd) < 1e-6);
}

TEST_CASE("gelu in float agrees with double, also in place and threaded", "[ops][gelu]") {
  constexpr std::size_t BN = 40000;  // above the threading threshold
  const auto inp = random_vector(BN, 5, -5.0, 5.0), dout = random_vector(BN, 6);
  std::vector<double> out(BN), dinp(BN, 0.0);
  gelu_forward<BN>(weft::host_context{}, out.data(), inp.data());
  gelu_backward<BN>(weft::host_context{}, dinp.data(), inp.data(), dout.data());
  auto io_f = convert<float>(inp);
  const auto inp_f = io_f, dout_f = convert<float>(dout);
  std::vector<float> dinp_f(BN, 0.f);
  gelu_backward<BN>(weft::host_context{}, dinp_f.data(), inp_f.data(), dout_f.data());
  gelu_forward<BN>(weft::host_context{}, io_f.data(), io_f.data());  // out may alias inp
  CHECK(rel_err(io_f, out) < 1e-6);
  CHECK(rel_err(dinp_f, dinp) < 1e-6);
}

// ---- the exact form (gelu_form::erf: PyTorch's nn.GELU(), GPT-NeoX, BERT) ----

TEST_CASE("exact gelu forward matches the erf formula, not the tanh one", "[ops][gelu]") {
  const auto inp = random_vector(N, 11, -6.0, 6.0);
  std::vector<double> out(N), tanh_out(N);
  gelu_forward<N, weft::gelu_form::erf>(weft::host_context{}, out.data(), inp.data());
  gelu_forward<N>(weft::host_context{}, tanh_out.data(), inp.data());
  std::vector<double> exact(N);
  for (std::size_t i = 0; i < N; ++i) {
    // an independent spelling: Φ(x) = erfc(-x / sqrt 2) / 2
    const long double x = inp[i];
    exact[i] = double(x * 0.5L * std::erfc(-x / std::numbers::sqrt2_v<long double>));
  }
  CHECK(rel_err(out, exact) < 1e-15);
  CHECK(rel_err(tanh_out, exact) > 1e-5);  // the forms differ measurably
}

TEST_CASE("exact gelu backward matches finite differences and accumulates", "[ops][gelu]") {
  auto inp = random_vector(N, 12, -6.0, 6.0);
  const auto r = random_vector(N, 13);
  auto loss = [&] {
    std::vector<double> out(N);
    gelu_forward<N, weft::gelu_form::erf>(weft::host_context{}, out.data(), inp.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(inp, loss);
  const auto g0 = random_vector(N, 14);
  auto dinp = g0;
  gelu_backward<N, weft::gelu_form::erf>(weft::host_context{}, dinp.data(), inp.data(), r.data());
  CHECK(rel_err(minus(dinp, g0), fd) < 1e-6);
}

TEST_CASE("exact gelu in float and bf16 agrees with double, threaded", "[ops][gelu]") {
  constexpr std::size_t BN = 40000;
  const auto inp = random_vector(BN, 15, -5.0, 5.0), dout = random_vector(BN, 16);
  std::vector<double> out(BN), dinp(BN, 0.0);
  gelu_forward<BN, weft::gelu_form::erf>(weft::host_context{}, out.data(), inp.data());
  gelu_backward<BN, weft::gelu_form::erf>(weft::host_context{}, dinp.data(), inp.data(), dout.data());
  const auto inp_f = convert<float>(inp), dout_f = convert<float>(dout);
  std::vector<float> out_f(BN), dinp_f(BN, 0.f);
  gelu_forward<BN, weft::gelu_form::erf>(weft::host_context{}, out_f.data(), inp_f.data());
  gelu_backward<BN, weft::gelu_form::erf>(weft::host_context{}, dinp_f.data(), inp_f.data(), dout_f.data());
  CHECK(rel_err(out_f, out) < 1e-6);
  CHECK(rel_err(dinp_f, dinp) < 1e-6);
}
