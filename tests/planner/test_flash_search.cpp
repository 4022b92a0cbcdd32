// The search with flash attention as an input (search_options::flash, flash_search<>): every
// candidate runs it, selective recompute (its twin) is not tried, and auto_strategy's winner maps
// to a strategy<> with flash_attention. At a long sequence, where the probabilities do not fit
// small GPUs, flash admits fewer model-parallel ranks than keeping them does.
#include <weft/model/llama.hpp>
#include <weft/planner/auto_strategy.hpp>

#include <catch2/catch.hpp>

using namespace weft;

namespace {
// The 1.1B LLaMA of test_auto_strategy.cpp at 4096 tokens: 16 heads × 4096² bf16 probabilities are
// 512 MiB a layer and sequence, 8 GiB over the 16 layers.
using llama_1b_4k = llama<llama_config<vocab<32000>, context<4096>, width<2048>, heads<16>, kv_heads<4>, depth<16>, ffn<5632>>>;
using long_batch = global_batch<32, 4096>;

// 16 GPUs of 8 GB: the model states fit with ZeRO, the probabilities of one sequence not beside them.
struct small_gpus {
  static constexpr planner::cluster value = [] {
    planner::cluster c = planner::presets::a100_80gb(2);
    c.memory_bytes = 8e9;
    return c;
  }();
};
// Recompute pinned to none: the probabilities (or with flash, the row statistics) are kept.
struct keep_all {
  static constexpr planner::search_options value = [] {
    planner::search_options o{};
    o.fix_recompute = true, o.recompute = recompute_kind::none;
    return o;
  }();
};

template <class Pick>
constexpr std::size_t model_parallel_ranks() {
  return Pick::chosen.tp * Pick::chosen.pp;
}
}  // namespace

// example-begin auto-strategy-flash
// The same search with flash attention on: the winner's strategy<> carries flash_attention.
using flash_pick = auto_strategy<llama_1b_4k, long_batch, small_gpus, planner::flash_search<>>;
static_assert(flash_pick::chosen.flash && flash_pick::strategy_type::flash && flash_pick::plan_type::flash);
static_assert(flash_pick::plan_type::memory_per_rank == flash_pick::best.cost.memory.total());
// example-end auto-strategy-flash

TEST_CASE("with flash on, auto_strategy's winner runs flash attention", "[planner][auto_strategy][flash]") {
  using plain_pick = auto_strategy<llama_1b_4k, long_batch, small_gpus>;
  STATIC_REQUIRE(flash_pick::found);
  STATIC_REQUIRE(flash_pick::chosen.flash);
  STATIC_REQUIRE(flash_pick::strategy_type::flash);
  STATIC_REQUIRE(flash_pick::plan_type::flash);
  STATIC_REQUIRE(flash_pick::plan_type::strategy_fits);
  STATIC_REQUIRE(flash_pick::plan_type::memory_per_rank == flash_pick::best.cost.memory.total());
  STATIC_REQUIRE(flash_pick::plan_type::memory_per_rank <= flash_pick::result.memory_limit);
  for (std::size_t i = 0; i < flash_pick::result.count; ++i) {
    CHECK(flash_pick::result.ranked[i].strategy.flash);
    CHECK(flash_pick::result.ranked[i].strategy.recompute != recompute_kind::selective);
  }
  // Off by default: the plain search keeps the probabilities, and here must drop them
  // (selective recompute) to fit; flash drops them for half the recomputation, so it is faster.
  STATIC_REQUIRE(!plain_pick::chosen.flash);
  STATIC_REQUIRE(!plain_pick::strategy_type::flash);
  STATIC_REQUIRE(!plain_pick::plan_type::flash);
  STATIC_REQUIRE(plain_pick::chosen.recompute == recompute_kind::selective);
  STATIC_REQUIRE(flash_pick::chosen.recompute == recompute_kind::none);
  STATIC_REQUIRE(flash_pick::best.cost.step_seconds < plain_pick::best.cost.step_seconds);
}

TEST_CASE("flash fits the probabilities' sequence on fewer model-parallel ranks", "[planner][auto_strategy][flash]") {
  // Keeping what the forward computes (no recompute): without flash the probabilities need the
  // heads cut over 4 tensor-parallel ranks; with flash one rank holds the row statistics.
  using probs = auto_strategy<llama_1b_4k, long_batch, small_gpus, keep_all>;
  using stats = auto_strategy<llama_1b_4k, long_batch, small_gpus, planner::flash_search<keep_all>>;
  STATIC_REQUIRE(probs::chosen.recompute == recompute_kind::none);
  STATIC_REQUIRE(stats::chosen.recompute == recompute_kind::none);
  STATIC_REQUIRE(model_parallel_ranks<probs>() == 4);
  STATIC_REQUIRE(model_parallel_ranks<stats>() == 1);
  STATIC_REQUIRE(stats::plan_type::flash);
  STATIC_REQUIRE(stats::plan_type::memory_per_rank == stats::best.cost.memory.total());
  // no strategy with fewer than 4 model-parallel ranks fits without flash
  for (std::size_t tp : {1, 2})
    for (std::size_t pp : {1, 2}) {
      if (tp * pp >= 4) continue;
      planner::search_options o = keep_all::value;
      o.fixed_tp = tp, o.fixed_pp = pp;
      CHECK_FALSE(planner::search<1>(probs::model, probs::global, small_gpus::value, o).found());
    }
}

TEST_CASE("the flash search prices flash candidates and skips selective recompute", "[planner][search][flash]") {
  const planner::model_desc md = planner::llama_desc(16, 2048, 16, 4, 32000, 4096, 5632);
  const planner::batch_desc batch{32, 4096};
  const planner::cluster c = small_gpus::value;
  planner::search_options o{};
  const auto plain = planner::search<16>(md, batch, c, o);
  o.flash = true;
  const auto flash = planner::search<16>(md, batch, c, o);
  REQUIRE(plain.found());
  REQUIRE(flash.found());
  CHECK(flash.layouts == plain.layouts);
  // Under flash each group of otherwise-equal strategies tries none, then full where none does
  // not fit: no selective candidates (they would be none's twins, priced and failing alike).
  planner::search_options keep = keep_all::value;
  keep.flash = true;
  const auto none_only = planner::search<1>(md, batch, c, keep);
  CHECK(flash.evaluated == none_only.evaluated + (none_only.evaluated - none_only.feasible));
  CHECK(flash.evaluated < plain.evaluated);
  for (std::size_t i = 0; i < flash.count; ++i) {
    const planner::candidate& x = flash.ranked[i];
    CHECK(x.strategy.flash);
    CHECK(x.strategy.recompute != recompute_kind::selective);
    // priced as estimate_step prices the flash strategy
    CHECK(x.cost.step_seconds == planner::estimate_step(md, batch.seq, x.strategy, c).step_seconds);
  }
  for (std::size_t i = 0; i < plain.count; ++i) CHECK_FALSE(plain.ranked[i].strategy.flash);
  // a pinned selective is none under flash (the two are the same computation)
  o.fix_recompute = true, o.recompute = recompute_kind::selective;
  const auto pinned = planner::search<4>(md, batch, c, o);
  REQUIRE(pinned.found());
  for (std::size_t i = 0; i < pinned.count; ++i) CHECK(pinned.ranked[i].strategy.recompute == recompute_kind::none);
  CHECK(pinned.best().cost.step_seconds == flash.best().cost.step_seconds);
}
