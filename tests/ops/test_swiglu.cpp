// swiglu forward/backward: silu(gate) * up by definition, finite differences, accumulation,
// float vs double.
#include "weft/ops/swiglu.hpp"  // swiglu_forward, swiglu_backward

#include <catch2/catch.hpp>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 6, H = 8;
}

TEST_CASE("swiglu forward is silu(gate) * up on the two halves", "[ops][swiglu]") {
  const auto inp = random_vector(N * 2 * H, 1, -4.0, 4.0);
  std::vector<double> out(N * H);
  swiglu_forward<N, H>(weft::host_context{}, out.data(), inp.data());
  std::vector<double> ref(N * H);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t i = 0; i < H; ++i) {
      const double g = inp[n * 2 * H + i], u = inp[n * 2 * H + H + i];
      const double sigmoid = std::exp(g) / (1.0 + std::exp(g));
      ref[n * H + i] = g * sigmoid * u;
    }
  CHECK(rel_err(out, ref) < 1e-14);
}

TEST_CASE("swiglu backward matches finite differences and accumulates", "[ops][swiglu]") {
  auto inp = random_vector(N * 2 * H, 2, -4.0, 4.0);
  const auto r = random_vector(N * H, 3);
  auto loss = [&] {
    std::vector<double> out(N * H);
    swiglu_forward<N, H>(weft::host_context{}, out.data(), inp.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(inp, loss);
  const auto g0 = random_vector(N * 2 * H, 4);
  auto dinp = g0;
  swiglu_backward<N, H>(weft::host_context{}, dinp.data(), inp.data(), r.data());
  CHECK(rel_err(minus(dinp, g0), fd) < 1e-6);
}

TEST_CASE("swiglu in float agrees with double", "[ops][swiglu]") {
  constexpr std::size_t BN = 64, BH = 600;  // above the threading threshold
  const auto inp = random_vector(BN * 2 * BH, 5, -6.0, 6.0), dout = random_vector(BN * BH, 6);
  std::vector<double> out(BN * BH), dinp(BN * 2 * BH, 0.0);
  swiglu_forward<BN, BH>(weft::host_context{}, out.data(), inp.data());
  swiglu_backward<BN, BH>(weft::host_context{}, dinp.data(), inp.data(), dout.data());
  const auto inp_f = convert<float>(inp), dout_f = convert<float>(dout);
  std::vector<float> out_f(BN * BH), dinp_f(BN * 2 * BH, 0.f);
  swiglu_forward<BN, BH>(weft::host_context{}, out_f.data(), inp_f.data());
  swiglu_backward<BN, BH>(weft::host_context{}, dinp_f.data(), inp_f.data(), dout_f.data());
  CHECK(rel_err(out_f, out) < 1e-6);
  CHECK(rel_err(dinp_f, dinp) < 1e-6);
}
