// geglu forward/backward: gelu(gate) * up by definition (tanh GELU, Gemma's gelu_pytorch_tanh),
// finite differences, accumulation, float vs double.
#include "weft/ops/geglu.hpp"  // geglu_forward, geglu_backward

#include <catch2/catch.hpp>

#include "ops_test_util.hpp"

#include <cmath>

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 6, H = 8;
}

TEST_CASE("geglu forward is gelu(gate) * up on the two halves", "[ops][geglu]") {
  const auto inp = random_vector(N * 2 * H, 1, -4.0, 4.0);
  std::vector<double> out(N * H);
  geglu_forward<N, H>(weft::host_context{}, out.data(), inp.data());
  std::vector<double> ref(N * H);
  const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t i = 0; i < H; ++i) {
      const long double g = inp[n * 2 * H + i], u = inp[n * 2 * H + H + i];
      ref[n * H + i] = static_cast<double>(0.5L * g * (1 + std::tanh(k * (g + 0.044715L * g * g * g))) * u);
    }
  CHECK(rel_err(out, ref) < 1e-14);
}

TEST_CASE("geglu backward matches finite differences and accumulates", "[ops][geglu]") {
  auto inp = random_vector(N * 2 * H, 2, -4.0, 4.0);
  const auto r = random_vector(N * H, 3);
  auto loss = [&] {
    std::vector<double> out(N * H);
    geglu_forward<N, H>(weft::host_context{}, out.data(), inp.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(inp, loss);
  const auto g0 = random_vector(N * 2 * H, 4);
  auto dinp = g0;
  geglu_backward<N, H>(weft::host_context{}, dinp.data(), inp.data(), r.data());
  CHECK(rel_err(minus(dinp, g0), fd) < 1e-6);
}

TEST_CASE("geglu in float agrees with double", "[ops][geglu]") {
  constexpr std::size_t BN = 64, BH = 600;  // above the threading threshold
  const auto inp = random_vector(BN * 2 * BH, 5, -6.0, 6.0), dout = random_vector(BN * BH, 6);
  std::vector<double> out(BN * BH), dinp(BN * 2 * BH, 0.0);
  geglu_forward<BN, BH>(weft::host_context{}, out.data(), inp.data());
  geglu_backward<BN, BH>(weft::host_context{}, dinp.data(), inp.data(), dout.data());
  const auto inp_f = convert<float>(inp), dout_f = convert<float>(dout);
  std::vector<float> out_f(BN * BH), dinp_f(BN * 2 * BH, 0.f);
  geglu_forward<BN, BH>(weft::host_context{}, out_f.data(), inp_f.data());
  geglu_backward<BN, BH>(weft::host_context{}, dinp_f.data(), inp_f.data(), dout_f.data());
  CHECK(rel_err(out_f, out) < 1e-6);
  CHECK(rel_err(dinp_f, dinp) < 1e-6);
}
