// token and positional embeddings: gathers by definition, finite differences of the
// scatter-add gradients (with repeated tokens), accumulation, float vs double.
#include "weft/ops/embedding.hpp"  // embedding_*, positional_*

#include <catch2/catch.hpp>

#include <cstdint>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 9, V = 11, C = 8;
// Token 3 three times and token 7 twice: their gradient rows must sum.
const std::vector<std::int32_t> idx = {3, 0, 7, 3, 10, 7, 3, 1, 5};
constexpr std::size_t B = 2, S = 3, S_MAX = 5;
}  // namespace

TEST_CASE("embedding forward gathers table rows", "[ops][embedding]") {
  const auto table = random_vector(V * C, 1);
  std::vector<double> out(N * C, -99.0);
  embedding_forward<N, V, C>(weft::host_context{}, out.data(), idx.data(), table.data());
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t i = 0; i < C; ++i) CHECK(out[n * C + i] == table[std::size_t(idx[n]) * C + i]);
}

TEST_CASE("embedding backward matches finite differences and accumulates", "[ops][embedding]") {
  auto table = random_vector(V * C, 2);
  const auto r = random_vector(N * C, 3);
  auto loss = [&] {
    std::vector<double> out(N * C);
    embedding_forward<N, V, C>(weft::host_context{}, out.data(), idx.data(), table.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(table, loss);
  const auto g0 = random_vector(V * C, 4);
  auto dtable = g0;
  embedding_backward<N, V, C>(weft::host_context{}, dtable.data(), r.data(), idx.data());
  CHECK(rel_err(minus(dtable, g0), fd) < 1e-6);
  // Tokens never seen keep their gradient exactly.
  for (std::size_t i = 0; i < C; ++i) CHECK(dtable[2 * C + i] == g0[2 * C + i]);
}

TEST_CASE("positional embedding adds wpe[s] to every batch row", "[ops][embedding]") {
  const auto wpe = random_vector(S_MAX * C, 5), base = random_vector(B * S * C, 6);
  auto out = base;
  positional_forward<B, S, C>(weft::host_context{}, out.data(), wpe.data());
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t i = 0; i < C; ++i) {
        const std::size_t o = (b * S + s) * C + i;
        CHECK(out[o] == base[o] + wpe[s * C + i]);
      }
}

TEST_CASE("positional backward matches finite differences and accumulates", "[ops][embedding]") {
  auto wpe = random_vector(S_MAX * C, 7);
  const auto base = random_vector(B * S * C, 8), r = random_vector(B * S * C, 9);
  auto loss = [&] {
    auto out = base;
    positional_forward<B, S, C>(weft::host_context{}, out.data(), wpe.data());
    return dot(out, r);
  };
  const auto fd = fd_gradient(wpe, loss);  // zero for the rows s >= S
  const auto g0 = random_vector(S_MAX * C, 10);
  auto dwpe = g0;
  positional_backward<B, S, C>(weft::host_context{}, dwpe.data(), r.data());
  CHECK(rel_err(minus(dwpe, g0), fd) < 1e-6);
  for (std::size_t i = S * C; i < S_MAX * C; ++i) CHECK(dwpe[i] == g0[i]);
}

TEST_CASE("embeddings in float agree with double, threaded", "[ops][embedding]") {
  constexpr std::size_t BN = 256, BV = 50, BC = 200;  // above the threading threshold
  std::vector<std::int32_t> bidx(BN);
  for (std::size_t n = 0; n < BN; ++n) bidx[n] = std::int32_t((n * 7 + n / 3) % BV);
  const auto table = random_vector(BV * BC, 11), dout = random_vector(BN * BC, 12);
  std::vector<double> dtable(BV * BC, 0.0), dwpe(BN / 4 * BC, 0.0);
  embedding_backward<BN, BV, BC>(weft::host_context{}, dtable.data(), dout.data(), bidx.data());
  positional_backward<4, BN / 4, BC>(weft::host_context{}, dwpe.data(), dout.data());
  // Reference scatter-add in the obvious serial order.
  std::vector<double> ref(BV * BC, 0.0), ref_pos(BN / 4 * BC, 0.0);
  for (std::size_t n = 0; n < BN; ++n)
    for (std::size_t i = 0; i < BC; ++i) {
      ref[std::size_t(bidx[n]) * BC + i] += dout[n * BC + i];
      ref_pos[(n % (BN / 4)) * BC + i] += dout[n * BC + i];
    }
  CHECK(rel_err(dtable, ref) < 1e-14);
  CHECK(rel_err(dwpe, ref_pos) < 1e-14);
  const auto dout_f = convert<float>(dout);
  std::vector<float> dtable_f(BV * BC, 0.f);
  embedding_backward<BN, BV, BC>(weft::host_context{}, dtable_f.data(), dout_f.data(), bidx.data());
  CHECK(rel_err(dtable_f, dtable) < 1e-6);
}
