// Expert parallelism in the cost model: the all-to-alls of the routed rows (dispatch and combine,
// forward and backward) are priced in the step, the experts are split in memory, and the
// data-parallel gradients of experts and of the rest go over their own groups.
#include <weft/model/moe_gpt.hpp>
#include <weft/planner/step_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

namespace {
// A Mixtral-like shape as values: gpt's counts plus 8 experts of ffn 14336 (top 2) per block.
model_desc moe_desc() {
  model_desc m = gpt_desc(32, 4096, 32, 32000, 4096, 14336);
  m.moe_layers = 32;
  constexpr std::size_t expert = 2 * std::size_t{14336} * 4096;  // up and down
  m.expert_params = 32 * 8 * expert;
  m.block.sharded += 8 * expert - expert;  // 8 experts in place of one MLP
  m.routed_width = 32 * 2 * 4096;          // top 2 of width 4096, 32 layers
  return m;
}
strategy_desc dp8() {
  strategy_desc s{};
  s.dp = 8, s.micro = 1, s.microbatches = 4;
  return s;
}
}  // namespace

TEST_CASE("describe<> reads a mixture of experts from the model type", "[planner][model_desc][moe]") {
  using namespace weft;
  using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
  using moe_t = moe_mlp<16, 4, 2, 12, swiglu_experts>;
  constexpr model_desc md = describe<moe_gpt<cfg, moe_t>>();
  STATIC_REQUIRE(md.moe_layers == 2);
  STATIC_REQUIRE(md.expert_params == 2 * 4 * (24 * 16 + 16 * 12));  // gate|up (2·ffn, in) and down (in, ffn)
  STATIC_REQUIRE(md.routed_width == 2 * 2 * 16);
  STATIC_REQUIRE(md.stage_params(0, 1, 1, 2) == md.stage_params(0, 1, 1) - md.expert_params / 2);
  STATIC_REQUIRE(describe<gpt<cfg>>().moe_layers == 0);
}

TEST_CASE("expert parallelism: four all-to-alls of the routed rows per micro-batch", "[planner][step][moe]") {
  const cluster c = presets::h100_sxm(2);  // 16 GPUs, 8 per node
  const model_desc md = moe_desc();
  const strategy_desc base = dp8();
  const step_cost dense = estimate_step(md, 4096, base, c);
  CHECK(dense.seconds(cost_part::expert_parallel) == 0);

  strategy_desc s = base;
  s.ep = 2;  // 16 ranks: 8 replicas of 2
  const step_cost ep = estimate_step(md, 4096, s, c);
  // by hand: b·s tokens, each sends 2 rows of 4096 bf16 elements in every one of 32 layers; half stay
  const double routed = 1.0 * 4096 * (32 * 2 * 4096) * 2;
  const link_spec el = axis_link(c, 2, 1);
  CHECK(el.kind == link_kind::intra_node);
  CHECK(ep.seconds(cost_part::expert_parallel) == Approx(4 * 4 * all_to_all_seconds(routed, 2, el)));
  CHECK(all_to_all_seconds(routed, 2, el) == Approx(el.latency + routed / 2 / el.bandwidth));
  CHECK(ep.items[static_cast<std::size_t>(cost_part::expert_parallel)].on == link_kind::intra_node);
  // the breakdown still adds up, and the step pays for the exchange
  double sum = 0;
  for (const cost_item& i : ep.items) sum += i.seconds;
  CHECK(sum == Approx(ep.step_seconds));
  // each rank holds half the experts: parameters, gradients and optimizer state
  CHECK(ep.memory.params == md.stage_params(0, 1, 1) - md.expert_params / 2);
  CHECK(ep.memory.params < dense.memory.params);
  // every rank of an expert group brings its own tokens: twice the tokens of dp 8 alone
  CHECK(ep.model_flops == Approx(2 * dense.model_flops));

  // full recomputation runs the forward's two all-to-alls again
  s.recompute = weft::recompute_kind::full;
  const step_cost full = estimate_step(md, 4096, s, c);
  CHECK(full.seconds(cost_part::expert_parallel) == Approx(1.5 * ep.seconds(cost_part::expert_parallel)));

  // more ranks per group: more of the rows leave the rank
  s.recompute = weft::recompute_kind::none, s.ep = 4, s.dp = 4;
  const step_cost ep4 = estimate_step(md, 4096, s, c);
  const link_spec el4 = axis_link(c, 4, 1);
  CHECK(ep4.seconds(cost_part::expert_parallel) == Approx(4 * 4 * all_to_all_seconds(routed, 4, el4)));
  CHECK(ep4.seconds(cost_part::expert_parallel) > ep.seconds(cost_part::expert_parallel));
}
