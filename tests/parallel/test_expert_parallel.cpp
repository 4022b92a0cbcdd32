// expert_parallel<"ep"> as a strategy part: the rank order, the plan of one rank of an expert
// group (its moe_mlp layers as ep_moe_mlp, E/ep experts), and the bytes it sends per step.
#include <catch2/catch.hpp>

#include "weft/model/gpt.hpp"
#include "weft/model/mlp.hpp"
#include "weft/model/moe.hpp"
#include "weft/model/moe_gpt.hpp"
#include "weft/model/moe_llama.hpp"
#include "weft/parallel/plan.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <set>
#include <tuple>
#include <type_traits>

using namespace weft;

namespace {
using u64 = std::uint64_t;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using moe_t = moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>>;
using model_t = moe_gpt<cfg, moe_t>;
using tiny_batch = batch<micro<2>, seq<8>>;
using ep2_dp2 = strategy<mesh<axis<"dp", 2>, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<model_t, tiny_batch, ep2_dp2, precision<double>>;
using whole = plan<model_t, tiny_batch, strategy<mesh<axis<"dp", 2>>>, precision<double>>;
// One moe_mlp's experts: 4 of (gate|up (24, 16) and down (16, 12)).
constexpr std::size_t experts_per_layer = 4 * (24 * 16 + 16 * 12);
}  // namespace

TEST_CASE("expert_parallel: ranks are laid out tp fastest, then ep, then dp, then pp", "[parallel][strategy][ep]") {
  using s = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
  STATIC_REQUIRE(s::valid && s::has_part<"expert_parallel"> && ep_degree<s> == 2 && s::tp == 1 && s::pp == 1);
  STATIC_REQUIRE(s::axis_of<"expert_parallel"> == "ep" && s::dp_axis == "dp" && s::dp == dynamic && s::world_size == dynamic);
  STATIC_REQUIRE(s::dp_size(6) == 3 && s::dp_size(5) == 0);
  constexpr std::size_t dp = 3;
  // rank = dp index · ep + ep index: ranks 0,1 form the expert group of replica 0
  CHECK(s::coords(0, dp) == rank_coords(0, 0, 0).set("expert_parallel", 0));
  CHECK(s::coords(1, dp) == rank_coords(0, 0, 0).set("expert_parallel", 1));
  CHECK(s::coords(2, dp) == rank_coords(0, 1, 0).set("expert_parallel", 0));
  CHECK(s::coords(5, dp) == rank_coords(0, 2, 0).set("expert_parallel", 1));
  std::set<std::tuple<std::size_t, std::size_t>> seen;
  for (std::size_t r = 0; r < 6; ++r) {
    const rank_coords c = s::coords(r, dp);
    CHECK(s::rank_of(c, dp) == r);
    seen.insert({c.dp(), expert_index(c)});
  }
  CHECK(seen.size() == 6);
  // a mesh axis with expert_parallel alone: dp is 1
  using alone = strategy<mesh<axis<"ep", 4>>, expert_parallel<"ep">>;
  STATIC_REQUIRE(alone::valid && alone::dp == 1 && alone::world_size == 4 && alone::dp_size(4) == 1);
  // without expert_parallel, the ep coordinate is 0 and the tp/dp/pp order is the old one
  using tpdp = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
  STATIC_REQUIRE(ep_degree<tpdp> == 1 && tpdp::coords(3, 2) == rank_coords{0, 1, 1});
}

TEST_CASE("expert_parallel: the plan holds E/ep experts per moe_mlp on each rank", "[parallel][plan][ep]") {
  STATIC_REQUIRE(P::ep == 2 && P::strategy_fits);
  STATIC_REQUIRE(std::is_same_v<P::rank_model, moe_gpt<cfg, ep_moe_mlp<moe_t, 2>>>);
  STATIC_REQUIRE(std::is_same_v<whole::rank_model, model_t>);
  STATIC_REQUIRE(P::global_param_count == whole::param_count);
  STATIC_REQUIRE(P::param_count == whole::param_count - cfg::depth * experts_per_layer / 2);
  // the arena the expert-parallel step trains is this rank's
  STATIC_REQUIRE(P::bytes_per_rank < whole::bytes_per_rank);
  // memory_model counts the rank's parameters; FLOPs per token stay the whole model's
  STATIC_REQUIRE(P::memory::stage(0).params == P::param_count);
  STATIC_REQUIRE(P::memory_per_rank < whole::memory_per_rank);
  STATIC_REQUIRE(P::flops_per_token == whole::flops_per_token);
  // parameter names are the single process's, with the rank's expert shapes
  bool found = false;
  for (const param_info& p : P::parameters())
    if (p.name == "h.0.mlp.experts.down_proj") {
      found = true;
      CHECK(p.shape == std::vector<std::size_t>{2, 16, 12});
    }
  CHECK(found);
  // moe_llama maps the same way
  using lcfg = llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>>;
  using L = plan<moe_llama<lcfg, moe_t>, tiny_batch, ep2_dp2, precision<double>>;
  STATIC_REQUIRE(std::is_same_v<L::rank_model, moe_llama<lcfg, ep_moe_mlp<moe_t, 2>>>);
}

TEST_CASE("expert_parallel: a composition of moe_mlp layers is mapped layer by layer", "[parallel][ep]") {
  using m = moe_mlp<8, 4, 1, 8>;
  using comp = sequential<named<"a", m>, repeat<2, residual<m>>>;
  STATIC_REQUIRE(ep_facts<comp, 2>::moe_layers == 3);
  STATIC_REQUIRE(ep_facts<comp, 2>::routed_elements == 3 * 8);
  STATIC_REQUIRE(ep_facts<comp, 2>::experts_divisible && !ep_facts<comp, 3>::experts_divisible);
  STATIC_REQUIRE(std::is_same_v<ep_model_t<comp, 2>,
                                sequential<named<"a", ep_moe_mlp<m, 2>>, repeat<2, residual<ep_moe_mlp<m, 2>>>>>);
  STATIC_REQUIRE(std::is_same_v<ep_model_t<comp, 1>, comp>);
  STATIC_REQUIRE(ep_facts<gpt<cfg>, 2>::moe_layers == 0);
}

TEST_CASE("expert_parallel: all-to-all bytes, and gradients summed over their own groups", "[parallel][comm][ep]") {
  using V = P::volume;
  // by hand: b·s = 16 tokens, each sends top 2 rows of width 16 per layer, 2 layers: 64 elements
  // of 8 bytes; half stay on the rank. Four all-to-alls per micro-batch (dispatch, combine, and
  // their gradients).
  constexpr u64 dispatch = 16 * 64 * 8 / 2;
  STATIC_REQUIRE(V::ep_dispatch_bytes == dispatch);
  const step_volume v = V::stage(0);
  CHECK(v.ep_bytes == 4 * dispatch);
  CHECK(v.tp_bytes == 0);
  CHECK(v.pp_bytes == 0);
  // experts over their 2 dp replicas, the rest over all 4 ranks
  constexpr u64 rank_experts = cfg::depth * experts_per_layer / 2;
  STATIC_REQUIRE(V::ep_expert_params == rank_experts);
  CHECK(v.dp_bytes == ring_all_reduce_bytes(rank_experts, 2, 8) + ring_all_reduce_bytes(P::param_count - rank_experts, 4, 8));
  // full recompute repeats the forward's two
  using F = plan<model_t, tiny_batch,
                 strategy<mesh<axis<"dp", 2>, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">, recompute<full>>,
                 precision<double>>;
  CHECK(F::volume::stage(0).ep_bytes == 6 * dispatch);
  // without expert parallelism: nothing on the axis
  CHECK(whole::volume::stage(0).ep_bytes == 0);
}

TEST_CASE("expert_parallel: composes with ZeRO, pipelines and tensor parallelism, the mixture of experts replicated over tp",
          "[parallel][tp][ep]") {
  // every ZeRO stage and tensor parallelism (with or without sequence parallelism) beside ep
  using z3 = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp", zero<3>>>;
  STATIC_REQUIRE(z3::valid && z3::zero_stage == 3 && ep_degree<z3> == 2);
  using ept = strategy<mesh<axis<"dp">, axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp">,
                       data_parallel<"dp", zero<1>>>;
  STATIC_REQUIRE(ept::valid && ept::tp == 2 && ep_degree<ept> == 2 && ept::dp_size(8) == 2 && ept::dp_size(6) == 0);
  // and pipelines: rank = ((pp index · dp + dp index) · ep + ep index) · tp + tp index
  using epp = strategy<mesh<axis<"ep", 2>, axis<"pp", 2>>, expert_parallel<"ep">, pipeline<"pp", microbatches<2>>>;
  STATIC_REQUIRE(epp::valid && epp::world_size == 4 && epp::coords(3, 1) == rank_coords(1, 0, 0).set("expert_parallel", 1));
  CHECK(ept::coords(1, 2) == rank_coords(0, 0, 1).set("expert_parallel", 0));
  CHECK(ept::coords(2, 2) == rank_coords(0, 0, 0).set("expert_parallel", 1));
  CHECK(ept::coords(7, 2) == rank_coords(0, 1, 1).set("expert_parallel", 1));
  // tp_shard keeps a mixture of experts whole, its parameters listed as replicated
  STATIC_REQUIRE(std::is_same_v<tp_shard_t<moe_t, 2, false>, detail::tp_replicated_layer<moe_t>>);
  STATIC_REQUIRE(std::is_same_v<tp_shard_t<ep_moe_mlp<moe_t, 2>, 2, true>, detail::sp_replicated_layer<ep_moe_mlp<moe_t, 2>, 2>>);
  // under SP it keeps the gathered input (batch, seq, width) besides the layer's own activations
  using spl = detail::sp_replicated_layer<moe_t, 2>;
  STATIC_REQUIRE(spl::kept_count<2, 4> == 2 * 8 * 16 + moe_t::kept_count<2, 8>);
  // one rank of ep x tp: the ep map first (E/ep experts), then the tp map (attention halved,
  // the mixture of experts whole)
  using PT = plan<model_t, tiny_batch, ept, precision<double>>;
  STATIC_REQUIRE(std::is_same_v<PT::rank_model, moe_gpt<cfg, ep_moe_mlp<moe_t, 2>>>);
  using TPP = tensor_parallel_plan<PT>;
  std::map<std::string, param_info> rank;
  for (const param_info& p : PT::parameters()) rank[p.name] = p;
  std::size_t moe_params = 0, checked = 0;
  for (const param_info& p : TPP::parameters()) {
    const param_info& w = rank.at(p.name);
    if (p.name.find(".mlp.") != std::string::npos) {
      CHECK(p.tp_role == role::replicated);  // the shared expert's column/row linears too
      CHECK(p.size == w.size);
      moe_params += p.size;
    } else if (p.name == "h.0.attn.c_attn.weight") {
      CHECK(p.size * 2 == w.size);
      ++checked;
    }
  }
  CHECK(checked == 1);
  CHECK(moe_params == cfg::depth * ep_moe_mlp<moe_t, 2>::param_count);
  // the memory model prices it (the MoE counted whole on every tp rank)
  STATIC_REQUIRE(PT::strategy_fits && PT::memory_per_rank > 0);
}

TEST_CASE("expert_parallel: an expert's parameter is one whose shape leads with an \"expert\" axis, not a name",
          "[parallel][ep]") {
  // every parameter of the model: the experts' tensors are dealt out, the router and the shared
  // expert (whose names also sit under the MoE) are not
  std::size_t experts = 0, others_under_moe = 0;
  for (const auto& p : P::parameters()) {
    const bool under_moe = p.name.find(".mlp.") != std::string::npos;
    if (is_expert_parameter(p)) {
      ++experts;
      CHECK(p.name.find(".experts.") != std::string::npos);
      CHECK(p.axes.front() == "expert");
      CHECK(p.shape.front() == 2);  // E/ep = 4/2 experts on this rank
    } else if (under_moe) {
      ++others_under_moe;
    }
  }
  CHECK(experts == cfg::depth * 2);           // gate_up and down per layer
  CHECK(others_under_moe >= cfg::depth * 2);  // the router and the shared expert's tensors
  // a user's parameter called "experts…" without an expert axis is not an expert's
  param_info named_like_one;
  named_like_one.name = "h.0.mlp.experts.scale";
  named_like_one.axes = {"out"};
  CHECK_FALSE(is_expert_parameter(named_like_one));
  named_like_one.axes = {"expert", "out"};
  CHECK(is_expert_parameter(named_like_one));
}
