// Fused softmax + cross-entropy with a padded vocabulary on the emulated grid against the host
// op (which sees the unpadded (N, V) logits) in double.
#include <weft/backend/cuda/kernels/cross_entropy.hpp>  // make_softmax_cross_entropy_forward_backward
#include <weft/ops/cross_entropy.hpp>

#include "kernel_check.hpp"

#include <cstring>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapter: one line to follow a host-op signature change ----
template <std::size_t N, std::size_t V>
void ref_cross_entropy(double* losses, double* logits, const std::int32_t* targets, double dloss) {
  weft::ops::softmax_cross_entropy_forward_backward<N, V>(weft::host_context{}, losses, logits, targets, dloss);
}
template <std::size_t N, std::size_t V>
void ref_cross_entropy_eval(double* losses, const double* logits, const std::int32_t* targets) {
  weft::ops::softmax_cross_entropy_forward<N, V>(weft::host_context{}, losses, logits, targets);
}

template <class T, std::size_t N, std::size_t V, std::size_t Vp>
void ce_case() {
  const std::string tag = " V=" + std::to_string(V) + " Vp=" + std::to_string(Vp);
  std::mt19937 rng(80 + V);
  auto z = kcheck::random<T>(N * Vp, rng, -6, 6);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = V; v < Vp; ++v) z[n * Vp + v] = T(1e4f);  // padding: must be ignored
  std::vector<std::int32_t> targets(N);
  std::uniform_int_distribution<int> tok(0, V - 1);
  for (auto& t : targets) t = tok(rng);
  targets[3] = -1;           // ignored row
  targets[5] = int(V) - 1;   // the last real column
  const float dloss = 1.0f / N;
  std::vector<double> rz(N * V);  // the unpadded logits, as the host op sees them
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = 0; v < V; ++v) rz[n * V + v] = static_cast<double>(static_cast<float>(z[n * Vp + v]));
  // evaluation form first: losses only, logits untouched
  const auto z_before = z;
  std::vector<float> eval_losses(N);
  std::vector<double> reval(N);
  k::emulate_launch(k::make_softmax_cross_entropy_forward<N, V, Vp>(eval_losses.data(), z.data(), targets.data()));
  ref_cross_entropy_eval<N, V>(reval.data(), rz.data(), targets.data());
  kcheck::check("cross_entropy eval losses" + tag, eval_losses, reval, 16);
  REQUIRE(std::memcmp(z.data(), z_before.data(), z.size() * sizeof(T)) == 0);

  std::vector<float> losses(N);
  k::emulate_launch(k::make_softmax_cross_entropy_forward_backward<N, V, Vp>(losses.data(), z.data(),
                                                                             targets.data(), dloss));
  std::vector<double> rlosses(N);
  ref_cross_entropy<N, V>(rlosses.data(), rz.data(), targets.data(), dloss);
  kcheck::check("cross_entropy losses" + tag, losses, rlosses, 16);
  // the kernel's rows have Vp columns: compare the first V, and require zeros in the padding
  std::vector<T> dz(N * V);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t v = 0; v < Vp; ++v) {
      if (v < V) dz[n * V + v] = z[n * Vp + v];
      else REQUIRE(static_cast<float>(z[n * Vp + v]) == 0.0f);
    }
  kcheck::check("cross_entropy dlogits" + tag, dz, rz, 4);
}
}  // namespace

TEMPLATE_TEST_CASE("softmax cross-entropy forward+backward in place, padded vocabulary", "[kernel][cross_entropy]",
                   float, bf16) {
  ce_case<TestType, 9, 1000, 1024>();
  ce_case<TestType, 9, 100, 128>();
  ce_case<TestType, 9, 5003, 5120>();  // several sweeps per row, masked tail
}
