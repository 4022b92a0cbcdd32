// auto_strategy: the compile-time search yields a strategy type that plan<> accepts, whose
// per-rank memory is the one the search priced, and that is the fastest of its ranking.
#include <weft/model/gpt.hpp>
#include <weft/model/llama.hpp>
#include <weft/planner/auto_strategy.hpp>

#include <catch2/catch.hpp>

using namespace weft;

namespace {
using gpt2_small = gpt<gpt_config<vocab<50304>, context<1024>, width<768>, heads<12>, depth<12>>>;
using llama_1b = llama<llama_config<vocab<32000>, context<2048>, width<2048>, heads<16>, kv_heads<4>, depth<16>, ffn<5632>>>;

// A GPU small enough that the 1B model must be split.
struct small_gpus {
  static constexpr planner::cluster value = [] {
    planner::cluster c = planner::presets::a100_80gb(2);
    c.memory_bytes = 8e9;
    return c;
  }();
};
}  // namespace

// The snippet of docs/planner.md.
// example-begin auto-strategy
// GPT-2 small, 64 sequences of 1024 tokens per step, one DGX A100 node: the fastest split that fits.
using pick = auto_strategy<gpt2_small, global_batch<64, 1024>, planner::a100_nodes<1>>;
using plan_t = pick::plan_type;  // plan<gpt2_small, batch<micro<b>, seq<1024>>, strategy<...>, precision<bf16, float>>
static_assert(plan_t::memory_per_rank <= 85.9e9);  // an A100 80GB: 80 GiB
constexpr double predicted_step = pick::best.cost.step_seconds;  // the cost model's prediction, seconds
constexpr auto runner_up = pick::result.ranked[1].strategy;       // the ranked alternatives
// example-end auto-strategy

TEST_CASE("auto_strategy picks a plan whose memory is the search's", "[planner][auto_strategy]") {
  STATIC_REQUIRE(pick::found);
  STATIC_REQUIRE(predicted_step > 0);
  STATIC_REQUIRE(runner_up.gpus() == 8);
  STATIC_REQUIRE(pick::plan_type::strategy_fits);
  STATIC_REQUIRE(pick::strategy_type::tp * pick::strategy_type::pp * pick::strategy_type::dp == 8);
  STATIC_REQUIRE(pick::plan_type::memory_per_rank == pick::best.cost.memory.total());
  STATIC_REQUIRE(pick::plan_type::memory_per_rank <= pick::result.memory_limit);
  // the batch is covered: dp · b · M sequences
  STATIC_REQUIRE(pick::chosen.dp * pick::chosen.micro * pick::chosen.microbatches == 64);
  // ranked fastest first
  for (std::size_t i = 1; i < pick::result.count; ++i)
    CHECK(pick::result.ranked[i - 1].cost.step_seconds <= pick::result.ranked[i].cost.step_seconds);
  CHECK(pick::result.feasible >= pick::result.count);
}

TEST_CASE("auto_strategy splits a model that does not fit one small GPU", "[planner][auto_strategy]") {
  using pick = auto_strategy<llama_1b, global_batch<32, 2048>, small_gpus>;
  STATIC_REQUIRE(pick::found);
  // 1.1B parameters × 16 bytes of model states do not fit 8 GB: something must shard them
  constexpr auto c = pick::chosen;
  STATIC_REQUIRE(c.tp * c.pp > 1 || c.zero >= 1);
  STATIC_REQUIRE(pick::plan_type::memory_per_rank == pick::best.cost.memory.total());
  STATIC_REQUIRE(pick::plan_type::memory_per_rank <= 8e9 * small_gpus::value.usable_memory_fraction);
}
