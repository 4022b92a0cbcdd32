// Stack profiles and --calibrate (include/weft/planner/stack_profile.hpp): a profile scales the
// cost model's rates, and one measured step fits one factor — checked on cases whose answer can be
// worked out by hand (a step that is all GEMM time, a step that is all tensor-parallel traffic).
#include <weft/planner/stack_profile.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

namespace {
// One GPU whose every term but the GEMMs is free: no latency, endless memory and link bandwidth,
// no per-step overhead. Its step is the GEMM seconds, FLOPs / (peak · efficiency · gemm factor).
cluster gemm_only() {
  cluster c = presets::a100_80gb(1);
  c.memory_bandwidth = 1e30, c.step_overhead_seconds = 0;
  return c;
}
// Two GPUs with tensor parallelism whose compute is free (endless peak and memory bandwidth) and
// whose links have no latency: the step is the tp all-reduces, bytes / (bandwidth · comm factor).
cluster comm_only() {
  cluster c = presets::a100_80gb(1);
  c.gpus_per_node = 2, c.peak_flops_16 = c.peak_flops_32 = 1e30, c.memory_bandwidth = 1e30;
  c.intra_latency = c.inter_latency = 0, c.step_overhead_seconds = 0;
  return c;
}
const model_desc small = gpt_desc(4, 1024, 16, 32768, 1024);
}  // namespace

TEST_CASE("profiles by name, megatron the fitted constants", "[planner][stack]") {
  CHECK(find_stack("megatron").found);
  CHECK(find_stack("megatron").value == stacks::megatron());
  CHECK(find_stack("deepspeed").value.gemm < 1);
  CHECK(find_stack("fsdp-h100").value.gemm < 1);
  CHECK_FALSE(find_stack("jax").found);
  const cluster c = presets::h100_sxm(2);
  const cluster m = with_stack(c, stacks::megatron());
  CHECK(m.peak_flops_16 == c.peak_flops_16);
  CHECK(m.inter_bandwidth == c.inter_bandwidth);
  const cluster d = with_stack(c, {"x", 0.5, 0.25, 2, 0.1});
  CHECK(d.peak_flops_16 == Approx(c.peak_flops_16 * 0.5));
  CHECK(d.peak_flops_8 == Approx(c.peak_flops_8 * 0.5));
  CHECK(d.intra_bandwidth == Approx(c.intra_bandwidth * 0.25));
  CHECK(d.inter_bandwidth == Approx(c.inter_bandwidth * 0.25));
  CHECK(d.memory_bandwidth == Approx(c.memory_bandwidth * 2));
  CHECK(d.step_overhead_seconds == Approx(c.step_overhead_seconds + 0.1));
}

TEST_CASE("a GEMM factor halves the rate of a step that is all GEMMs", "[planner][stack]") {
  strategy_desc s{};
  s.micro = 4, s.microbatches = 2;
  const batch_desc b{8, 1024};
  const job_options o{};
  const cluster c = gemm_only();
  const double full = estimate_step(small, 1024, s, c, o).step_seconds;
  const double half = estimate_step(small, 1024, s, with_stack(c, {"x", 0.5, 1, 1, 0}), o).step_seconds;
  CHECK(half == Approx(2 * full).epsilon(1e-9));
  // Measured at 0.6 of the rate the constants predict: the fitted GEMM factor is 0.6.
  const double predicted = static_cast<double>(b.tokens()) / full;
  const calibration k = calibrate(small, b, s, c, o, stacks::megatron(), 0.6 * predicted);
  REQUIRE(k.ok);
  CHECK(k.factor == Approx(0.6).epsilon(1e-6));
  CHECK(k.fitted.gemm == Approx(0.6).epsilon(1e-6));
  CHECK(k.fitted.comm == 1);
  CHECK(k.predicted_before == Approx(predicted));
  CHECK(k.predicted_after == Approx(0.6 * predicted).epsilon(1e-6));
  // from another starting profile the same measurement fits the same absolute factor
  const calibration k2 = calibrate(small, b, s, c, o, {"start", 0.9, 1, 1, 0}, 0.6 * predicted);
  CHECK(k2.factor == Approx(0.6).epsilon(1e-6));
}

TEST_CASE("a comm factor fitted on a step that is all tensor-parallel traffic", "[planner][stack]") {
  strategy_desc s{};
  s.tp = 2, s.micro = 2, s.microbatches = 1;
  const batch_desc b{2, 1024};
  const job_options o{};
  const cluster c = comm_only();
  const double step = estimate_step(small, 1024, s, c, o).step_seconds;
  // by hand: 4 layers x 4 all-reduces of (s, b, h) bf16 over 2 ranks on NVLink, ring or tree:
  // ring 2·(n − 1)/n·S/β = S/β with β = 300 GB/s · 0.8; S = 1024·2·1024·2 bytes
  const double bytes = 1024.0 * 2 * 1024 * 2, beta = 300e9 * collective_efficiency;
  CHECK(estimate_step(small, 1024, s, c, o).seconds(cost_part::tensor_parallel) == Approx(16 * bytes / beta).epsilon(1e-9));
  const double predicted = static_cast<double>(b.tokens()) / step;
  const calibration k = calibrate(small, b, s, c, o, stacks::megatron(), 0.8 * predicted, stack_factor::comm);
  REQUIRE(k.ok);
  // the step is the traffic plus the (free) rest: comm factor 0.8 within the rest's share
  CHECK(k.factor == Approx(0.8).epsilon(1e-3));
  CHECK(k.fitted.gemm == 1);
}

TEST_CASE("calibrate refuses a measurement no factor can reach", "[planner][stack]") {
  strategy_desc s{};
  s.micro = 4, s.microbatches = 2;
  const batch_desc b{8, 1024};
  cluster c = gemm_only();
  c.step_overhead_seconds = 1;  // a second a step whatever the GEMMs: at most 8192 tokens/s
  const calibration k = calibrate(small, b, s, c, {}, stacks::megatron(), 1e6);
  CHECK_FALSE(k.ok);
  CHECK(k.fitted == stacks::megatron());
  CHECK_FALSE(calibrate(small, b, s, c, {}, stacks::megatron(), 0).ok);
}
