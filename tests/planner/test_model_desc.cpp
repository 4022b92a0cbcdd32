// The value description of a model agrees with the type walk (model_partition) and the plan.
#include <weft/model/gpt.hpp>
#include <weft/model/llama.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/planner/model_desc.hpp>

#include <catch2/catch.hpp>

using namespace weft;

namespace {
using gpt_m = gpt<gpt_config<vocab<512>, context<128>, width<96>, heads<6>, depth<8>>>;
using llama_m = llama<llama_config<vocab<640>, context<64>, width<128>, heads<8>, kv_heads<2>, depth<6>, ffn<320>>>;

template <class M, std::size_t Tp>
void check_stages(const planner::model_desc& d) {
  using part = model_partition<M, Tp>;
  for (std::size_t pp : {std::size_t{1}, std::size_t{2}, std::size_t{M::depth}})
    for (std::size_t s = 0; s < pp; ++s) CHECK(d.stage_params(s, pp, Tp) == part::stage_params(s, pp));
}
}  // namespace

TEST_CASE("gpt_desc counts what model_partition walks", "[planner][model_desc]") {
  constexpr planner::model_desc walked = planner::describe<gpt_m>();
  constexpr planner::model_desc stated = planner::gpt_desc(8, 96, 6, 512, 128);
  STATIC_REQUIRE(walked.params() == gpt_m::param_count);
  CHECK(stated.params() == walked.params());
  CHECK(stated.pre.replicated == walked.pre.replicated);
  CHECK(stated.block.replicated == walked.block.replicated);
  CHECK(stated.block.sharded == walked.block.sharded);
  CHECK(stated.post.total() == walked.post.total());
  CHECK(stated.tied_table == walked.tied_table);
  CHECK(stated.lookup_params == walked.lookup_params);
  check_stages<gpt_m, 1>(stated);
  check_stages<gpt_m, 2>(stated);
  CHECK(stated.flops_per_token(128) == Approx(static_cast<double>(plan<gpt_m, batch<micro<1>, seq<128>>>::flops_per_token)));
}

TEST_CASE("llama_desc counts what model_partition walks", "[planner][model_desc]") {
  constexpr planner::model_desc walked = planner::describe<llama_m>();
  constexpr planner::model_desc stated = planner::llama_desc(6, 128, 8, 2, 640, 64, 320);
  STATIC_REQUIRE(walked.gated);
  CHECK(stated.params() == llama_m::param_count);
  CHECK(stated.block.replicated == walked.block.replicated);
  CHECK(stated.block.sharded == walked.block.sharded);
  CHECK(stated.post.sharded == walked.post.sharded);
  check_stages<llama_m, 1>(stated);
  check_stages<llama_m, 2>(stated);
  CHECK(stated.flops_per_token(64) == Approx(static_cast<double>(plan<llama_m, batch<micro<1>, seq<64>>>::flops_per_token)));
}

TEST_CASE("llama_desc with a tied head counts what model_partition walks", "[planner][model_desc]") {
  using tied_m =
      llama<llama_config<vocab<640>, context<64>, width<128>, heads<8>, kv_heads<2>, depth<6>, ffn<320>, tie_word_embeddings<>>>;
  STATIC_REQUIRE(tied_m::param_count == llama_m::param_count - 640 * 128);  // no head.weight
  STATIC_REQUIRE(tied_m::lookup_param_count == 0);  // the table is multiplied by the head
  constexpr planner::model_desc walked = planner::describe<tied_m>();
  constexpr planner::model_desc stated = planner::llama_desc(6, 128, 8, 2, 640, 64, 320, /*tied=*/true);
  CHECK(stated.params() == tied_m::param_count);
  CHECK(stated.post.total() == walked.post.total());
  CHECK(stated.tied_table == walked.tied_table);
  CHECK(stated.tied_table == 640 * 128);
  CHECK(stated.lookup_params == walked.lookup_params);
  check_stages<tied_m, 1>(stated);
  check_stages<tied_m, 2>(stated);
  CHECK(stated.flops_per_token(64) == Approx(static_cast<double>(plan<tied_m, batch<micro<1>, seq<64>>>::flops_per_token)));
  // the head's product is counted once, as untied: the same FLOPs per token
  CHECK(stated.flops_per_token(64) == Approx(planner::llama_desc(6, 128, 8, 2, 640, 64, 320).flops_per_token(64)));
}

TEST_CASE("describe<> carries the head size and the sliding window into the FLOP count", "[planner][model_desc]") {
  using windowed = llama<llama_config<vocab<64>, context<32>, width<16>, heads<4>, kv_heads<2>, head_dim<6>, depth<2>,
                                      sliding_window<8>, tie_word_embeddings<>>>;
  constexpr planner::model_desc d = planner::describe<windowed>();
  STATIC_REQUIRE(d.head_dim == 6 && d.window == 8 && d.attention_width() == 24);
  CHECK(d.flops_per_token(32) == Approx(static_cast<double>(plan<windowed, batch<micro<1>, seq<32>>>::flops_per_token)));
  CHECK(d.flops_per_token(4) == Approx(static_cast<double>(plan<windowed, batch<micro<1>, seq<4>>>::flops_per_token)));
  CHECK(d.flops_per_token(32) == Approx(6.0 * windowed::param_count + 12.0 * 2 * 24 * 8));
}
