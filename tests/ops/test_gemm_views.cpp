// ops::gemm over typed views (ops/gemm.hpp): the views' layouts choose the transposes and the
// leading dimensions. Against a triple loop for every combination of row- and column-major
// operands, padded rows, beta; and the linear layer's product written with a column-major view
// of an (out, in) weight is bit for bit matmul_forward's.
#include "weft/ops/gemm.hpp"    // gemm
#include "weft/ops/matmul.hpp"  // matmul_forward (the same product through raw pointers)
#include "weft/tensor/tensor.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops_test_util.hpp"

using namespace weft;
using namespace weft::ops::test;

namespace {

constexpr std::size_t M = 5, K = 7, N = 3;
using mk = shape<axis<"m", M>, axis<"k", K>>;
using kn = shape<axis<"k", K>, axis<"n", N>>;
using mn = shape<axis<"m", M>, axis<"n", N>>;

// a(i, p) of the logical (M, K) matrix, whatever the storage: values from a seed.
template <class T>
struct operands {
  std::vector<double> a = random_vector(M * K, 11), b = random_vector(K * N, 12), c0 = random_vector(M * N, 13);
  // A stored row-major (M, K) and as its transpose (K, M) row-major = (M, K) column-major; B alike.
  std::vector<T> a_rm, a_cm, b_rm, b_cm;
  operands() {
    a_rm.resize(M * K), a_cm.resize(M * K), b_rm.resize(K * N), b_cm.resize(K * N);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t p = 0; p < K; ++p) a_rm[i * K + p] = a_cm[p * M + i] = T(a[i * K + p]);
    for (std::size_t p = 0; p < K; ++p)
      for (std::size_t j = 0; j < N; ++j) b_rm[p * N + j] = b_cm[j * K + p] = T(b[p * N + j]);
  }
  // alpha · A · B + beta · C0, by the definition.
  std::vector<double> expected(double alpha, double beta) const {
    std::vector<double> out(M * N);
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        long double s = 0;
        for (std::size_t p = 0; p < K; ++p) s += (long double)a[i * K + p] * b[p * N + j];
        out[i * N + j] = double(alpha * s + beta * c0[i * N + j]);
      }
    return out;
  }
};

template <class T, class VA, class VB>
void check_product(const VA& a, const VB& b, const std::vector<double>& want, double alpha, double beta,
                   const std::vector<double>& c0, double tol) {
  std::vector<T> c(M * N);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = T(c0[i]);
  ops::gemm(host_context{}, make_tensor<mn>(c.data()), a, b, T(alpha), T(beta));
  for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(std::abs(double(c[i]) - want[i]) <= tol * (1 + std::abs(want[i])));
}

}  // namespace

TEMPLATE_TEST_CASE("gemm over views: row- and column-major operands give the product by the definition", "[ops][gemm]",
                   float, double) {
  using T = TestType;
  const double tol = sizeof(T) == 8 ? 1e-13 : 1e-5;
  operands<T> o;
  const auto a_rm = make_tensor<mk>(static_cast<const T*>(o.a_rm.data()));
  const auto a_cm = make_tensor<mk, column_major>(static_cast<const T*>(o.a_cm.data()));
  const auto b_rm = make_tensor<kn>(static_cast<const T*>(o.b_rm.data()));
  const auto b_cm = make_tensor<kn, column_major>(static_cast<const T*>(o.b_cm.data()));
  STATIC_REQUIRE(!ops::detail::gemm_operand<decltype(a_rm)>::transposed);
  STATIC_REQUIRE(ops::detail::gemm_operand<decltype(a_cm)>::transposed && ops::detail::gemm_operand<decltype(a_cm)>::ld == M);
  STATIC_REQUIRE(ops::detail::gemm_operand<decltype(b_cm)>::transposed && ops::detail::gemm_operand<decltype(b_cm)>::ld == K);
  for (const double beta : {0.0, 1.0, -0.5}) {
    const auto want = o.expected(0.75, beta);
    check_product<T>(a_rm, b_rm, want, 0.75, beta, o.c0, tol);
    check_product<T>(a_cm, b_rm, want, 0.75, beta, o.c0, tol);
    check_product<T>(a_rm, b_cm, want, 0.75, beta, o.c0, tol);
    check_product<T>(a_cm, b_cm, want, 0.75, beta, o.c0, tol);
  }
  // beta 0 writes C without reading it: a NaN there does not leak
  std::vector<T> c(M * N, std::numeric_limits<T>::quiet_NaN());
  ops::gemm(host_context{}, make_tensor<mn>(c.data()), a_rm, b_cm);
  const auto want = o.expected(1.0, 0.0);
  for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(std::abs(double(c[i]) - want[i]) <= tol * (1 + std::abs(want[i])));
}

TEST_CASE("gemm over views: padded rows are read through the view's leading stride", "[ops][gemm]") {
  operands<double> o;
  constexpr std::size_t lda = K + 3;  // A's rows 10 apart, 3 padding elements each
  std::vector<double> a_pad(M * lda, std::nan(""));
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t p = 0; p < K; ++p) a_pad[i * lda + p] = o.a[i * K + p];
  const auto a = make_tensor<mk, strided<lda, 1>>(static_cast<const double*>(a_pad.data()));
  STATIC_REQUIRE(ops::detail::gemm_operand<decltype(a)>::ld == lda);
  check_product<double>(a, make_tensor<kn>(static_cast<const double*>(o.b_rm.data())), o.expected(1.0, 0.0), 1.0, 0.0,
                        o.c0, 1e-13);
}

TEST_CASE("gemm over views: the linear layer's product through a column-major weight view is matmul_forward's",
          "[ops][gemm]") {
  // weight(OC, C) stored like nn.Linear; the view (C, OC) column-major is its transpose in place.
  constexpr std::size_t R = 6, C = 8, OC = 5;
  const auto x = convert<float>(random_vector(R * C, 21));
  const auto w = convert<float>(random_vector(OC * C, 22));
  std::vector<float> by_view(R * OC), by_pointer(R * OC);
  // example-begin gemm-views
  // x: (row, in) row-major; w: an nn.Linear weight stored (out, in), seen as (in, out) column-major
  auto out = make_tensor<shape<axis<"row", R>, axis<"out", OC>>>(by_view.data());
  auto in = make_tensor<shape<axis<"row", R>, axis<"in", C>>>(x.data());
  auto weight_t = make_tensor<shape<axis<"in", C>, axis<"out", OC>>, column_major>(w.data());
  ops::gemm(host_context{}, out, in, weight_t);  // out = x · w^T: one gemm, B read transposed
  // example-end gemm-views
  ops::matmul_forward<R, C, OC>(host_context{}, by_pointer.data(), x.data(), w.data(), nullptr);
  CHECK(std::memcmp(by_view.data(), by_pointer.data(), by_view.size() * sizeof(float)) == 0);
}
