// Ops called with typed views (ops/views.hpp): each op's declared signature checks the views and
// the body runs on their pointers, so the view form equals the pointer form bit for bit; the
// matrix product takes the views themselves and its weight's layout chooses the transposes (a
// weight stored (in, out), Hugging Face's Conv1D, is read as it is; one stored (out, in), torch's
// nn.Linear, through its column-major view). The compile-time refusals (extents, space, layout,
// const outputs, ops::none for a needed operand, flat sizes) are tests/fail/op_view_*.cpp.
#include "weft/ops/accumulate.hpp"
#include "weft/ops/copy.hpp"
#include "weft/ops/cross_entropy.hpp"
#include "weft/ops/embedding.hpp"
#include "weft/ops/fill.hpp"
#include "weft/ops/gelu.hpp"
#include "weft/ops/layernorm.hpp"
#include "weft/ops/matmul.hpp"
#include "weft/ops/scale.hpp"
#include "weft/ops/sum_squares.hpp"
#include "weft/ops/views.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ops_test_util.hpp"

using namespace weft;
using namespace weft::ops::test;

namespace {

constexpr host_context ctx{};

template <std::size_t... E, class T>
auto v(T* p) {
  return packed_view<host_space, E...>(p);
}

template <class T>
std::vector<T> rnd(std::size_t n, unsigned seed) {
  return convert<T>(random_vector(n, seed));
}

template <class T>
bool bit_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("views: packed_view and transpose are the layouts they name", "[ops][views]") {
  using L = packed_layout<3, 4, 5>;
  STATIC_REQUIRE(L::stride(0) == 20);
  STATIC_REQUIRE(L::stride(1) == 5);
  STATIC_REQUIRE(L::stride(2) == 1);
  STATIC_REQUIRE(ops::detail::dense_row_major<L>());
  float buf[12] = {};
  const auto t = transpose(v<3, 4>(buf));  // (4, 3), column-major
  STATIC_REQUIRE(decltype(t)::extent(0) == 4);
  STATIC_REQUIRE(decltype(t)::stride(0) == 1);
  STATIC_REQUIRE(decltype(t)::stride(1) == 4);
  STATIC_REQUIRE(!ops::detail::dense_row_major<typename decltype(t)::mapping_type>());
  REQUIRE(&t(1, 2) == &buf[2 * 4 + 1]);
}

TEMPLATE_TEST_CASE("views: element-wise and norm ops equal their pointer form bit for bit", "[ops][views]", float,
                   double, bf16) {
  using T = TestType;
  constexpr std::size_t N = 6, C = 10;
  const auto x = rnd<T>(N * C, 1), w = rnd<T>(C, 2), b = rnd<T>(C, 3), dy = rnd<T>(N * C, 4);

  // gelu forward and backward: a rank-1 operand takes a view of any shape with that many elements
  std::vector<T> y1(N * C), y2(N * C), dx1(N * C, T(0.5)), dx2 = dx1;
  ops::gelu_forward<N * C>(ctx, y1.data(), x.data());
  ops::gelu_forward<N * C>(ctx, v<N, C>(y2.data()), v<N, C>(x.data()));
  REQUIRE(bit_equal(y1, y2));
  ops::gelu_backward<N * C>(ctx, dx1.data(), x.data(), dy.data());
  ops::gelu_backward<N * C>(ctx, v<N * C>(dx2.data()), v<N, C>(x.data()), v<N, C>(dy.data()));
  REQUIRE(bit_equal(dx1, dx2));

  // layernorm forward and backward, statistics in stat_t
  using S = ops::stat_t<T>;
  std::vector<T> o1(N * C), o2(N * C);
  std::vector<S> m1(N), r1(N), m2(N), r2(N);
  ops::layernorm_forward<N, C>(ctx, o1.data(), m1.data(), r1.data(), x.data(), w.data(), b.data());
  ops::layernorm_forward<N, C>(ctx, v<N, C>(o2.data()), v<N>(m2.data()), v<N>(r2.data()), v<N, C>(x.data()),
                               v<C>(w.data()), v<C>(b.data()));
  REQUIRE(bit_equal(o1, o2));
  REQUIRE(bit_equal(m1, m2));
  REQUIRE(bit_equal(r1, r2));
  std::vector<T> gx1(N * C, T(0.25)), gx2 = gx1, gw1(C, T(0.125)), gw2 = gw1, gb1(C), gb2(C);
  ops::layernorm_backward<N, C>(ctx, gx1.data(), gw1.data(), gb1.data(), dy.data(), x.data(), w.data(), m1.data(),
                                r1.data());
  ops::layernorm_backward<N, C>(ctx, v<N, C>(gx2.data()), v<C>(gw2.data()), v<C>(gb2.data()), v<N, C>(dy.data()),
                                v<N, C>(x.data()), v<C>(w.data()), v<N>(m2.data()), v<N>(r2.data()));
  REQUIRE(bit_equal(gx1, gx2));
  REQUIRE(bit_equal(gw1, gw2));
  REQUIRE(bit_equal(gb1, gb2));
}

TEST_CASE("views: embedding and cross-entropy take int32 and statistic views", "[ops][views]") {
  constexpr std::size_t N = 5, V = 7, C = 4;
  const auto table = rnd<float>(V * C, 5);
  const std::vector<std::int32_t> idx{3, 0, 6, 3, 1};
  std::vector<float> e1(N * C), e2(N * C);
  ops::embedding_forward<N, V, C>(ctx, e1.data(), idx.data(), table.data());
  ops::embedding_forward<N, V, C>(ctx, v<N, C>(e2.data()), v<N>(idx.data()), v<V, C>(table.data()));
  REQUIRE(bit_equal(e1, e2));

  auto z1 = rnd<float>(N * V, 6), z2 = z1;
  const std::vector<std::int32_t> targets{1, -1, 6, 0, 2};
  std::vector<float> l1(N), l2(N);
  ops::softmax_cross_entropy_forward_backward<N, V>(ctx, l1.data(), z1.data(), targets.data(), 0.2f);
  ops::softmax_cross_entropy_forward_backward<N, V>(ctx, v<N>(l2.data()), v<N, V>(z2.data()), v<N>(targets.data()),
                                                    0.2f);
  REQUIRE(bit_equal(l1, l2));
  REQUIRE(bit_equal(z1, z2));
  REQUIRE(l2[1] == 0.0f);  // the ignored row
}

TEST_CASE("views: flat ops take leading views of one size and their size", "[ops][views]") {
  constexpr std::size_t R = 3, C = 5;
  auto a = rnd<double>(R * C, 7), b = rnd<double>(R * C, 8);
  const auto a0 = a;
  ops::accumulate(ctx, v<R, C>(a.data()), v<R * C>(b.data()), 0.5);
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == a0[i] + 0.5 * b[i]);
  ops::scale(ctx, v<R, C>(a.data()), 2.0);
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == 2.0 * (a0[i] + 0.5 * b[i]));
  const double ss = ops::sum_squares(ctx, v<R, C>(a.data()));
  REQUIRE(ss == ops::sum_squares(ctx, a.data(), a.size()));
  REQUIRE(ss > 0);
  ops::copy(ctx, v<R, C>(a.data()), v<R, C>(b.data()));
  REQUIRE(a == b);
  ops::fill(ctx, v<R, C>(a.data()), 3.0);
  for (double x : a) REQUIRE(x == 3.0);
  ops::zero(ctx, v<C>(a.data() + C));  // the middle row only: a view at an offset
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == ((i >= C && i < 2 * C) ? 0.0 : 3.0));
}

TEMPLATE_TEST_CASE("views: matmul through nn.Linear's column-major weight view is the pointer form bit for bit",
                   "[ops][views][matmul]", float, double, bf16) {
  using T = TestType;
  constexpr std::size_t N = 7, C = 9, OC = 5;
  const auto x = rnd<T>(N * C, 11), w = rnd<T>(OC * C, 12), bias = rnd<T>(OC, 13), dy = rnd<T>(N * OC, 14);
  const auto wv = ops::linear_weight_view<C, OC>(w.data());  // (C, OC) over the (OC, C) storage
  STATIC_REQUIRE(ops::detail::gemm_operand<decltype(wv)>::transposed);

  std::vector<T> y1(N * OC), y2(N * OC), y3(N * OC);
  ops::matmul_forward<N, C, OC>(ctx, y1.data(), x.data(), w.data(), bias.data());
  ops::matmul_forward<N, C, OC>(ctx, v<N, OC>(y2.data()), v<N, C>(x.data()), wv, v<OC>(bias.data()));
  REQUIRE(bit_equal(y1, y2));
  ops::matmul_forward<N, C, OC>(ctx, y1.data(), x.data(), w.data(), nullptr);
  ops::matmul_forward<N, C, OC>(ctx, v<N, OC>(y3.data()), v<N, C>(x.data()), wv, ops::none);
  REQUIRE(bit_equal(y1, y3));

  std::vector<T> dx1(N * C, T(0.5)), dx2 = dx1, dw1(OC * C, T(0.25)), dw2 = dw1, db1(OC, T(1)), db2 = db1;
  ops::matmul_backward<N, C, OC>(ctx, dx1.data(), dw1.data(), db1.data(), dy.data(), x.data(), w.data());
  ops::matmul_backward<N, C, OC>(ctx, v<N, C>(dx2.data()), ops::linear_weight_view<C, OC>(dw2.data()),
                                 v<OC>(db2.data()), v<N, OC>(dy.data()), v<N, C>(x.data()), wv);
  REQUIRE(bit_equal(dx1, dx2));
  REQUIRE(bit_equal(dw1, dw2));
  REQUIRE(bit_equal(db1, db2));

  // Optional operands: ops::none, or a view whose pointer is null (a layer whose input needs no gradient).
  auto dw3 = dw2;
  ops::matmul_backward<N, C, OC>(ctx, ops::none, ops::linear_weight_view<C, OC>(dw3.data()), ops::none,
                                 v<N, OC>(dy.data()), v<N, C>(x.data()), wv);
  auto dw4 = dw2;
  ops::matmul_backward<N, C, OC>(ctx, v<N, C>(static_cast<T*>(nullptr)), ops::linear_weight_view<C, OC>(dw4.data()),
                                 v<OC>(static_cast<T*>(nullptr)), v<N, OC>(dy.data()), v<N, C>(x.data()), wv);
  REQUIRE(bit_equal(dw3, dw4));
  REQUIRE(!bit_equal(dw3, dw2));  // the weight gradient did accumulate
}

TEMPLATE_TEST_CASE("views: a weight stored (in, out) is read as it is and gives the same product", "[ops][views][matmul]",
                   float, double) {
  using T = TestType;
  constexpr std::size_t N = 6, C = 8, OC = 4;
  const auto x = rnd<T>(N * C, 21), w = rnd<T>(OC * C, 22), bias = rnd<T>(OC, 23), dy = rnd<T>(N * OC, 24);
  std::vector<T> wt(C * OC);  // the same weight stored (C, OC), like Hugging Face GPT-2's Conv1D
  for (std::size_t o = 0; o < OC; ++o)
    for (std::size_t c = 0; c < C; ++c) wt[c * OC + o] = w[o * C + c];
  const auto w_conv = v<C, OC>(wt.data());  // row-major: read as stored
  STATIC_REQUIRE(!ops::detail::gemm_operand<decltype(w_conv)>::transposed);

  std::vector<T> y_lin(N * OC), y_conv(N * OC);
  // example-begin op-views
  // w: stored (OC, C) like nn.Linear; wt: the same weight stored (C, OC) like GPT-2's Conv1D
  using space = host_space;
  auto in = packed_view<space, N, C>(x.data());
  auto b = packed_view<space, OC>(bias.data());
  ops::matmul_forward<N, C, OC>(ctx, packed_view<space, N, OC>(y_lin.data()), in,
                                ops::linear_weight_view<C, OC, space>(w.data()), b);  // read transposed
  ops::matmul_forward<N, C, OC>(ctx, packed_view<space, N, OC>(y_conv.data()), in,
                                packed_view<space, C, OC>(wt.data()), b);  // read as stored
  // example-end op-views
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  REQUIRE(rel_err(y_lin, y_conv) <= tol);

  // Backward: the weight gradient lands in each weight's own layout.
  std::vector<T> dx_lin(N * C), dx_conv(N * C), dw_lin(OC * C), dw_conv(C * OC);
  ops::matmul_backward<N, C, OC>(ctx, v<N, C>(dx_lin.data()), ops::linear_weight_view<C, OC>(dw_lin.data()), ops::none,
                                 v<N, OC>(dy.data()), v<N, C>(x.data()), ops::linear_weight_view<C, OC>(w.data()));
  ops::matmul_backward<N, C, OC>(ctx, v<N, C>(dx_conv.data()), v<C, OC>(dw_conv.data()), ops::none, v<N, OC>(dy.data()),
                                 v<N, C>(x.data()), w_conv);
  REQUIRE(rel_err(dx_lin, dx_conv) <= tol);
  std::vector<T> dw_conv_as_lin(OC * C);
  for (std::size_t o = 0; o < OC; ++o)
    for (std::size_t c = 0; c < C; ++c) dw_conv_as_lin[o * C + c] = dw_conv[c * OC + o];
  REQUIRE(rel_err(dw_lin, dw_conv_as_lin) <= tol);
  // and against the definition: dW[o][c] = sum_n dy[n][o] x[n][c]
  double worst = 0;
  for (std::size_t o = 0; o < OC; ++o)
    for (std::size_t c = 0; c < C; ++c) {
      double s = 0;
      for (std::size_t n = 0; n < N; ++n) s += double(dy[n * OC + o]) * double(x[n * C + c]);
      worst = std::max(worst, std::abs(s - double(dw_lin[o * C + c])));
    }
  REQUIRE(worst <= 10 * tol);
}

TEST_CASE("views: flat_view carries a run-time size and the context's space", "[ops][views]") {
  std::vector<float> g = rnd<float>(37, 31), h = rnd<float>(37, 32);
  const auto gv = flat(ctx, g);  // a std::vector's range, in the host context's memory
  STATIC_REQUIRE(std::is_same_v<decltype(gv), const flat_view<float, host_space>>);
  REQUIRE(gv.size() == 37);
  // The runs of a buffer, summed as one loop: bit for bit the pointer form.
  const double whole = ops::sum_squares_continue(ctx, 0.0, g.data(), g.size());
  const double runs = ops::sum_squares_continue(ctx, ops::sum_squares_continue(ctx, 0.0, gv.part(0, 20)), gv.part(20, 17));
  REQUIRE(runs == whole);
  // Flat views and tensor views mix; sizes agree at run time or the op throws before touching memory.
  const auto h0 = h;
  ops::accumulate(ctx, flat(ctx, g.data(), 10), packed_view<host_space, 2, 5>(h.data()));
  for (std::size_t i = 0; i < 10; ++i) REQUIRE(g[i] == float(rnd<float>(37, 31)[i] + h0[i]));
  REQUIRE_THROWS_WITH(ops::copy(ctx, flat(ctx, g.data(), 11), packed_view<host_space, 2, 5>(h.data())),
                      Catch::Contains("different numbers of elements"));
  REQUIRE(h == h0);
  REQUIRE(ops::sum_squares(ctx, flat(ctx, h)) == ops::sum_squares(ctx, h.data(), h.size()));
}
