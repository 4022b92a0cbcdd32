// Bytes sent per mesh axis and FLOPs per step, against numbers derived by hand for small
// GPTs (vocab 64, context 16, width 8, 2 heads, 4 blocks; micro-batches of 2 x 16 tokens).
#include <catch2/catch.hpp>

#include "weft/core/dtype.hpp"
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"

#include <cstdint>

using namespace weft;

namespace {

using u64 = std::uint64_t;
using tiny = gpt<gpt_config<vocab<64>, context<16>, width<8>, heads<2>, depth<4>>>;
using tiny_batch = batch<micro<2>, seq<16>>;

// By hand, h = 8: a block has 12h² + 13h = 872 parameters; with tp = 2 a rank holds its 6h = 48
// replicated ones (two layernorms, two row-parallel biases) and half of the other 824: 460.
// Stage 0 of 2: 2 blocks, half the token table (256) and the positions (128): 1304.
// Stage 1 of 2: 2 blocks, the final layernorm (16), half the tied table's copy (256): 1192.
constexpr u64 stage0_params = 2 * 460 + 256 + 128, stage1_params = 2 * 460 + 16 + 256;
// One (s, b, h) activation: 16 * 2 * 8 = 256 elements.
constexpr u64 act = 256;

}  // namespace

TEST_CASE("ring collectives send (n - 1)/n of the buffer per phase", "[parallel][comm]") {
  CHECK(ring_all_reduce_bytes(1000, 4, 4) == 2 * 3 * 250 * 4);
  CHECK(ring_reduce_scatter_bytes(1000, 4, 2) == 3 * 250 * 2);
  CHECK(ring_all_gather_bytes(1001, 4, 2) == 3 * 251 * 2);  // padded to 4 chunks of 251
  CHECK(ring_all_reduce_bytes(1000, 1, 4) == 0);
}

TEST_CASE("dp x tp x pp: every axis of a 4 x 2 x 2 mesh", "[parallel][comm]") {
  using P = plan<tiny, tiny_batch,
                 strategy<mesh<axis<"dp", 4>, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                          pipeline<"pp", one_f_one_b, microbatches<4>>, data_parallel<"dp">>>;
  STATIC_REQUIRE(P::memory::stages[0].params == stage0_params);
  STATIC_REQUIRE(P::memory::stages[1].params == stage1_params);
  constexpr step_volume s0 = P::volume::stages[0], s1 = P::volume::stages[1];
  // dp: one all-reduce of the f32 gradients over 4 ranks: 2 * 3 * (params / 4) * 4 bytes.
  CHECK(s0.dp_bytes == 2 * 3 * (stage0_params / 4) * 4);
  CHECK(s1.dp_bytes == 2 * 3 * (stage1_params / 4) * 4);
  // tp: per layer and micro-batch 4 all-reduces over 2 ranks, each 2 * 1 * (256 / 2) * 4 bytes;
  // 2 layers per stage, 4 micro-batches.
  CHECK(s0.tp_bytes == 2 * 4 * 4 * (2 * 1 * (act / 2) * 4));
  CHECK(s1.tp_bytes == s0.tp_bytes);
  // pp: stage 0 sends each micro-batch's activation forward, stage 1 its gradient back.
  CHECK(s0.pp_bytes == 4 * act * 4);
  CHECK(s1.pp_bytes == 4 * act * 4);
  // FLOPs (PaLM): per token and layer 6 * 872 + 12 * h * s = 6768; the last stage adds the
  // final layernorm and the tied head, 6 * (16 + 512); 128 tokens per step, split over tp = 2.
  CHECK(s0.model_flops == 2 * 6768 * 128 / 2);
  CHECK(s1.model_flops == (2 * 6768 + 6 * (16 + 512)) * 128 / 2);
  CHECK(s0.hardware_flops == s0.model_flops);  // no recomputation
  // All ranks of one replica together do what the single-rank plan counts.
  CHECK((s0.model_flops + s1.model_flops) * 2 == P::flops_per_token * 128);
}

TEST_CASE("ZeRO stages: 2Ψ, 2Ψ, 2Ψ and 3Ψ (1.5x) on the data-parallel axis", "[parallel][comm][zero]") {
  constexpr u64 psi = 4144;  // the whole tiny GPT: 4 * 872 + 512 + 128 + 16
  STATIC_REQUIRE(plan<tiny, tiny_batch>::param_count == psi);
  using base = plan<tiny, tiny_batch, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<0>>>>;
  using os = plan<tiny, tiny_batch, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<1>>>>;
  using os_g = plan<tiny, tiny_batch, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<2>>>>;
  using os_g_p = plan<tiny, tiny_batch, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<3>>>>;
  constexpr u64 phase = 3 * (psi / 4) * 4;  // one reduce-scatter or all-gather of f32 over 4 ranks
  CHECK(base::volume::stages[0].dp_bytes == 2 * phase);
  CHECK(os::volume::stages[0].dp_bytes == 2 * phase);
  CHECK(os_g::volume::stages[0].dp_bytes == 2 * phase);
  CHECK(os_g_p::volume::stages[0].dp_bytes == 3 * phase);
  // Mixed precision: 16-bit gradients and parameters travel.
  using mixed = plan<tiny, tiny_batch, strategy<mesh<axis<"dp", 4>>, precision<bf16, f32>>>;
  CHECK(mixed::volume::stages[0].dp_bytes == 2 * 3 * (psi / 4) * 2);
  // A dynamic axis is priced on request; alone, a rank sends nothing.
  using dyn = plan<tiny, tiny_batch, strategy<mesh<axis<"dp">>>>;
  CHECK(dyn::volume::stages[0].dp_bytes == 0);
  CHECK(dyn::volume::stage(0, 4).dp_bytes == 2 * phase);
}

TEST_CASE("ZeRO-2 and 3 with micro-batches: gradients reduce-scattered per micro-batch", "[parallel][comm][zero]") {
  using P = plan<tiny, tiny_batch,
                 strategy<mesh<axis<"dp", 4>, axis<"pp", 2>>, pipeline<"pp", gpipe, microbatches<3>>,
                          data_parallel<"dp", zero<3>>>>;
  // Stage 0 without tp: 2 blocks of 872, the tables 512 + 128.
  constexpr u64 psi = 2 * 872 + 512 + 128, phase = 3 * (psi / 4) * 4;
  STATIC_REQUIRE(P::memory::stages[0].params == psi);
  CHECK(P::volume::stages[0].dp_bytes == 3 * (phase + 2 * phase));
}

TEST_CASE("sequence parallelism, full recomputation and interleaving", "[parallel][comm]") {
  using P = plan<tiny, tiny_batch,
                 strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                          pipeline<"pp", interleaved<2>, microbatches<4>>, recompute<full>>>;
  constexpr step_volume s0 = P::volume::stages[0], s1 = P::volume::stages[1];
  // tp: full recomputation repeats the forward's 2 collectives: 6 per layer and micro-batch.
  CHECK(s0.tp_bytes == 2 * 4 * 6 * (2 * 1 * (act / 2) * 4));
  // pp: virtual stages 0 and 2 on stage 0, 1 and 3 on stage 1; 3 boundary messages each per
  // micro-batch, the sequence shard (1/tp) with sequence parallelism.
  CHECK(s0.pp_bytes == 3 * 4 * (act / 2) * 4);
  CHECK(s1.pp_bytes == 3 * 4 * (act / 2) * 4);
  // Hardware FLOPs add the layers' forward again: 2 * 872 + 4 * h * s per token and layer.
  CHECK(s0.hardware_flops - s0.model_flops == 2 * (2 * 872 + 4 * 8 * 16) * 128 / 2);
  using sel = plan<tiny, tiny_batch, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, recompute<selective>>>;
  constexpr step_volume v = sel::volume::stages[0];
  CHECK(v.hardware_flops - v.model_flops == 4 * (4 * 8 * 16) * 32 / 2);  // the attention core, 4 layers, 32 tokens
  CHECK(v.pp_bytes == 0);
}
