// matmul forward/backward: naive reference, finite differences, accumulate and nullable
// semantics, float vs double, and the portable gemm fallback against a triple loop.
#include "weft/ops/matmul.hpp"  // matmul_forward, matmul_backward, detail::gemm_fallback

#include <catch2/catch.hpp>

#include <limits>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {

constexpr std::size_t N = 6, C = 8, OC = 5;

// out(N, OC) = inp(N, C) · weight(OC, C)^T + bias, by the definition.
std::vector<double> naive_linear(std::size_t n_rows, std::size_t c, std::size_t oc,
                                 const std::vector<double>& inp, const std::vector<double>& w,
                                 const double* bias) {
  std::vector<double> out(n_rows * oc);
  for (std::size_t n = 0; n < n_rows; ++n)
    for (std::size_t o = 0; o < oc; ++o) {
      long double s = bias ? bias[o] : 0.0;
      for (std::size_t i = 0; i < c; ++i) s += (long double)inp[n * c + i] * w[o * c + i];
      out[n * oc + o] = double(s);
    }
  return out;
}

}  // namespace

TEST_CASE("matmul forward matches the triple loop, with and without bias", "[ops][matmul]") {
  auto inp = random_vector(N * C, 1), w = random_vector(OC * C, 2), b = random_vector(OC, 3);
  std::vector<double> out(N * OC, std::numeric_limits<double>::quiet_NaN());  // overwritten
  matmul_forward<N, C, OC>(weft::host_context{}, out.data(), inp.data(), w.data(), b.data());
  CHECK(rel_err(out, naive_linear(N, C, OC, inp, w, b.data())) < 1e-14);
  std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
  matmul_forward<N, C, OC>(weft::host_context{}, out.data(), inp.data(), w.data(), nullptr);
  CHECK(rel_err(out, naive_linear(N, C, OC, inp, w, nullptr)) < 1e-14);
}

TEST_CASE("matmul backward matches finite differences and accumulates", "[ops][matmul]") {
  auto inp = random_vector(N * C, 4), w = random_vector(OC * C, 5), b = random_vector(OC, 6);
  const auto r = random_vector(N * OC, 7);
  auto loss = [&] {
    std::vector<double> out(N * OC);
    matmul_forward<N, C, OC>(weft::host_context{}, out.data(), inp.data(), w.data(), b.data());
    return dot(out, r);
  };
  const auto fd_inp = fd_gradient(inp, loss), fd_w = fd_gradient(w, loss), fd_b = fd_gradient(b, loss);

  // Gradients start at non-zero values: backward must add onto them.
  const auto g0_inp = random_vector(N * C, 8), g0_w = random_vector(OC * C, 9), g0_b = random_vector(OC, 10);
  auto dinp = g0_inp, dw = g0_w, db = g0_b;
  matmul_backward<N, C, OC>(weft::host_context{}, dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data());
  CHECK(rel_err(minus(dinp, g0_inp), fd_inp) < 1e-6);
  CHECK(rel_err(minus(dw, g0_w), fd_w) < 1e-6);
  CHECK(rel_err(minus(db, g0_b), fd_b) < 1e-6);

  SECTION("dinp and dbias may be null") {
    auto dw2 = g0_w;
    matmul_backward<N, C, OC>(weft::host_context{}, nullptr, dw2.data(), nullptr,
                                                    r.data(), inp.data(), w.data());
    CHECK(rel_err(minus(dw2, g0_w), fd_w) < 1e-6);
  }
  SECTION("two backward calls add twice") {
    auto dw2 = g0_w;
    for (int k = 0; k < 2; ++k)
      matmul_backward<N, C, OC>(weft::host_context{}, nullptr, dw2.data(), nullptr,
                                                      r.data(), inp.data(), w.data());
    auto twice = fd_w;
    for (auto& x : twice) x *= 2;
    CHECK(rel_err(minus(dw2, g0_w), twice) < 1e-6);
  }
}

TEST_CASE("matmul at a size that takes the threaded paths matches the triple loop", "[ops][matmul]") {
  constexpr std::size_t BN = 128, BC = 72, BOC = 300;  // BN * BOC above the threading threshold
  auto inp = random_vector(BN * BC, 11), w = random_vector(BOC * BC, 12), b = random_vector(BOC, 13);
  const auto dout = random_vector(BN * BOC, 14);
  std::vector<double> out(BN * BOC);
  matmul_forward<BN, BC, BOC>(weft::host_context{}, out.data(), inp.data(), w.data(), b.data());
  CHECK(rel_err(out, naive_linear(BN, BC, BOC, inp, w, b.data())) < 1e-13);

  std::vector<double> dinp(BN * BC, 0.0), dw(BOC * BC, 0.0), db(BOC, 0.0);
  matmul_backward<BN, BC, BOC>(weft::host_context{}, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data());
  std::vector<double> ref_dinp(BN * BC, 0.0), ref_dw(BOC * BC, 0.0), ref_db(BOC, 0.0);
  for (std::size_t n = 0; n < BN; ++n)
    for (std::size_t o = 0; o < BOC; ++o) {
      const double g = dout[n * BOC + o];
      ref_db[o] += g;
      for (std::size_t i = 0; i < BC; ++i) {
        ref_dinp[n * BC + i] += g * w[o * BC + i];
        ref_dw[o * BC + i] += g * inp[n * BC + i];
      }
    }
  CHECK(rel_err(dinp, ref_dinp) < 1e-13);
  CHECK(rel_err(dw, ref_dw) < 1e-13);
  CHECK(rel_err(db, ref_db) < 1e-13);
}

TEST_CASE("matmul in float agrees with double", "[ops][matmul]") {
  const auto inp = random_vector(N * C, 15), w = random_vector(OC * C, 16), b = random_vector(OC, 17);
  const auto dout = random_vector(N * OC, 18);
  std::vector<double> out(N * OC), dinp(N * C, 0.0), dw(OC * C, 0.0), db(OC, 0.0);
  matmul_forward<N, C, OC>(weft::host_context{}, out.data(), inp.data(), w.data(), b.data());
  matmul_backward<N, C, OC>(weft::host_context{}, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data());

  const auto inp_f = convert<float>(inp), w_f = convert<float>(w), b_f = convert<float>(b);
  const auto dout_f = convert<float>(dout);
  std::vector<float> out_f(N * OC), dinp_f(N * C, 0.f), dw_f(OC * C, 0.f), db_f(OC, 0.f);
  matmul_forward<N, C, OC>(weft::host_context{}, out_f.data(), inp_f.data(), w_f.data(), b_f.data());
  matmul_backward<N, C, OC>(weft::host_context{}, dinp_f.data(), dw_f.data(), db_f.data(), dout_f.data(), inp_f.data(), w_f.data());
  CHECK(rel_err(out_f, out) < 1e-5);
  CHECK(rel_err(dinp_f, dinp) < 1e-5);
  CHECK(rel_err(dw_f, dw) < 1e-5);
  CHECK(rel_err(db_f, db) < 1e-5);
}

// ---- the portable path ----

TEST_CASE("gemm_fallback matches the triple loop for every transpose, alpha and beta", "[ops][matmul][gemm]") {
  // Sizes that cross every block edge (mc 32, kc 64, nc 256) and leave ragged ends.
  constexpr std::size_t m = 70, n = 300, k = 130;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 1.0, 0.5}) {
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        const double alpha = 1.5;
        // Stored shapes: A is (m, k) or (k, m); B is (k, n) or (n, k); padded leading dims.
        const std::size_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
        const auto a = random_vector((ta ? k : m) * lda, 20), b = random_vector((tb ? n : k) * ldb, 21);
        auto c = random_vector(m * ldc, 22);
        if (beta == 0.0)  // BLAS semantics: C is not read, so NaNs there must not leak out
          for (std::size_t i = 0; i < m; ++i) c[i * ldc + 5] = std::numeric_limits<double>::quiet_NaN();
        auto ref = c;
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            long double s = 0;
            for (std::size_t p = 0; p < k; ++p)
              s += (long double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            ref[i * ldc + j] = double(alpha * s + (beta == 0.0 ? 0.0L : beta * (long double)c[i * ldc + j]));
          }
        detail::gemm_fallback<double>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        CHECK(rel_err(c, ref) < 1e-14);  // includes the padding columns, which stay untouched
      }
}

TEST_CASE("matmul in long double (portable path) agrees with double", "[ops][matmul][gemm]") {
  const auto inp = random_vector(N * C, 23), w = random_vector(OC * C, 24), b = random_vector(OC, 25);
  const auto dout = random_vector(N * OC, 26);
  std::vector<double> out(N * OC), dinp(N * C, 0.0), dw(OC * C, 0.0), db(OC, 0.0);
  matmul_forward<N, C, OC>(weft::host_context{}, out.data(), inp.data(), w.data(), b.data());
  matmul_backward<N, C, OC>(weft::host_context{}, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data());

  using ld = long double;
  const auto inp_l = convert<ld>(inp), w_l = convert<ld>(w), b_l = convert<ld>(b), dout_l = convert<ld>(dout);
  std::vector<ld> out_l(N * OC), dinp_l(N * C, 0), dw_l(OC * C, 0), db_l(OC, 0);
  matmul_forward<N, C, OC>(weft::host_context{}, out_l.data(), inp_l.data(), w_l.data(), b_l.data());
  matmul_backward<N, C, OC>(weft::host_context{}, dinp_l.data(), dw_l.data(), db_l.data(), dout_l.data(), inp_l.data(), w_l.data());
  CHECK(rel_err(out_l, out) < 1e-14);
  CHECK(rel_err(dinp_l, dinp) < 1e-14);
  CHECK(rel_err(dw_l, dw) < 1e-14);
  CHECK(rel_err(db_l, db) < 1e-14);
}

TEST_CASE("gemm (BLAS when available) agrees with gemm_fallback in float", "[ops][matmul][gemm]") {
  constexpr std::size_t m = 40, n = 70, k = 90;
  const auto a = convert<float>(random_vector(m * k, 27)), b = convert<float>(random_vector(n * k, 28));
  std::vector<float> c1(m * n), c2(m * n);
  detail::gemm<float>(false, true, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c1.data(), n);
  detail::gemm_fallback<float>(false, true, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c2.data(), n);
  CHECK(rel_err(c1, c2) < 1e-5);
}
