// Run-level numbers: throughput, time, cost, failures, Young/Daly.
#include <weft/planner/run_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

TEST_CASE("Young/Daly interval is sqrt(2 delta M)", "[planner][run]") {
  CHECK(young_daly_interval(60, 86400) == Approx(std::sqrt(2.0 * 60 * 86400)));
  CHECK(young_daly_interval(0, 86400) == 0);
}

TEST_CASE("the run adds checkpoints and failures to the training time", "[planner][run]") {
  const model_desc md = gpt_desc(96, 12288, 96, 51200, 2048);  // GPT-3 175B
  cluster c = presets::a100_80gb(128);
  step_cost st{};
  st.step_seconds = 20;
  st.model_flops = 1e18, st.hardware_flops = 1.3e18;
  const run_cost r = estimate_run(md, st, 1536 * 2048, 300e9, 1024, c);
  CHECK(r.tokens_per_second == Approx(1536.0 * 2048 / 20));
  CHECK(r.train_seconds == Approx(300e9 / r.tokens_per_second));
  CHECK(r.mtbf_seconds == Approx(86400 / (128 * c.failures_per_node_day)));
  CHECK(r.checkpoint_interval_seconds == Approx(std::sqrt(2 * r.checkpoint_write_seconds * r.mtbf_seconds)));
  CHECK(r.wall_seconds > r.train_seconds);
  CHECK(r.expected_interruptions == Approx(r.wall_seconds / r.mtbf_seconds));
  CHECK(r.wall_seconds == Approx(r.train_seconds + r.checkpoint_lost_seconds + r.failure_lost_seconds));
  CHECK(r.gpu_hours == Approx(1024 * r.wall_seconds / 3600));
  CHECK(r.cost_usd == Approx(r.gpu_hours * c.price_per_gpu_hour));
  CHECK(r.mfu == Approx(1e18 / 20 / (1024 * c.peak_flops_16)));
  // no failures: the wall time is the training time plus nothing
  c.failures_per_node_day = 0;
  const run_cost calm = estimate_run(md, st, 1536 * 2048, 300e9, 1024, c);
  CHECK(calm.expected_interruptions < 1e-6);
}

TEST_CASE("Narayanan et al.'s 8TP/(nX) estimates", "[planner][run]") {
  // GPT-3 175B on 300B tokens, 1024 A100 at 140 TFLOP/s: about 34 days
  CHECK(narayanan_training_seconds(300e9, 175e9, 1024, 140e12) / 86400 == Approx(34).margin(0.5));
  // 1T parameters (1008B, Table 1) on 450B tokens, 3072 A100 at 163 TFLOP/s: about 84 days
  CHECK(narayanan_training_seconds(450e9, 1.008e12, 3072, 163e12) / 86400 == Approx(84).margin(0.5));
}
