// The step model: each part of the breakdown responds to what should move it.
#include <weft/planner/step_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

namespace {
const model_desc md = gpt_desc(48, 8192, 64, 51200, 2048);  // 39B
strategy_desc base() {
  strategy_desc s{};
  s.tp = 8, s.pp = 4, s.dp = 4, s.micro = 1, s.microbatches = 16, s.recompute = recompute_kind::selective;
  return s;
}
}  // namespace

TEST_CASE("the breakdown adds up to the step", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  const step_cost st = estimate_step(md, 2048, base(), c);
  double sum = 0;
  for (const cost_item& i : st.items) sum += i.seconds;
  CHECK(sum == Approx(st.step_seconds));
  CHECK(st.seconds(cost_part::compute) > 0);
  CHECK(st.items[static_cast<std::size_t>(cost_part::tensor_parallel)].on == link_kind::intra_node);
  CHECK(st.items[static_cast<std::size_t>(cost_part::data_parallel)].on == link_kind::inter_node);
  // model FLOPs: 6·N + 12·l·h·s per token, over the global batch
  CHECK(st.model_flops == Approx(md.flops_per_token(2048) * 4 * 16 * 2048));
  CHECK(st.hardware_flops > st.model_flops);  // selective recompute repeats the attention core
}

TEST_CASE("the bubble is (P - 1)/V micro-batches", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  const step_cost one = estimate_step(md, 2048, s, c);
  const double per_mb = (one.seconds(cost_part::compute) + one.seconds(cost_part::recompute) +
                         one.seconds(cost_part::tensor_parallel)) / 16;
  CHECK(one.seconds(cost_part::bubble) == Approx(3 * per_mb));
  s.schedule = schedule_kind::interleaved, s.chunks = 2;
  const step_cost two = estimate_step(md, 2048, s, c);
  CHECK(two.seconds(cost_part::bubble) == Approx(one.seconds(cost_part::bubble) / 2));
  CHECK(two.seconds(cost_part::pipeline_p2p) > one.seconds(cost_part::pipeline_p2p));  // interleaving sends more
}

TEST_CASE("tensor parallelism across nodes is slower than inside one", "[planner][step]") {
  cluster c = presets::a100_80gb(16);
  const step_cost inside = estimate_step(md, 2048, base(), c);
  c.gpus_per_node = 4;  // tp = 8 now spans two nodes: 4 NICs (100 GB/s) instead of NVLink (300 GB/s)
  c.nodes = 32;
  const step_cost across = estimate_step(md, 2048, base(), c);
  CHECK(across.seconds(cost_part::tensor_parallel) > 2 * inside.seconds(cost_part::tensor_parallel));
}

TEST_CASE("gradient reduction hides behind backward", "[planner][step]") {
  const cluster c = presets::a100_80gb(4);
  const model_desc small = gpt_desc(24, 2048, 16, 51200, 2048);
  strategy_desc s{};
  s.dp = 32, s.micro = 4, s.microbatches = 4;
  job_options o{};
  const step_cost hidden = estimate_step(small, 2048, s, c, o);
  o.overlap_grad_reduce = false;
  const step_cost exposed = estimate_step(small, 2048, s, c, o);
  CHECK(hidden.seconds(cost_part::data_parallel) < exposed.seconds(cost_part::data_parallel));
  CHECK(hidden.seconds(cost_part::data_parallel) + hidden.dp_hidden_seconds == Approx(exposed.seconds(cost_part::data_parallel)));
}

TEST_CASE("recompute costs time, full more than selective", "[planner][step]") {
  const cluster c = presets::a100_80gb(16);
  strategy_desc s = base();
  s.recompute = recompute_kind::none;
  const double none = estimate_step(md, 2048, s, c).seconds(cost_part::recompute);
  s.recompute = recompute_kind::selective;
  const double sel = estimate_step(md, 2048, s, c).seconds(cost_part::recompute);
  s.recompute = recompute_kind::full;
  const step_cost full = estimate_step(md, 2048, s, c);
  CHECK(none == 0);
  CHECK(sel > 0);
  CHECK(full.seconds(cost_part::recompute) > 5 * sel);
  // the forward again: about a third of forward + backward
  CHECK(full.seconds(cost_part::recompute) == Approx(full.seconds(cost_part::compute) / 3).epsilon(0.1));
}
