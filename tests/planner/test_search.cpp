// The search: its best is the fastest feasible strategy of the space, options pin choices,
// an impossible job reports the shortfall.
#include <weft/planner/search.hpp>

#include <catch2/catch.hpp>

using namespace weft::planner;

TEST_CASE("the search ranks feasible strategies by step time", "[planner][search]") {
  const model_desc md = llama_desc(32, 4096, 32, 8, 32000, 4096, 14336);  // 8B
  const cluster c = presets::h100_sxm(2);
  constexpr std::size_t k = 16;
  const search_result<k> r = search<k>(md, {256, 4096}, c);
  REQUIRE(r.found());
  CHECK(r.evaluated > 1000);
  for (std::size_t i = 0; i < r.count; ++i) {
    const candidate& x = r.ranked[i];
    CHECK(x.cost.fits);
    CHECK(x.strategy.gpus() == 16);
    CHECK(x.strategy.dp * x.strategy.micro * x.strategy.microbatches == 256);
    CHECK(md.heads % x.strategy.tp == 0);
    CHECK(md.depth % x.strategy.pp == 0);
    if (i > 0) CHECK(r.ranked[i - 1].cost.step_seconds <= x.cost.step_seconds);
  }
  // a strategy outside the ranking is not faster than the best: spot-check plain ZeRO-3 data parallelism
  strategy_desc s{};
  s.dp = 16, s.zero = 3, s.micro = 1, s.microbatches = 16, s.recompute = recompute_kind::full;
  const step_cost z3 = estimate_step(md, 4096, s, c);
  if (z3.fits) CHECK(r.best().cost.step_seconds <= z3.step_seconds);
}

TEST_CASE("fixed choices are respected", "[planner][search]") {
  const model_desc md = gpt_desc(24, 2048, 16, 51200, 2048);
  search_options o{};
  o.fixed_tp = 2, o.fixed_pp = 2, o.fix_recompute = true, o.recompute = recompute_kind::full;
  const auto r = search<4>(md, {64, 2048}, presets::a100_80gb(1), o);
  REQUIRE(r.found());
  for (std::size_t i = 0; i < r.count; ++i) {
    CHECK(r.ranked[i].strategy.tp == 2);
    CHECK(r.ranked[i].strategy.pp == 2);
    CHECK(r.ranked[i].strategy.recompute == recompute_kind::full);
  }
}

TEST_CASE("an impossible job finds nothing and says how much memory is short", "[planner][search]") {
  const model_desc md = gpt_desc(96, 12288, 96, 51200, 2048);  // 175B on 8 GPUs
  const auto r = search<4>(md, {8, 2048}, presets::a100_80gb(1));
  CHECK_FALSE(r.found());
  CHECK(r.leanest_bytes > r.memory_limit);
  // the leanest is ZeRO-less full model states over 8 ranks at best: at least 16·Ψ/8 bytes
  CHECK(r.leanest_bytes >= 16.0 * static_cast<double>(md.params()) / 8 * 0.99);
}
