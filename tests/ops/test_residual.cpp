// residual add: forward by definition (also in place), finite differences, accumulation.
#include "weft/ops/residual.hpp"  // residual_forward, residual_backward

#include <catch2/catch.hpp>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 48;
}

TEST_CASE("residual forward adds, also in place", "[ops][residual]") {
  const auto a = random_vector(N, 1), b = random_vector(N, 2);
  std::vector<double> out(N);
  residual_forward<N>(weft::host_context{}, out.data(), a.data(), b.data());
  for (std::size_t i = 0; i < N; ++i) CHECK(out[i] == a[i] + b[i]);
  auto acc = a;
  residual_forward<N>(weft::host_context{}, acc.data(), acc.data(), b.data());
  CHECK(acc == out);
}

TEST_CASE("residual backward matches finite differences and accumulates", "[ops][residual]") {
  auto a = random_vector(N, 3), b = random_vector(N, 4);
  const auto r = random_vector(N, 5);
  auto loss = [&] {
    std::vector<double> out(N);
    residual_forward<N>(weft::host_context{}, out.data(), a.data(), b.data());
    return dot(out, r);
  };
  const auto fd_a = fd_gradient(a, loss), fd_b = fd_gradient(b, loss);
  const auto g0_a = random_vector(N, 6), g0_b = random_vector(N, 7);
  auto da = g0_a, db = g0_b;
  residual_backward<N>(weft::host_context{}, da.data(), db.data(), r.data());
  CHECK(rel_err(minus(da, g0_a), fd_a) < 1e-6);
  CHECK(rel_err(minus(db, g0_b), fd_b) < 1e-6);
}

TEST_CASE("residual in float, threaded, agrees with double", "[ops][residual]") {
  constexpr std::size_t BN = 70000;
  const auto a = random_vector(BN, 8), b = random_vector(BN, 9), dout = random_vector(BN, 10);
  std::vector<double> out(BN), da(BN, 1.0), db(BN, 0.0);
  residual_forward<BN>(weft::host_context{}, out.data(), a.data(), b.data());
  residual_backward<BN>(weft::host_context{}, da.data(), db.data(), dout.data());
  const auto a_f = convert<float>(a), b_f = convert<float>(b), dout_f = convert<float>(dout);
  std::vector<float> out_f(BN), da_f(BN, 1.f), db_f(BN, 0.f);
  residual_forward<BN>(weft::host_context{}, out_f.data(), a_f.data(), b_f.data());
  residual_backward<BN>(weft::host_context{}, da_f.data(), db_f.data(), dout_f.data());
  CHECK(rel_err(out_f, out) < 1e-6);
  CHECK(rel_err(da_f, da) < 1e-6);
  CHECK(rel_err(db_f, db) < 1e-6);
}
