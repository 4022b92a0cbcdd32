// The ops that touch arena memory for layers and executors: fill/zero, copy, accumulate,
// sum of squares, clip, mean loss. Each checked against a loop written out here, with the
// summation orders the executors rely on for bit-identical norms.
#include "weft/ops/accumulate.hpp"   // accumulate, accumulate_rows
#include "weft/ops/clip.hpp"         // clip
#include "weft/ops/copy.hpp"         // copy
#include "weft/ops/fill.hpp"         // fill, zero
#include "weft/ops/mean_loss.hpp"    // mean_loss
#include "weft/ops/sum_squares.hpp"  // sum_squares, sum_squares_continue

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops_test_util.hpp"

using namespace weft::ops::test;
namespace ops = weft::ops;

namespace {
const weft::host_context host;
}

TEST_CASE("fill and zero set every element, and only those", "[ops][memory]") {
  std::vector<float> x(10, 3.0f);
  ops::fill(host, x.data() + 2, 5, 7.5f);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == ((i >= 2 && i < 7) ? 7.5f : 3.0f));
  ops::zero(host, x.data() + 1, 3);
  CHECK(x[0] == 3.0f);
  CHECK(x[1] == 0.0f);
  CHECK(x[3] == 0.0f);
  CHECK(x[4] == 7.5f);
  std::vector<std::int32_t> ids(4, 9);
  ops::fill(host, ids.data(), ids.size(), -1);  // token ids too
  CHECK(ids == std::vector<std::int32_t>(4, -1));
}

TEST_CASE("copy moves n elements to the destination", "[ops][memory]") {
  const auto src = random_vector(33, 1);
  std::vector<double> dst(40, -2.0);
  ops::copy(host, dst.data() + 3, src.data(), src.size());
  CHECK(dst[2] == -2.0);
  CHECK(dst[36] == -2.0);
  for (std::size_t i = 0; i < src.size(); ++i) CHECK(dst[3 + i] == src[i]);
}

TEST_CASE("accumulate adds, with and without a scale, and per row", "[ops][memory]") {
  const auto x = random_vector(70000, 2);  // large enough for the threaded path
  auto y = random_vector(70000, 3);
  const auto y0 = y;
  ops::accumulate(host, y.data(), x.data(), x.size());
  for (std::size_t i = 0; i < x.size(); i += 997) CHECK(y[i] == y0[i] + x[i]);
  ops::accumulate(host, y.data(), x.data(), x.size(), -0.5);
  for (std::size_t i = 0; i < x.size(); i += 997) CHECK(y[i] == (y0[i] + x[i]) + -0.5 * x[i]);

  std::vector<float> rows(3 * 4, 1.0f);  // (3 rows, 4)
  const std::vector<float> bias{1, 2, 3, 4};
  ops::accumulate_rows<3, 4>(host, rows.data(), bias.data());
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t i = 0; i < 4; ++i) CHECK(rows[r * 4 + i] == 1.0f + bias[i]);
}

TEST_CASE("sum_squares keeps eight lanes in a fixed tree, sum_squares_continue one running sum", "[ops][memory]") {
  const auto xd = random_vector(1003, 4);
  const auto x = convert<float>(xd);
  // the eight-lane order, written out
  double lane[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= x.size(); i += 8)
    for (std::size_t j = 0; j < 8; ++j) lane[j] += double(x[i + j]) * double(x[i + j]);
  for (; i < x.size(); ++i) lane[0] += double(x[i]) * double(x[i]);
  const double tree = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  CHECK(ops::sum_squares(host, x.data(), x.size()) == tree);

  // a running sum over two runs, skipping the elements between them
  double serial = 0.25;
  for (std::size_t k = 0; k < 100; ++k) serial += double(x[k]) * double(x[k]);
  for (std::size_t k = 300; k < x.size(); ++k) serial += double(x[k]) * double(x[k]);
  double carry = ops::sum_squares_continue(host, 0.25, x.data(), 100);
  carry = ops::sum_squares_continue(host, carry, x.data() + 300, x.size() - 300);
  CHECK(carry == serial);
  CHECK(ops::sum_squares_continue(host, 1.5, x.data(), 0) == 1.5);
  CHECK(std::sqrt(ops::sum_squares(host, x.data(), x.size())) == Approx(std::sqrt(serial - 0.25 + [&] {
          double s = 0;
          for (std::size_t k = 100; k < 300; ++k) s += double(x[k]) * double(x[k]);
          return s;
        }())));
}

TEST_CASE("clip scales by max_norm / norm only above the limit", "[ops][memory]") {
  const auto g0 = convert<float>(random_vector(50, 5));
  auto g = g0;
  ops::clip(host, g.data(), g.size(), 0.5, 1.0);  // within: untouched
  CHECK(g == g0);
  ops::clip(host, g.data(), g.size(), 4.0, 0.0);  // clipping off
  CHECK(g == g0);
  ops::clip(host, g.data(), g.size(), std::nan(""), 1.0);  // NaN norm: untouched
  CHECK(g == g0);
  ops::clip(host, g.data(), g.size(), 4.0, 1.0);
  const float s = static_cast<float>(1.0 / 4.0);
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == g0[i] * s);
}

TEST_CASE("mean_loss is the mean in double, in element order", "[ops][memory]") {
  const std::vector<float> losses{0.5f, 1.25f, 0.0f, 3.0f};
  CHECK(ops::mean_loss(host, losses.data(), losses.size()) == (0.5 + 1.25 + 0.0 + 3.0) / 4.0);
}
