// Mixtures of experts in the planner and the memory model: the search tries expert parallelism
// (ep dividing the experts) for models with moe_mlp layers and only for them; the activation
// count of a moe_mlp is what the layer keeps (moe_mlp / ep_moe_mlp kept_count: routed rows,
// router probs and gates, receive buffers under ep), and the values path equals plan<>'s.
#include <weft/model/gpt.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/model/moe_llama.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/planner/auto_strategy.hpp>
#include <weft/planner/memory_cost.hpp>
#include <weft/planner/search.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <type_traits>

using namespace weft;

namespace {
// ---- small models: the arena tests (float: the int32 routing fills whole element slots) ----
using tiny_gpt_cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using tiny_gpt = moe_gpt<tiny_gpt_cfg, moe_mlp<16, 4, 2, 12>>;
using tiny_llama_cfg = llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>>;
using tiny_llama = moe_llama<tiny_llama_cfg, moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>>>;
using tiny_batch = batch<micro<2>, seq<8>>;
constexpr std::size_t tiny_tokens = 2 * 8;

template <class Model, class Strategy>
using tiny_plan = plan<Model, tiny_batch, Strategy, precision<float>>;
template <class R>
using dp2 = strategy<mesh<axis<"dp", 2>>, data_parallel<"dp">, recompute<R>>;
template <class R>
using ep2 = strategy<mesh<axis<"dp", 1>, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">, recompute<R>>;

// ---- a model whose experts outweigh the rest: 32 SwiGLU experts of ffn 1024 in each of 2 blocks ----
using big_moe = moe_llama<llama_config<vocab<1024>, context<256>, width<256>, heads<4>, kv_heads<2>, depth<2>>,
                          moe_mlp<256, 32, 2, 1024, swiglu_experts>>;
// 8 GPUs of 180 MB: with all experts on a rank (even split over 2 stages) nothing fits.
struct tight_node {
  static constexpr planner::cluster value = [] {
    planner::cluster c = planner::presets::h100_sxm(1);
    c.memory_bytes = 180e6;
    return c;
  }();
};
struct no_ep {
  static constexpr planner::search_options value = [] {
    planner::search_options o{};
    o.fixed_ep = 1;
    return o;
  }();
};
}  // namespace

// ---- descriptions ----

TEST_CASE("moe_gpt_desc and moe_llama_desc state describe<>'s counts", "[planner][model_desc][moe]") {
  constexpr planner::model_desc g = planner::describe<tiny_gpt>();
  constexpr planner::model_desc gv = planner::moe_gpt_desc(2, 16, 4, 32, 8, 4, 2, 12);
  STATIC_REQUIRE(g.pre.total() == gv.pre.total());
  STATIC_REQUIRE(g.block.replicated == gv.block.replicated);
  STATIC_REQUIRE(g.block.sharded == gv.block.sharded);
  STATIC_REQUIRE(g.post.total() == gv.post.total());
  STATIC_REQUIRE(g.params() == tiny_gpt::param_count);
  STATIC_REQUIRE(gv.params() == tiny_gpt::param_count);
  STATIC_REQUIRE(g.experts == 4 && g.top_k == 2 && g.expert_in == 12 && gv.expert_in == 12);
  STATIC_REQUIRE(g.moe_layers == gv.moe_layers && g.expert_params == gv.expert_params && g.routed_width == gv.routed_width);

  constexpr planner::model_desc l = planner::describe<big_moe>();
  constexpr planner::model_desc lv = planner::moe_llama_desc(2, 256, 4, 2, 1024, 256, 32, 2, 1024);
  STATIC_REQUIRE(l.params() == big_moe::param_count);
  STATIC_REQUIRE(lv.params() == big_moe::param_count);
  STATIC_REQUIRE(l.block.replicated == lv.block.replicated && l.block.sharded == lv.block.sharded);
  STATIC_REQUIRE(l.experts == 32 && lv.expert_in == 2 * 1024 && l.expert_in == lv.expert_in);
  STATIC_REQUIRE(l.expert_params == lv.expert_params);
  // the experts of a stage: E/ep of each of its moe layers
  STATIC_REQUIRE(lv.stage_expert_params(2, 4) == lv.expert_params / 2 / 4);
  STATIC_REQUIRE(lv.stage_params(0, 2, 1, 4) == lv.stage_params(0, 2, 1) - (lv.expert_params / 2 - lv.expert_params / 2 / 4));
  // a shared expert's kept elements per token are carried
  STATIC_REQUIRE(planner::describe<tiny_llama>().shared_kept == swiglu_mlp<16, 8>::kept_count<1, 1>);
}

// ---- the search ----

TEST_CASE("the search gives expert parallelism to a MoE model whose experts do not fit without it", "[planner][search][moe]") {
  const planner::model_desc md = planner::moe_llama_desc(2, 256, 4, 2, 1024, 256, 32, 2, 1024);
  const planner::batch_desc b{32, 256};
  const planner::cluster c = tight_node::value;
  planner::search_options only1{};
  only1.fixed_ep = 1;
  const auto without = planner::search<8>(md, b, c, only1);
  CHECK_FALSE(without.found());  // tp does not cut experts, pp = 2 halves them, ZeRO keeps a whole working copy
  CHECK(without.leanest_bytes > without.memory_limit);
  const auto with = planner::search<8>(md, b, c);
  REQUIRE(with.found());
  CHECK(with.best().strategy.ep > 1);
  CHECK(with.layouts > without.layouts);
  for (std::size_t i = 0; i < with.count; ++i) {
    const planner::strategy_desc& s = with.ranked[i].strategy;
    CHECK(s.gpus() == c.gpus());
    CHECK(md.experts % s.ep == 0);
    CHECK(s.dp * s.ep * s.micro * s.microbatches == b.sequences);  // every expert rank brings its tokens
    CHECK((s.ep == 1 || s.pp == 1));                                // strategy<> has no ep with pipeline yet
    CHECK_FALSE(s.sequence_parallel);                              // nor sequence parallelism for moe_mlp
    CHECK(with.ranked[i].cost.memory.total() <= with.memory_limit);
  }
  // ep pinned or bounded
  planner::search_options cap{};
  cap.max_ep = 2;
  const auto capped = planner::search<8>(md, b, c, cap);
  for (std::size_t i = 0; i < capped.count; ++i) CHECK(capped.ranked[i].strategy.ep <= 2);
}

TEST_CASE("ep only divides the experts, never exceeds them, and a dense model keeps ep = 1", "[planner][search][moe]") {
  // 6 experts on 12 GPUs: ep 1, 2, 3, 6 divide both; 4 and 12 would not divide the experts
  planner::model_desc md = planner::moe_gpt_desc(2, 64, 4, 256, 64, 6, 2, 128);
  planner::cluster c = planner::presets::h100_sxm(1);
  c.gpus_per_node = 12;
  planner::search_options all{};
  all.allow_expert_pipeline = true;  // price every ep, pipelines included
  const auto r = planner::search<64>(md, {48, 64}, c, all);
  REQUIRE(r.count == 64);
  bool seen[13] = {};
  for (std::size_t i = 0; i < r.count; ++i) {
    const std::size_t ep = r.ranked[i].strategy.ep;
    CHECK(ep <= md.experts);
    CHECK(md.experts % ep == 0);
    seen[ep] = true;
  }
  CHECK_FALSE(seen[4]);
  CHECK_FALSE(seen[12]);
  CHECK(planner::ep_allowed(md, 3, all));
  CHECK_FALSE(planner::ep_allowed(md, 4, all));
  CHECK_FALSE(planner::ep_allowed(md, 12, all));
  CHECK_FALSE(planner::ep_allowed(md, 2, 2, planner::search_options{}));  // with a pipeline: off by default

  // dense: the same space and ranking as with ep pinned to 1
  const planner::model_desc dense = planner::gpt_desc(24, 2048, 16, 50304, 2048);
  planner::search_options one{};
  one.fixed_ep = 1;
  const auto a = planner::search<8>(dense, {256, 2048}, planner::presets::a100_80gb(2));
  const auto b = planner::search<8>(dense, {256, 2048}, planner::presets::a100_80gb(2), one);
  CHECK(a.layouts == b.layouts);
  CHECK(a.evaluated == b.evaluated);
  REQUIRE(a.count == b.count);
  for (std::size_t i = 0; i < a.count; ++i) {
    CHECK(a.ranked[i].strategy == b.ranked[i].strategy);
    CHECK(a.ranked[i].strategy.ep == 1);
    CHECK(a.ranked[i].cost.step_seconds == b.ranked[i].cost.step_seconds);
  }
  CHECK_FALSE(planner::ep_allowed(dense, 2, planner::search_options{}));
}

// The snippet of docs/planner.md.
// example-begin auto-strategy-moe
// A mixture of experts whose experts do not fit a rank whole: the search splits them (ep > 1).
using moe_pick = auto_strategy<big_moe, global_batch<32, 256>, tight_node>;
using moe_plan = moe_pick::plan_type;  // strategy<mesh<dp, tp, ep>, ..., expert_parallel<"ep">, ...>
static_assert(moe_pick::chosen.ep > 1 && moe_plan::ep == moe_pick::chosen.ep);
static_assert(moe_plan::memory_per_rank == moe_pick::best.cost.memory.total());
// example-end auto-strategy-moe

TEST_CASE("auto_strategy's expert-parallel choice compiles as a plan with the searched memory", "[planner][auto_strategy][moe]") {
  STATIC_REQUIRE(moe_pick::found);
  STATIC_REQUIRE(moe_plan::strategy_fits);
  STATIC_REQUIRE(moe_plan::strategy_type::has_part<"expert_parallel">);
  STATIC_REQUIRE(ep_degree<moe_plan::strategy_type> * moe_plan::strategy_type::dp * moe_plan::strategy_type::tp *
                     moe_plan::strategy_type::pp ==
                 8);
  STATIC_REQUIRE(big_moe::moe_type::experts % moe_plan::ep == 0);
  STATIC_REQUIRE(std::is_same_v<moe_plan::rank_model, ep_model_t<big_moe, moe_plan::ep>>);
  STATIC_REQUIRE(moe_plan::memory_per_rank <= tight_node::value.memory_bytes * tight_node::value.usable_memory_fraction);
  STATIC_REQUIRE(moe_plan::memory::stage(0).params == moe_plan::param_count);
  // without ep the same search finds nothing: the compile-time search agrees with the runtime one
  constexpr auto without = planner::search<1>(moe_pick::model, moe_pick::global, tight_node::value, no_ep::value);
  STATIC_REQUIRE(!without.found());
}

// ---- values path = plan<>'s memory for MoE models ----

namespace {
template <class M, planner::strategy_desc S>
void check_values(const planner::precision_desc& p) {
  using plan_t = plan<M, batch<micro<S.micro>, seq<8>>, planner::strategy_type_of<S>, precision<float>>;
  STATIC_REQUIRE(plan_t::strategy_fits);
  const stage_memory m = planner::peak_stage_memory(planner::describe<M>(), 8, S, p);
  CHECK(m.total() == plan_t::memory_per_rank);
  CHECK(m.layer_bytes == plan_t::memory::layer_bytes);
}
constexpr planner::strategy_desc make(std::size_t tp, std::size_t pp, std::size_t dp, std::size_t ep, std::size_t zero,
                                      std::size_t b, std::size_t m, recompute_kind rc) {
  planner::strategy_desc s{};
  s.tp = tp, s.pp = pp, s.dp = dp, s.ep = ep, s.zero = zero, s.micro = b, s.microbatches = m, s.recompute = rc;
  return s;
}
}  // namespace

TEST_CASE("MoE memory from values is the plan's memory_per_rank, with and without ep", "[planner][memory][moe]") {
  constexpr planner::precision_desc f32 = planner::full_f32();
  using R = recompute_kind;
  check_values<tiny_gpt, make(1, 1, 2, 1, 0, 2, 1, R::none)>(f32);
  check_values<tiny_gpt, make(1, 1, 1, 2, 0, 2, 1, R::none)>(f32);
  check_values<tiny_gpt, make(1, 1, 2, 2, 1, 2, 2, R::selective)>(f32);
  check_values<tiny_gpt, make(1, 1, 2, 2, 3, 1, 2, R::full)>(f32);
  check_values<tiny_gpt, make(2, 1, 1, 2, 0, 2, 1, R::none)>(f32);     // the experts replicated over tp
  check_values<tiny_gpt, make(1, 2, 2, 1, 0, 1, 4, R::none)>(f32);     // a pipeline of MoE blocks, no ep
  check_values<tiny_llama, make(1, 1, 1, 2, 0, 2, 1, R::none)>(f32);
  check_values<tiny_llama, make(1, 1, 2, 4, 2, 1, 1, R::full)>(f32);
  check_values<tiny_llama, make(2, 1, 2, 2, 1, 2, 1, R::selective)>(f32);
}

// ---- the analytic activations of a moe_mlp are the arena's ----

namespace {
template <class P>
constexpr std::size_t moe_arena_bytes() {
  using moe = typename P::rank_model::moe_type;  // moe_mlp, or ep_moe_mlp under expert parallelism
  return moe::template kept_count<tiny_batch::sequences, tiny_batch::length> * sizeof(float);
}
// The layer's count without its MLP: attention, norms and projection inputs only.
template <class P>
constexpr std::size_t attention_part() {
  layer_activation_dims d = P::memory::dims;
  d.experts = 0, d.ffn = 0;
  return layer_activation_bytes(d, P::tp, false, P::strategy_type::recompute_policy);
}

template <class M>
void check_moe_activations() {
  using p1 = tiny_plan<M, dp2<none>>;
  using p2 = tiny_plan<M, ep2<none>>;
  using s1 = tiny_plan<M, dp2<selective>>;
  using s2 = tiny_plan<M, ep2<selective>>;
  using f1 = tiny_plan<M, dp2<full>>;
  using f2 = tiny_plan<M, ep2<full>>;
  STATIC_REQUIRE(p2::ep == 2 && p1::ep == 1);
  // the count of the layer, term by term, is its kept_count (moe_mlp; ep_moe_mlp's receive buffers)
  STATIC_REQUIRE(moe_kept_bytes(p1::memory::dims, tiny_tokens) == moe_arena_bytes<p1>());
  STATIC_REQUIRE(moe_kept_bytes(p2::memory::dims, tiny_tokens) == moe_arena_bytes<p2>());
  STATIC_REQUIRE(moe_arena_bytes<p2>() > moe_arena_bytes<p1>());  // 2·N·k rows a rank may receive
  STATIC_REQUIRE(p1::memory::layer_bytes == attention_part<p1>() + moe_arena_bytes<p1>());
  STATIC_REQUIRE(p2::memory::layer_bytes == attention_part<p2>() + moe_arena_bytes<p2>());
  // The arena itself: plans that differ only in ep differ by the moe_mlp's kept buffers of every
  // block, and the memory model by as much (no recompute, and selective, which keeps them).
  constexpr std::size_t depth = M::depth;
  STATIC_REQUIRE((p2::kept_count - p1::kept_count) * sizeof(float) ==
                 depth * (p2::memory::layer_bytes - p1::memory::layer_bytes));
  STATIC_REQUIRE((s2::kept_count - s1::kept_count) * sizeof(float) ==
                 depth * (s2::memory::layer_bytes - s1::memory::layer_bytes));
  STATIC_REQUIRE(s1::memory::layer_bytes - attention_part<s1>() == moe_arena_bytes<p1>());
  // Full recompute: the layers keep their inputs only, and the one block the arena re-runs holds
  // the moe_mlp's buffers once per stage.
  STATIC_REQUIRE(f1::memory::layer_bytes == f2::memory::layer_bytes);
  STATIC_REQUIRE((f2::kept_count - f1::kept_count) * sizeof(float) ==
                 f2::memory::stages[0].activation_bytes - f1::memory::stages[0].activation_bytes);
  STATIC_REQUIRE(f1::memory::stages[0].activation_bytes ==
                 depth * f1::memory::layer_bytes + moe_arena_bytes<p1>());
}
}  // namespace

TEST_CASE("memory_model counts a moe_mlp's kept buffers as the arena does", "[parallel][memory][moe]") {
  check_moe_activations<tiny_gpt>();
  check_moe_activations<tiny_llama>();
}

TEST_CASE("a dense model's activations are unchanged by the MoE terms", "[parallel][memory][moe]") {
  using g = gpt<tiny_gpt_cfg>;
  using P = tiny_plan<g, dp2<none>>;
  STATIC_REQUIRE(P::memory::moe.layers == 0);
  STATIC_REQUIRE(P::memory::dims.experts == 0);
  // Korthikanti's count, weft's terms: 4h·e whole, Q K V + projection input + 2·ffn split, s² scores
  constexpr std::size_t s = 8, b = 2, h = 16, a = 4, e = 4;
  STATIC_REQUIRE(P::memory::layer_bytes == s * b * 4 * h * e + s * b * e * (h + 2 * h + h + 2 * 4 * h) + a * s * s * b * e);
  STATIC_REQUIRE(recompute_buffer_bytes(P::memory::dims, recompute_kind::full) == 0);
}

// ---- the step of a MoE model ----

TEST_CASE("a MoE step counts the experts a token uses and sums dense gradients over the expert group", "[planner][step][moe]") {
  // model FLOPs: the k experts a token uses (the plan's count, 6 per parameter, has all E)
  constexpr planner::model_desc g = planner::describe<tiny_gpt>();
  using P = plan<tiny_gpt, batch<micro<1>, seq<8>>>;
  // (moe_mlp<16, 4, 2, 12>: an expert is up (12, 16) and down (16, 12); 2 of 4 unused, 2 blocks)
  constexpr double unused = 2.0 * 2 * (12 * 16 + 16 * 12);
  CHECK(g.flops_per_token(8) == Approx(static_cast<double>(P::flops_per_token) - 6.0 * unused));
  CHECK(g.depth * g.block_inactive_params() == unused);
  CHECK(planner::gpt_desc(2, 16, 4, 32, 8).block_inactive_params() == 0);

  const planner::model_desc md = planner::moe_llama_desc(32, 4096, 32, 8, 32000, 4096, 8, 2, 14336);
  const planner::cluster c = planner::presets::h100_sxm(1);
  planner::strategy_desc s{};
  s.ep = 8, s.dp = 1, s.micro = 1, s.microbatches = 4, s.recompute = recompute_kind::full;
  const planner::step_cost st = planner::estimate_step(md, 4096, s, c);
  // dp = 1: the only gradient traffic is the dense gradients' all-reduce over the 8 expert ranks,
  // once per micro-batch, hidden behind the backwards as far as they reach
  const double dense = static_cast<double>(md.stage_params(0, 1, 1, 8) - md.stage_expert_params(1, 8)) * 2;
  const double ar = 4 * planner::all_reduce_seconds(dense, 8, planner::axis_link(c, 8, 1));
  CHECK(ar > 0);
  CHECK(st.seconds(planner::cost_part::data_parallel) + st.dp_hidden_seconds == Approx(ar));
  // the experts' compute: k routed rows a token through (expert_in, h) and (h, ffn), not the dense MLP
  planner::model_desc as_dense = md;
  as_dense.experts = 0;  // the same counts priced as one dense MLP of width ffn
  const planner::step_cost dense_step = planner::estimate_step(as_dense, 4096, s, c);
  CHECK(st.seconds(planner::cost_part::compute) > dense_step.seconds(planner::cost_part::compute));
  // a stage routes through its own layers: all-to-alls of a 2-stage pipeline are half per stage
  planner::strategy_desc s2 = s;
  s2.pp = 2, s2.ep = 4, s2.microbatches = 4;
  planner::strategy_desc s1 = s2;
  s1.pp = 1, s1.dp = 2;
  CHECK(planner::estimate_step(md, 4096, s2, c).seconds(planner::cost_part::expert_parallel) ==
        Approx(planner::estimate_step(md, 4096, s1, c).seconds(planner::cost_part::expert_parallel) / 2).epsilon(0.05));
}
