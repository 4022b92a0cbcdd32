// Meshes and strategies as types: what they expose, the defaults, Megatron-LM's rank order,
// and how model_partition deals a model's parameters onto tensor ranks and pipeline stages
// (counted by hand). The rejected combinations are compile-fail tests in tests/fail/.
#include <catch2/catch.hpp>

#include "weft/model/gpt.hpp"
#include "weft/model/llama.hpp"
#include "weft/parallel/partition.hpp"
#include "weft/parallel/strategy.hpp"

#include <cstddef>
#include <set>
#include <tuple>

using namespace weft;

TEST_CASE("a mesh names its axes; one of them may be sized at run time", "[parallel][strategy]") {
  using m = mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 4>>;
  STATIC_REQUIRE(m::rank == 3);
  STATIC_REQUIRE(m::names[1] == "tp");
  STATIC_REQUIRE(m::size_of<"pp"> == 4);
  STATIC_REQUIRE(m::size_of<"dp"> == dynamic);
  STATIC_REQUIRE(m::contains<"tp"> && !m::contains<"xp">);
  STATIC_REQUIRE(m::static_product == 8);
  STATIC_REQUIRE(m::world_size == dynamic);
  STATIC_REQUIRE(m::dynamic_size(32) == 4);
  STATIC_REQUIRE(m::dynamic_size(12) == 0);  // not a multiple of tp * pp
  STATIC_REQUIRE(mesh<axis<"dp", 2>, axis<"tp", 2>>::world_size == 4);
}

namespace {
// example-begin strategy-declaration
// dp ranks x 2-way tensor parallelism (with sequence parallelism) x 2 pipeline stages.
using my_strategy = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>,  // dp: world / (tp * pp)
                             tensor_parallel<"tp", sequence_parallel>,
                             pipeline<"pp", one_f_one_b, microbatches<8>>,
                             data_parallel<"dp", zero<1>>,
                             recompute<selective>>;
static_assert(my_strategy::tp == 2 && my_strategy::pp == 2 && my_strategy::dp == dynamic);
static_assert(my_strategy::dp_size(16) == 4);  // 16 ranks: 4 data-parallel replicas
// example-end strategy-declaration
}  // namespace

TEST_CASE("the DESIGN example strategy exposes its degrees and settings", "[parallel][strategy]") {
  using s = my_strategy;
  STATIC_REQUIRE(s::valid);
  STATIC_REQUIRE(s::tp == 2);
  STATIC_REQUIRE(s::pp == 2);
  STATIC_REQUIRE(s::dp == dynamic);
  STATIC_REQUIRE(s::zero_stage == 1);
  STATIC_REQUIRE(s::bucket_bytes == 25 * 1024 * 1024);
  STATIC_REQUIRE(s::sequence_parallel);
  STATIC_REQUIRE(s::microbatches == 8);
  STATIC_REQUIRE(s::chunks == 1);
  STATIC_REQUIRE(std::is_same_v<s::schedule_type, one_f_one_b>);
  STATIC_REQUIRE(std::is_same_v<s::recompute_type, selective>);
  STATIC_REQUIRE(s::dp_axis == "dp");
  STATIC_REQUIRE(s::tp_axis == "tp");
  STATIC_REQUIRE(s::pp_axis == "pp");
  STATIC_REQUIRE(s::dp_size(8) == 2);
  STATIC_REQUIRE(s::dp_size(6) == 0);
}

TEST_CASE("parts in any order, any subset; defaults when absent", "[parallel][strategy]") {
  // The same strategy with the parts shuffled.
  using a = strategy<mesh<axis<"pp", 4>, axis<"data">>, data_parallel<"data", bucket_bytes<1024>, zero<3>>,
                     pipeline<"pp", microbatches<8>, interleaved<2>>>;
  STATIC_REQUIRE(a::valid && a::pp == 4 && a::tp == 1 && a::zero_stage == 3 && a::bucket_bytes == 1024);
  STATIC_REQUIRE(a::chunks == 2 && a::microbatches == 8 && !a::sequence_parallel);
  STATIC_REQUIRE(std::is_same_v<a::recompute_type, none>);
  // The single-process default: the one axis without a part is data-parallel.
  using d = single_rank_strategy;
  STATIC_REQUIRE(d::valid && d::tp == 1 && d::pp == 1 && d::dp == dynamic && d::zero_stage == 0);
  STATIC_REQUIRE(d::microbatches == 1 && d::chunks == 1 && d::dp_axis == "dp" && d::tp_axis.empty());
  // Only tensor parallelism: no data-parallel axis at all.
  using t = strategy<mesh<axis<"tp", 4>>, tensor_parallel<"tp">>;
  STATIC_REQUIRE(t::valid && t::dp == 1 && t::world_size == 4 && t::dp_axis.empty());
  // A static data-parallel size is allowed.
  using s = strategy<mesh<axis<"dp", 8>, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<2>>>;
  STATIC_REQUIRE(s::dp == 8 && s::world_size == 16 && s::dp_size(16) == 8 && s::dp_size(32) == 0);
  // The pipeline's schedule defaults to 1F1B.
  using p = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", microbatches<2>>>;
  STATIC_REQUIRE(std::is_same_v<p::schedule_type, one_f_one_b>);
}

TEST_CASE("ranks are laid out tensor-parallel index fastest (Megatron-LM)", "[parallel][strategy]") {
  using s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                     pipeline<"pp", gpipe, microbatches<2>>>;
  constexpr std::size_t dp = 3;  // 12 ranks
  // Written out: ranks 0,1 are the tp pair of (pp 0, dp 0); 2,3 of (pp 0, dp 1); 6.. are pp 1.
  CHECK(s::coords(0, dp) == rank_coords{0, 0, 0});
  CHECK(s::coords(1, dp) == rank_coords{0, 0, 1});
  CHECK(s::coords(2, dp) == rank_coords{0, 1, 0});
  CHECK(s::coords(5, dp) == rank_coords{0, 2, 1});
  CHECK(s::coords(6, dp) == rank_coords{1, 0, 0});
  CHECK(s::coords(11, dp) == rank_coords{1, 2, 1});
  std::set<std::tuple<std::size_t, std::size_t, std::size_t>> seen;
  for (std::size_t r = 0; r < 12; ++r) {
    const rank_coords c = s::coords(r, dp);
    CHECK(s::rank_of(c, dp) == r);
    seen.insert({c.pp(), c.dp(), c.tp()});
  }
  CHECK(seen.size() == 12);
}

TEST_CASE("model_partition counts parameters by tensor-parallel role and deals blocks to stages", "[parallel][partition]") {
  // GPT, h = 8, 4 blocks, vocab 64, context 16. A block by hand: layernorms 2 x 16, c_attn
  // 24 x 8 + 24 (column), c_proj 8 x 8 (row) + 8 (replicated), c_fc 32 x 8 + 32 (column),
  // mlp.c_proj 8 x 32 (row) + 8 (replicated).
  using g = gpt<gpt_config<vocab<64>, context<16>, width<8>, heads<2>, depth<4>>>;
  using whole = model_partition<g, 1>;
  STATIC_REQUIRE(whole::has_blocks);
  STATIC_REQUIRE(whole::blocks == 4);
  STATIC_REQUIRE(whole::whole.params.total == g::param_count);
  STATIC_REQUIRE(whole::pre.total == 64 * 8 + 16 * 8);
  STATIC_REQUIRE(whole::post.total == 16);         // ln_f; the head is tied
  STATIC_REQUIRE(whole::tied_table == 64 * 8);     // wte
  STATIC_REQUIRE(!whole::gated_mlp);
  using two = model_partition<g, 2>;
  STATIC_REQUIRE(two::block.replicated == 16 + 8 + 16 + 8);
  STATIC_REQUIRE(two::block.sharded == 192 + 24 + 64 + 256 + 32 + 256);
  STATIC_REQUIRE(two::block.per_rank == 48 + (192 + 24 + 64 + 256 + 32 + 256) / 2);
  STATIC_REQUIRE(two::pre.per_rank == 64 * 8 / 2 + 16 * 8);  // vocabulary shard + replicated positions
  STATIC_REQUIRE(two::even);
  // Stages: 2 blocks each; embeddings first; final norm and the tied table's copy last.
  STATIC_REQUIRE(two::stage_params(0, 2) == 2 * 460 + 256 + 128);
  STATIC_REQUIRE(two::stage_params(1, 2) == 2 * 460 + 16 + 256);
  STATIC_REQUIRE(two::stage_params(0, 1) == 4 * 460 + 256 + 128 + 16);  // one stage: everything, no copy
  STATIC_REQUIRE(two::stage_params_total(1, 2) == 2 * 872 + 16 + 512);

  // LLaMA: untied head (vocab shard on the last stage), SwiGLU, grouped-query attention.
  using l = llama<llama_config<vocab<64>, context<16>, width<8>, heads<2>, kv_heads<1>, depth<2>, ffn<16>>>;
  using lp = model_partition<l, 1>;
  STATIC_REQUIRE(lp::gated_mlp);
  STATIC_REQUIRE(lp::tied_table == 0);
  STATIC_REQUIRE(lp::whole.params.total == l::param_count);
  STATIC_REQUIRE(lp::post.total == 8 + 64 * 8);
  // A vocabulary of 63 does not split 2 ways: the walk notices the uneven cut (plan<> rejects it by
  // name) and counts the larger shard, 32 rows.
  using odd = model_partition<gpt<gpt_config<vocab<63>, context<16>, width<8>, heads<2>, depth<4>>>, 2>;
  STATIC_REQUIRE(!odd::even);
  STATIC_REQUIRE(odd::pre.per_rank == 32 * 8 + 16 * 8);
}
