// precision<f16, f32> on the host with dynamic loss scaling (issue #8): f16 parameters,
// gradients and activations, f32 master weights and moments; the loss gradient scaled by a
// power of two that halves on an overflow (the step skipped) and doubles after
// growth_interval good steps (train/loss_scaler.hpp). A small GPT trained in f16 tracks the
// f32 run; a forced overflow skips the step and halves the scale.
#include <weft/weft.hpp>

#include <catch2/catch.hpp>

#include "precision_fixture.hpp"  // small_gpt, f32_plan, token_stream, options

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace weft;
using namespace weft_test;  // precision_fixture.hpp

using f16_plan = plan<small_gpt, batch<micro<4>, seq<32>>, precision<f16, f32>>;

TEST_CASE("f16 is a host element type computed in float", "[train][f16]") {
  STATIC_REQUIRE(ops::host_element<f16>);
  STATIC_REQUIRE(std::is_same_v<ops::compute_t<f16>, float>);
  STATIC_REQUIRE(ops::is_storage_only_v<f16>);
  STATIC_REQUIRE(f16_plan::mixed_precision);
  CHECK(f16_plan::section_dtypes[f16_plan::params] == "f16");
  CHECK(f16_plan::section_dtypes[f16_plan::master] == "f32");
  CHECK(f16_plan::section(f16_plan::params).bytes == f16_plan::param_count * 2);
  // Dynamic loss scaling defaults to PyTorch's GradScaler's.
  const loss_scaling d{};
  CHECK(d.init_scale == 65536.0);
  CHECK(d.growth_interval == 2000);
  CHECK(d.growth_factor == 2.0);
  CHECK(d.backoff_factor == 0.5);
}

TEST_CASE("a small GPT trained in precision<f16, f32> with loss scaling tracks the f32 run", "[train][f16]") {
  training_step<f32_plan> a(options());
  training_step<f16_plan> b(options());
  for (std::size_t i = 0; i < f32_plan::param_count; ++i) REQUIRE(b.master()[i] == a.params()[i]);
  CHECK(b.loss_scale_state().active());
  CHECK(b.loss_scale_state().scale() == 65536.0);
  token_stream sa, sb;
  std::vector<double> la;  // the f32 loss at call i, after i updates
  std::size_t skipped = 0;
  for (int i = 0; i < 30; ++i) la.push_back(a.step(sa).loss);
  // The f16 loss after u updates against the f32 loss after u updates: an overflow skips an
  // update (the scale starts at 2^16, PyTorch's default, and halves until gradients fit), so
  // the f16 run lags by the number of skips (the batches are samples of the same task).
  double worst = 0, first = 0, last = 0, tail_a = 0, tail_b = 0;
  for (int i = 0; i < 30; ++i) {
    const std::size_t u = b.step_count();
    const auto mb = b.step(sb);
    skipped += mb.skipped;
    INFO("step " << i << " (" << u << " updates before it): f32 loss " << la[u] << ", f16 loss " << mb.loss
                 << ", scale " << mb.loss_scale);
    REQUIRE(std::isfinite(mb.loss));
    if (i == 0) first = mb.loss;
    last = mb.loss;
    // Each step within 6% (+ 0.005 for the last, small losses): the lagged runs see different
    // batches of the task (measured 4.8% at worst, at loss 0.3); the last 10 on average within 3%.
    CHECK(std::abs(mb.loss - la[u]) <= 0.06 * la[u] + 0.005);
    worst = std::max(worst, std::abs(mb.loss - la[u]) / la[u]);
    if (i >= 20) tail_a += la[u], tail_b += mb.loss;
  }
  INFO("mean of the last 10 losses: f32 " << tail_a / 10 << ", f16 " << tail_b / 10);
  CHECK(std::abs(tail_b - tail_a) <= 0.03 * tail_a);
  WARN("f16 vs f32 loss at equal update counts, worst relative difference " << worst << ", " << skipped
                                                                            << " overflow(s)");
  // Overflows early on are the only skips; the scale settles below 2^16.
  CHECK(skipped <= 4);
  CHECK(b.loss_scale_state().overflows() == skipped);
  CHECK(b.loss_scale_state().scale() == 65536.0 / static_cast<double>(1u << skipped));
  CHECK(b.step_count() == 30 - skipped);
  CHECK(last < first - 2.0);  // it learned
  // The f16 parameters are the f32 master rounded once.
  std::size_t exact = 0;
  for (std::size_t i = 0; i < f16_plan::param_count; ++i) exact += b.params()[i].bits == f16(b.master()[i]).bits;
  CHECK(exact == f16_plan::param_count);
}

TEST_CASE("an f16 overflow skips the step and halves the loss scale, good steps double it", "[train][f16]") {
  // example-begin f16-loss-scaling
  // f16_plan = plan<small_gpt, batch<micro<4>, seq<32>>, precision<f16, f32>>
  train_options o = options();
  o.loss_scale.init_scale = 1024.0;  // default 2^16; small enough here not to overflow by itself
  o.loss_scale.growth_interval = 3;  // default 2000 good steps
  // Fault injection (tests only): the third step's loss and gradients times infinity.
  o.fault = [](std::size_t call) { return call == 2 ? std::numeric_limits<double>::infinity() : 1.0; };
  training_step<f16_plan> s(o);
  token_stream ts;
  std::vector<step_metrics> ms;
  for (std::size_t i = 0; i < 7; ++i) ms.push_back(s.step(ts));  // .loss_scale: the scale each step ran with
  // example-end f16-loss-scaling
  // steps 0, 1 good at 1024; step 2 the injected overflow: skipped, not counted, scale halved
  CHECK(!ms[0].skipped);
  CHECK(!ms[1].skipped);
  CHECK(ms[1].loss_scale == 1024.0);
  CHECK(ms[2].skipped);
  CHECK(ms[2].nonfinite);
  CHECK(ms[2].loss_scale == 1024.0);
  CHECK(ms[2].step == 2);
  CHECK(ms[3].loss_scale == 512.0);  // halved by the overflow (the 2 good steps before it forgotten)
  // steps 3, 4, 5: three good steps at 512, then the scale doubles
  CHECK(!ms[3].skipped);
  CHECK(ms[5].loss_scale == 512.0);
  CHECK(ms[6].loss_scale == 1024.0);
  CHECK(s.loss_scale_state().overflows() == 1);
  CHECK(s.step_count() == 6);
}

TEST_CASE("a skipped f16 step leaves parameters and optimizer state as they were", "[train][f16]") {
  train_options o = options();
  o.fault = [](std::size_t call) { return call == 1 ? std::numeric_limits<double>::quiet_NaN() : 1.0; };
  training_step<f16_plan> s(o);
  token_stream ts;
  s.step(ts);
  const std::vector<f16> p(s.params().begin(), s.params().end());
  const std::vector<float> master(s.master().begin(), s.master().end()), m(s.adam_m().begin(), s.adam_m().end());
  const auto skipped = s.step(ts);
  CHECK(skipped.skipped);
  std::size_t same = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    same += p[i].bits == s.params()[i].bits && master[i] == s.master()[i] && m[i] == s.adam_m()[i];
  CHECK(same == p.size());
  CHECK(s.step(ts).loss_scale == skipped.loss_scale * 0.5);
}

TEST_CASE("f16 matmul: float accumulation, one rounding, inf beyond 65504", "[ops][f16]") {
  // A product of f16 inputs against the double product of the same (rounded) values: f16 keeps
  // 11 significant bits (u = 2^-11), so one rounding of the output is within 2^-10 of its
  // largest magnitude with room for the float sum over k = 96.
  constexpr std::size_t m = 70, n = 300, k = 96;
  std::vector<f16> a(m * k), b(k * n), c(m * n, f16(0.0f));
  std::vector<double> ad(m * k), bd(k * n);
  std::uint64_t r = 7;
  auto next = [&] {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(r >> 11) * 0x1p-53 * 2.0 - 1.0;
  };
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = f16(static_cast<float>(next())), ad[i] = static_cast<float>(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = f16(static_cast<float>(next())), bd[i] = static_cast<float>(b[i]);
  ops::detail::gemm<f16>(false, false, m, n, k, f16(1.0f), a.data(), k, b.data(), n, f16(0.0f), c.data(), n);
  double worst = 0, top = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double ref = 0;
      for (std::size_t p = 0; p < k; ++p) ref += ad[i * k + p] * bd[p * n + j];
      worst = std::max(worst, std::abs(static_cast<double>(static_cast<float>(c[i * n + j])) - ref));
      top = std::max(top, std::abs(ref));
    }
  CHECK(worst / top <= 0x1p-10);
  CHECK(worst > 0);  // it did round to f16 (a float result would be exact here to ~1e-7)
  // Beyond f16's range the product is inf (what loss scaling detects), not a wrapped value.
  std::vector<f16> big_a(k, f16(200.0f)), big_b(k, f16(200.0f)), out(1, f16(0.0f));
  ops::detail::gemm<f16>(false, false, 1, 1, k, f16(1.0f), big_a.data(), k, big_b.data(), 1, f16(0.0f), out.data(), 1);
  CHECK(std::isinf(static_cast<float>(out[0])));
}
