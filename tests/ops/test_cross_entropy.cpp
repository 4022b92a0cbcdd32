// fused softmax + cross-entropy: losses against log-sum-exp in long double, the in-place
// gradient against finite differences of dloss * sum(losses), ignore_index, stability,
// the eval form, float vs double.
#include "weft/ops/cross_entropy.hpp"  // softmax_cross_entropy_forward_backward, ..._forward

#include <catch2/catch.hpp>

#include <cstdint>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;

namespace {
constexpr std::size_t N = 6, V = 11;
const std::vector<std::int32_t> targets = {3, 0, -1, 10, 3, 7};  // row 2 is ignored

std::vector<double> reference_losses(const std::vector<double>& logits, const std::vector<std::int32_t>& t,
                                     std::size_t rows, std::size_t v) {
  std::vector<double> out(rows);
  for (std::size_t n = 0; n < rows; ++n) {
    if (t[n] < 0) {
      out[n] = 0.0;
      continue;
    }
    long double mx = logits[n * v];
    for (std::size_t k = 0; k < v; ++k) mx = std::max(mx, (long double)logits[n * v + k]);
    long double sum = 0;
    for (std::size_t k = 0; k < v; ++k) sum += std::exp((long double)logits[n * v + k] - mx);
    out[n] = double(mx + std::log(sum) - logits[n * v + std::size_t(t[n])]);
  }
  return out;
}
}  // namespace

TEST_CASE("cross-entropy losses match log-sum-exp in long double", "[ops][cross_entropy]") {
  const auto logits = random_vector(N * V, 1, -3.0, 3.0);
  std::vector<double> losses(N, -1.0), eval_losses(N, -1.0);
  auto buf = logits;
  softmax_cross_entropy_forward_backward<N, V>(weft::host_context{}, losses.data(), buf.data(), targets.data(), 1.0);
  const auto ref = reference_losses(logits, targets, N, V);
  CHECK(rel_err(losses, ref) < 1e-14);
  CHECK(losses[2] == 0.0);

  softmax_cross_entropy_forward<N, V>(weft::host_context{}, eval_losses.data(), logits.data(), targets.data());
  CHECK(rel_err(eval_losses, ref) < 1e-14);
}

TEST_CASE("cross-entropy in-place gradient matches finite differences of dloss * sum(losses)",
          "[ops][cross_entropy]") {
  auto logits = random_vector(N * V, 2, -3.0, 3.0);
  const double dloss = 1.0 / 7.0;  // e.g. 1 / (number of non-ignored tokens in the whole batch)
  auto loss = [&] {
    std::vector<double> losses(N);
    softmax_cross_entropy_forward<N, V>(weft::host_context{}, losses.data(), logits.data(), targets.data());
    double s = 0;
    for (double l : losses) s += l;
    return dloss * s;
  };
  const auto fd = fd_gradient(logits, loss);
  std::vector<double> losses(N);
  auto grad = logits;
  softmax_cross_entropy_forward_backward<N, V>(weft::host_context{}, losses.data(), grad.data(), targets.data(), dloss);
  CHECK(rel_err(grad, fd) < 1e-6);
  // The ignored row is a zero gradient row (not the logits left behind).
  for (std::size_t k = 0; k < V; ++k) CHECK(grad[2 * V + k] == 0.0);
  // Each kept row of softmax - onehot sums to zero.
  for (std::size_t n = 0; n < N; ++n) {
    double s = 0;
    for (std::size_t k = 0; k < V; ++k) s += grad[n * V + k];
    CHECK(std::abs(s) < 1e-15);
  }
}

TEST_CASE("cross-entropy is stable for large logits", "[ops][cross_entropy]") {
  auto logits = random_vector(N * V, 3, -3.0, 3.0);
  const auto ref = reference_losses(logits, targets, N, V);
  for (auto& z : logits) z += 1000.0;  // exp would overflow without the max shift
  std::vector<double> losses(N);
  auto grad = logits;
  softmax_cross_entropy_forward_backward<N, V>(weft::host_context{}, losses.data(), grad.data(), targets.data(), 1.0);
  CHECK(rel_err(losses, ref) < 1e-10);
  for (double g : grad) CHECK(std::isfinite(g));
}

TEST_CASE("cross-entropy in float agrees with double, threaded", "[ops][cross_entropy]") {
  constexpr std::size_t BN = 32, BV = 2000;  // above the threading threshold
  std::vector<std::int32_t> t(BN);
  for (std::size_t n = 0; n < BN; ++n) t[n] = n % 5 == 4 ? -1 : std::int32_t((n * 37) % BV);
  const auto logits = random_vector(BN * BV, 4, -5.0, 5.0);
  std::vector<double> losses(BN);
  auto grad = logits;
  softmax_cross_entropy_forward_backward<BN, BV>(weft::host_context{}, losses.data(), grad.data(), t.data(), 0.5);
  CHECK(rel_err(losses, reference_losses(logits, t, BN, BV)) < 1e-14);
  auto grad_f = convert<float>(logits);
  std::vector<float> losses_f(BN);
  softmax_cross_entropy_forward_backward<BN, BV>(weft::host_context{}, losses_f.data(), grad_f.data(), t.data(), 0.5f);
  CHECK(rel_err(losses_f, losses) < 1e-6);
  CHECK(rel_err(grad_f, grad) < 1e-6);
}
