// Sum of squares (two-pass, deterministic) and fused AdamW on the emulated grid against the host ops.
#include <weft/backend/cuda/kernels/adamw.hpp>        // make_adamw
#include <weft/backend/cuda/kernels/sum_squares.hpp>  // make_sum_squares, sum_squares_blocks
#include <weft/ops/adamw.hpp>
#include <weft/ops/mean_loss.hpp>
#include <weft/ops/sum_squares.hpp>

#include "kernel_check.hpp"

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
double ref_sum_squares(const double* x, std::size_t n) { return weft::ops::sum_squares(weft::host_context{}, x, n); }
double ref_mean_loss(const double* losses, std::size_t n) { return weft::ops::mean_loss(weft::host_context{}, losses, n); }
void ref_adamw(double* p, const double* g, double* m, double* v, std::size_t n, const k::adamw_hyper& h) {
  weft::ops::adamw_step(weft::host_context{}, p, g, m, v, n, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.t);
}
}  // namespace

TEMPLATE_TEST_CASE("sum of squares, two passes, deterministic", "[kernel][sum_squares]", float, bf16) {
  using T = TestType;
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{300001}}) {
    std::mt19937 rng(20 + n);
    auto x = kcheck::random<T>(n, rng, -3, 3);
    std::vector<double> scratch(k::sum_squares_blocks(n));
    double out = -1;
    auto ks = k::make_sum_squares(&out, x.data(), n, scratch.data());
    k::emulate_launch(ks.partial);
    k::emulate_launch(ks.total);
    const auto rx = kcheck::widen(x);
    const double ref = ref_sum_squares(rx.data(), n);
    // x² of a T value is exact in double; only the order of the sum differs.
    kcheck::check_scalar("sum_squares n=" + std::to_string(n), kcheck::name_v<T>, out, ref,
                         double(n) * 1.1e-16 * ref);
    // accumulate: a second run adds onto the first
    auto ks2 = k::make_sum_squares(&out, x.data(), n, scratch.data(), true);
    const double first = out;
    k::emulate_launch(ks2.partial);
    k::emulate_launch(ks2.total);
    REQUIRE(out == first + first);
  }
}

TEST_CASE("mean loss: the same two passes, plain sums scaled by 1/n", "[kernel][mean_loss]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{4096}, std::size_t{100003}}) {
    std::mt19937 rng(25 + n);
    auto losses = kcheck::random<float>(n, rng, 0, 11);
    losses[0] = 0;  // an ignored row counts
    std::vector<double> scratch(k::sum_squares_blocks(n));
    double out = -1;
    auto ks = k::make_mean_loss(&out, losses.data(), n, scratch.data());
    k::emulate_launch(ks.partial);
    k::emulate_launch(ks.total);
    const double ref = ref_mean_loss(kcheck::widen(losses).data(), n);
    kcheck::check_scalar("mean_loss n=" + std::to_string(n), "f32", out, ref, double(n) * 1.1e-16 * ref + 1e-300);
  }
}

TEMPLATE_TEST_CASE("fused adamw: f32 master and moments, G gradients, bf16 or f32 weights out", "[kernel][adamw]",
                   float, bf16) {
  using G = TestType;
  const std::size_t n = 10007;
  std::mt19937 rng(30);
  auto master = kcheck::random<float>(n, rng), m = kcheck::random<float>(n, rng, -0.1, 0.1),
       v = kcheck::random<float>(n, rng, 0, 0.01);
  auto g = kcheck::random<G>(n, rng);
  auto rp = kcheck::widen(master), rm = kcheck::widen(m), rv = kcheck::widen(v);
  const auto rg = kcheck::widen(g);
  const k::adamw_hyper h{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3};
  std::vector<bf16> out(n);
  k::emulate_launch(k::make_adamw(master.data(), g.data(), m.data(), v.data(), out.data(), n, h));
  ref_adamw(rp.data(), rg.data(), rm.data(), rv.data(), n, h);
  kcheck::check("adamw master", master, rp, 4);
  kcheck::check("adamw m", m, rm, 4);
  kcheck::check("adamw v", v, rv, 4);
  kcheck::check("adamw bf16 weights", out, rp, 1);
  // without a weights copy (param_out null), f32 only
  auto master2 = kcheck::random<float>(n, rng);
  auto rp2 = kcheck::widen(master2);
  k::emulate_launch(k::make_adamw<G, float>(master2.data(), g.data(), m.data(), v.data(), nullptr, n, h));
  ref_adamw(rp2.data(), rg.data(), rm.data(), rv.data(), n, h);
  kcheck::check("adamw master (no copy)", master2, rp2, 4);
}
