// Per-rank memory from values equals plan<...>::memory_per_rank (memory_model) for the same strategy,
// with and without flash_attention.
#include <weft/model/gpt.hpp>
#include <weft/model/llama.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/planner/auto_strategy.hpp>
#include <weft/planner/memory_cost.hpp>

#include <catch2/catch.hpp>

using namespace weft;

namespace {
using gpt_m = gpt<gpt_config<vocab<512>, context<128>, width<96>, heads<6>, depth<12>>>;
using llama_m = llama<llama_config<vocab<640>, context<128>, width<128>, heads<8>, kv_heads<2>, depth<8>, ffn<320>>>;

template <class M, planner::strategy_desc S, class Precision>
void check_plan(const planner::precision_desc& p) {
  using plan_t = plan<M, batch<micro<S.micro>, seq<128>>, planner::strategy_type_of<S>, Precision>;
  STATIC_REQUIRE(plan_t::strategy_fits);
  STATIC_REQUIRE(plan_t::flash == S.flash);  // strategy_type_of carries flash_attention
  const stage_memory m = planner::peak_stage_memory(planner::describe<M>(), 128, S, p);
  CHECK(m.total() == plan_t::memory_per_rank);
}

constexpr planner::strategy_desc make(std::size_t tp, std::size_t pp, std::size_t dp, std::size_t zero, bool sp,
                                      schedule_kind k, std::size_t v, std::size_t b, std::size_t m, recompute_kind rc) {
  planner::strategy_desc s{};
  s.tp = tp, s.pp = pp, s.dp = dp, s.zero = zero, s.sequence_parallel = sp, s.schedule = k, s.chunks = v, s.micro = b,
  s.microbatches = m, s.recompute = rc;
  return s;
}
constexpr planner::strategy_desc flash(planner::strategy_desc s) {
  s.flash = true;
  return s;
}
using K = schedule_kind;
using R = recompute_kind;
}  // namespace

TEST_CASE("memory from values is the plan's memory_per_rank", "[planner][memory]") {
  constexpr planner::precision_desc mixed = planner::mixed_bf16();
  constexpr planner::precision_desc f32 = planner::full_f32();
  check_plan<gpt_m, make(1, 1, 1, 0, false, K::one_f_one_b, 1, 2, 1, R::none), precision<float>>(f32);
  check_plan<gpt_m, make(2, 1, 4, 1, true, K::one_f_one_b, 1, 2, 1, R::selective), precision<bf16, float>>(mixed);
  check_plan<gpt_m, make(1, 4, 2, 2, false, K::one_f_one_b, 1, 1, 8, R::none), precision<bf16, float>>(mixed);
  check_plan<gpt_m, make(2, 2, 2, 3, false, K::gpipe, 1, 1, 4, R::full), precision<bf16, float>>(mixed);
  check_plan<gpt_m, make(2, 2, 1, 0, true, K::interleaved, 3, 1, 6, R::none), precision<bf16, float>>(mixed);
  check_plan<gpt_m, make(1, 3, 2, 1, false, K::interleaved, 2, 2, 9, R::selective), precision<float>>(f32);
  check_plan<llama_m, make(2, 2, 2, 1, true, K::interleaved, 2, 1, 4, R::none), precision<bf16, float>>(mixed);
  check_plan<llama_m, make(2, 1, 2, 3, false, K::one_f_one_b, 1, 4, 2, R::full), precision<bf16, float>>(mixed);
}

TEST_CASE("memory from values is the plan's memory_per_rank with flash attention", "[planner][memory][flash]") {
  constexpr planner::precision_desc mixed = planner::mixed_bf16();
  constexpr planner::precision_desc f32 = planner::full_f32();
  check_plan<gpt_m, flash(make(1, 1, 1, 0, false, K::one_f_one_b, 1, 2, 1, R::none)), precision<float>>(f32);
  check_plan<gpt_m, flash(make(2, 1, 4, 1, true, K::one_f_one_b, 1, 2, 1, R::selective)), precision<bf16, float>>(mixed);
  check_plan<gpt_m, flash(make(1, 4, 2, 2, false, K::one_f_one_b, 1, 1, 8, R::none)), precision<bf16, float>>(mixed);
  check_plan<gpt_m, flash(make(2, 2, 2, 3, false, K::gpipe, 1, 1, 4, R::full)), precision<bf16, float>>(mixed);
  check_plan<gpt_m, flash(make(2, 2, 1, 0, true, K::interleaved, 3, 1, 6, R::none)), precision<bf16, float>>(mixed);
  check_plan<llama_m, flash(make(2, 2, 2, 1, true, K::interleaved, 2, 1, 4, R::none)), precision<bf16, float>>(mixed);
  check_plan<llama_m, flash(make(1, 1, 2, 3, false, K::one_f_one_b, 1, 4, 2, R::selective)), precision<float>>(f32);
}

TEST_CASE("flash attention keeps row statistics instead of probabilities", "[planner][memory][flash]") {
  // Per layer and micro-batch on a rank: a·s·s·b·e bytes of probabilities become a·s·b·(4 + d·e)
  // (a 32-bit log-sum-exp a row and a copy of the output); selective recompute drops the
  // probabilities and keeps nothing instead, full recompute keeps the layers' inputs either way.
  const planner::model_desc md = planner::gpt_desc(24, 2048, 16, 50304, 4096);  // d = 128
  const std::size_t s = 4096, b = 2, a = 16 / 2, d = 128, e = 2;
  planner::strategy_desc none{};
  none.tp = 2, none.dp = 4, none.micro = b, none.microbatches = 4;
  const auto without = planner::peak_stage_memory(md, s, none);
  const auto with = planner::peak_stage_memory(md, s, flash(none));
  CHECK(without.layer_bytes - with.layer_bytes == a * s * s * b * e - a * s * b * (4 + d * e));
  CHECK(without.activation_bytes - with.activation_bytes == 24 * without.activation_sets * (without.layer_bytes - with.layer_bytes));
  CHECK(with.model_state_bytes() == without.model_state_bytes());
  // selective: flash keeps its statistics where selective keeps nothing; with flash, selective is flash alone
  planner::strategy_desc sel = none;
  sel.recompute = recompute_kind::selective;
  CHECK(planner::peak_stage_memory(md, s, sel).layer_bytes + a * s * b * (4 + d * e) == with.layer_bytes);
  CHECK(planner::peak_stage_memory(md, s, flash(sel)).total() == with.total());
  planner::strategy_desc full = none;
  full.recompute = recompute_kind::full;
  CHECK(planner::peak_stage_memory(md, s, flash(full)).total() == planner::peak_stage_memory(md, s, full).total());
  // one device alone
  CHECK(planner::single_device_memory(md, s, 1, recompute_kind::none, {}, true).activation_bytes <
        planner::single_device_memory(md, s, 1).activation_bytes);
}

TEST_CASE("memory falls with sharding and recomputation", "[planner][memory]") {
  const planner::model_desc md = planner::gpt_desc(24, 2048, 16, 50304, 2048);
  planner::strategy_desc s{};
  s.dp = 8, s.micro = 4;
  const auto base = planner::peak_stage_memory(md, 2048, s);
  s.zero = 1;
  const auto z1 = planner::peak_stage_memory(md, 2048, s);
  CHECK(z1.optimizer_bytes * 8 >= base.optimizer_bytes);
  CHECK(z1.optimizer_bytes * 7 < base.optimizer_bytes);
  CHECK(z1.param_bytes == base.param_bytes);
  s.recompute = recompute_kind::full;
  const auto full = planner::peak_stage_memory(md, 2048, s);
  CHECK(full.activation_bytes == 24 * 2048 * 4 * 2048 * 2);  // layers · s·b·h·e: the layers' inputs only
  // one device would need 16 bytes per parameter for the model states
  const auto one = planner::single_device_memory(md, 2048, 1);
  CHECK(one.model_state_bytes() == 16 * md.params());
}

TEST_CASE("the search's closed-form activation sets equal the schedule walk", "[planner][memory]") {
  for (schedule_kind k : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::interleaved})
    for (std::size_t p : {1, 2, 3, 4, 8})
      for (std::size_t m : {1, 2, 4, 6, 8, 16, 24})
        for (std::size_t v : {1, 2, 3}) {
          if (k == schedule_kind::one_f_one_b && m < p) continue;
          if (k == schedule_kind::interleaved && (v < 2 || p < 2 || m % p != 0)) continue;
          const planner::activation_sets sets = planner::sets_in_flight(k, p, m, v);
          const std::size_t vv = k == schedule_kind::interleaved ? v : 1;
          CHECK(sets.first == peak_activation_sets(k, p, m, vv, 0));
          CHECK(sets.last == peak_activation_sets(k, p, m, vv, p - 1));
          CHECK(sets.first_input == peak_chunk_sets(k, p, m, vv, 0, 0));
          CHECK(sets.last_output == peak_chunk_sets(k, p, m, vv, p - 1, vv - 1));
        }
}

TEST_CASE("stage_memory_at agrees with the peak stage", "[planner][memory]") {
  const planner::model_desc md = planner::describe<gpt_m>();
  const auto s = make(2, 4, 2, 1, true, K::interleaved, 3, 1, 8, R::none);
  const stage_memory peak = planner::peak_stage_memory(md, 128, s);
  std::size_t most = 0;
  for (std::size_t st = 0; st < 4; ++st) most = std::max(most, planner::stage_memory_at(md, 128, s, {}, st).total());
  CHECK(most == peak.total());
}
