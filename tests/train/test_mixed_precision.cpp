// precision<bf16, f32> run for real on the host: bf16 parameters, gradients and activations,
// f32 master weights and AdamW moments, f32 losses. The plan's sections carry those dtypes and
// agree with the memory model's bytes per parameter; single-type plans keep their layout; a
// small GPT trained in bf16 tracks the same run in f32; the bf16 parameters are always the
// f32 master rounded once. (The demo-sized check, train_gpt --precision, is the CTest
// train.bf16_tracks_f32_validation_loss in tests/train/train.cmake.)
#include <weft/weft.hpp>

#include <catch2/catch.hpp>

#include "precision_fixture.hpp"  // small_gpt, f32_plan, token_stream, options

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace weft;
using namespace weft_test;  // precision_fixture.hpp

using bf16_plan = plan<small_gpt, batch<micro<4>, seq<32>>, precision<bf16, f32>>;

TEST_CASE("a precision<bf16, f32> plan lays out bf16 working state and f32 optimizer state", "[train][bf16]") {
  using P = bf16_plan;
  STATIC_REQUIRE(P::mixed_precision);
  CHECK(P::section_dtypes[P::params] == "bf16");
  CHECK(P::section_dtypes[P::grads] == "bf16");
  CHECK(P::section_dtypes[P::master] == "f32");
  CHECK(P::section_dtypes[P::adam_m] == "f32");
  CHECK(P::section_dtypes[P::adam_v] == "f32");
  CHECK(P::section_dtypes[P::kept] == "bf16");
  CHECK(P::section_dtypes[P::losses] == "f32");
  CHECK(P::section(P::params).bytes == P::param_count * 2);
  CHECK(P::section(P::grads).bytes == P::param_count * 2);
  CHECK(P::section(P::master).bytes == P::param_count * 4);
  CHECK(P::section(P::adam_m).bytes == P::param_count * 4);
  CHECK(P::section(P::losses).bytes == P::rows * 4);
  // Model states per parameter as the memory model counts them (2 + 2 + 4 + 8 = 16 bytes).
  constexpr state_bytes sb = state_bytes_for<bf16, f32>;
  CHECK(P::bytes_of(P::params) + P::bytes_of(P::grads) + P::bytes_of(P::master) + P::bytes_of(P::adam_m) +
            P::bytes_of(P::adam_v) ==
        P::param_count * sb.total());
  // Sections are disjoint, aligned and inside the arena.
  std::size_t end = 0;
  for (std::size_t i = 0; i < P::n_sections; ++i) {
    const auto s = P::section(static_cast<P::section_id>(i));
    CHECK(s.offset % 64 == 0);
    CHECK(s.offset >= end);
    end = s.offset + s.bytes;
  }
  CHECK(end <= P::bytes_per_rank);
  CHECK(P::bytes_per_rank < f32_plan::bytes_per_rank);  // activations halve; optimizer state does not
}

TEST_CASE("a single-type plan has no master section and the old layout", "[train][bf16]") {
  using P = f32_plan;
  STATIC_REQUIRE(!P::mixed_precision);
  CHECK(P::section(P::master).bytes == 0);
  CHECK(P::offsets[P::master] == P::offsets[P::adam_m]);
  // params, grads, m, v back to back, each param_count floats (64-byte aligned).
  constexpr std::size_t block = (P::param_count * 4 + 63) / 64 * 64;
  CHECK(P::offsets[P::grads] == block);
  CHECK(P::offsets[P::adam_m] == 2 * block);
  CHECK(P::offsets[P::adam_v] == 3 * block);
  CHECK(P::offsets[P::kept] == 4 * block);
  CHECK(P::section_dtypes[P::losses] == "f32");
}

TEST_CASE("a small GPT trained in precision<bf16, f32> tracks the f32 run", "[train][bf16]") {
  training_step<f32_plan> a(options());
  training_step<bf16_plan> b(options());
  // Same initialisation: the bf16 parameters are the f32 initial values rounded.
  for (std::size_t i = 0; i < f32_plan::param_count; ++i) {
    REQUIRE(b.master()[i] == a.params()[i]);
    REQUIRE(b.params()[i].bits == bf16(a.params()[i]).bits);
  }
  token_stream sa, sb;
  std::vector<double> la, lb;
  for (int i = 0; i < 30; ++i) {
    const auto ma = a.step(sa), mb = b.step(sb);
    la.push_back(ma.loss);
    lb.push_back(mb.loss);
    INFO("step " << i << ": f32 loss " << ma.loss << ", bf16 loss " << mb.loss);
    REQUIRE(std::isfinite(mb.loss));
    REQUIRE(std::isfinite(mb.grad_norm));
    // Within 3% of the f32 loss at every step (measured: under 1%).
    CHECK(std::abs(mb.loss - ma.loss) <= 0.03 * ma.loss);
    CHECK(std::abs(mb.grad_norm - ma.grad_norm) <= 0.05 * ma.grad_norm + 1e-3);
  }
  CHECK(lb.back() < lb.front() - 2.0);  // it learned
  // The bf16 parameters are the f32 master rounded once, after every step.
  std::size_t exact = 0;
  for (std::size_t i = 0; i < bf16_plan::param_count; ++i)
    exact += b.params()[i].bits == bf16(b.master()[i]).bits ? 1 : 0;
  CHECK(exact == bf16_plan::param_count);
  // And evaluation reads the f32 losses.
  token_stream se{7}, se2{7};
  const double ea = a.evaluate(se, 2), eb = b.evaluate(se2, 2);
  CHECK(std::abs(eb - ea) <= 0.03 * ea);
}

TEST_CASE("bf16 gradients of one micro-batch agree with f32 gradients from the same parameters", "[train][bf16]") {
  training_step<f32_plan> a(options());
  training_step<bf16_plan> b(options());
  // Give the f32 model exactly the bf16 parameters, so only the arithmetic differs.
  for (std::size_t i = 0; i < f32_plan::param_count; ++i) a.params()[i] = static_cast<float>(b.params()[i]);
  token_stream sa, sb;
  sa(a.tokens(), a.targets());
  sb(b.tokens(), b.targets());
  ops::zero(a.context(), a.grads().data(), f32_plan::param_count);
  ops::zero(b.context(), b.grads().data(), bf16_plan::param_count);
  const double loss_a = a.accumulate(1.0f / f32_plan::rows), loss_b = b.accumulate(1.0f / bf16_plan::rows);
  CHECK(std::abs(loss_b - loss_a) <= 1e-2 * loss_a);
  // Per parameter tensor: max |difference| over max |f32 gradient|. bf16 activations carry a
  // relative error of 2^-8 per rounding through two blocks forward and back; 5% bounds it
  // with room (measured: 0.8% for the worst tensor).
  double worst = 0;
  for (const auto& p : f32_plan::parameters()) {
    double diff = 0, scale = 1e-30;
    for (std::size_t i = p.offset; i < p.offset + p.size; ++i) {
      diff = std::max(diff, std::abs(double(b.grads()[i]) - double(a.grads()[i])));
      scale = std::max(scale, std::abs(double(a.grads()[i])));
    }
    INFO(p.name << ": " << diff / scale);
    CHECK(diff / scale < 0.05);
    worst = std::max(worst, diff / scale);
  }
  WARN("bf16 vs f32 gradients, worst tensor: " << worst);
}

TEST_CASE("initialise_parameter_range gives each slice of the initial block, rounded through f32", "[train][bf16]") {
  // What a ZeRO rank computes for its shard alone, and the bf16 parameters written without a
  // model-sized f32 temporary: the same values as the whole block's initialisation.
  const auto infos = f32_plan::parameters();
  const std::size_t n = f32_plan::param_count;
  std::vector<float> whole(n);
  initialise_parameters(std::span<float>(whole), infos, 7);
  std::vector<bf16> rounded_whole(n);
  ops::cast(host_context{}, rounded_whole.data(), whole.data(), n);
  // Uneven cuts that split parameters in the middle (a random one and a constant one).
  for (const std::size_t parts : {std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    for (std::size_t r = 0, begin = 0; r < parts; ++r) {
      const std::size_t size = n / parts + (r < n % parts ? 1 : 0);
      std::vector<float> slice(size, -1.0f);
      initialise_parameter_range(std::span<float>(slice), begin, infos, 7);
      std::vector<bf16> rounded(size);
      initialise_parameter_range<float>(std::span<bf16>(rounded), begin, infos, 7);
      std::size_t same = 0, same_rounded = 0;
      for (std::size_t i = 0; i < size; ++i) {
        same += slice[i] == whole[begin + i];
        same_rounded += rounded[i].bits == rounded_whole[begin + i].bits;
      }
      CHECK(same == size);
      CHECK(same_rounded == size);
      begin += size;
    }
  }
  // Another seed gives other values (the range is not a copy of something fixed): the token
  // embedding, first in the block, is random.
  std::vector<float> other(64);
  initialise_parameter_range(std::span<float>(other), 0, infos, 8);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 64; ++i) differ += other[i] != whole[i];
  CHECK(differ > 0);
}

TEST_CASE("norm layers keep their statistics in f32 in a bf16 plan (the precision decides)", "[train][bf16]") {
  // layernorm and rmsnorm over bf16 rows: the kept mean and 1/std are f32 (ops::stat_t<bf16>),
  // equal to the f64 statistics of the same bf16 inputs to f32 precision; a bf16-rounded 1/std
  // would be off by up to 2^-9. The block starts at an odd bf16 element, so the statistics are
  // aligned inside it (norm_stat_slots reserves the slot).
  constexpr std::size_t B = 2, S = 3, C = 40, N = B * S;
  STATIC_REQUIRE(std::is_same_v<ops::stat_t<bf16>, float>);
  STATIC_REQUIRE(layernorm<C>::kept_count<B, S> == norm_stat_slots<2 * N>);
  std::vector<bf16> x(N * C), y(N * C), params(2 * C), kept(1 + layernorm<C>::kept_count<B, S> + 1);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = bf16(static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3.0 + 0.5));
  for (std::size_t c = 0; c < C; ++c) params[c] = bf16(1.0f), params[C + c] = bf16(0.0f);
  frame<bf16, B, S, layernorm<C>> f;
  f.params = f.root_params = params.data();
  f.kept = kept.data() + 1;  // odd: not 4-byte aligned
  layernorm<C>::forward(f, x.data(), y.data());
  const float* stats = norm_stats(f.kept);
  REQUIRE(reinterpret_cast<std::uintptr_t>(stats) % alignof(float) == 0);
  REQUIRE(reinterpret_cast<const std::byte*>(stats + 2 * N) <= reinterpret_cast<const std::byte*>(kept.data() + kept.size() - 1));
  double worst_rstd = 0;
  for (std::size_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (std::size_t c = 0; c < C; ++c) mean += static_cast<double>(static_cast<float>(x[n * C + c]));
    mean /= C;
    for (std::size_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(static_cast<float>(x[n * C + c])) - mean;
      var += d * d;
    }
    const double rstd = 1.0 / std::sqrt(var / C + 1e-5);
    CHECK(std::abs(stats[n] - mean) <= 1e-6 * (std::abs(mean) + 1));
    worst_rstd = std::max(worst_rstd, std::abs(stats[N + n] - rstd) / rstd);
  }
  CHECK(worst_rstd < 1e-6);
  // rmsnorm: the same for 1/rms.
  frame<bf16, B, S, rmsnorm<C>> g;
  g.params = g.root_params = params.data();
  g.kept = kept.data() + 1;
  rmsnorm<C>::forward(g, x.data(), y.data());
  const float* rrms = norm_stats(g.kept);
  double worst = 0;
  for (std::size_t n = 0; n < N; ++n) {
    double ss = 0;
    for (std::size_t c = 0; c < C; ++c) ss += std::pow(static_cast<double>(static_cast<float>(x[n * C + c])), 2);
    const double r = 1.0 / std::sqrt(ss / C + 1e-5);
    worst = std::max(worst, std::abs(rrms[n] - r) / r);
  }
  CHECK(worst < 1e-6);
}
