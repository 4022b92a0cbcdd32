// The per-rank memory accounting against the published formulas, evaluated here on their own:
// model states against ZeRO (Rajbhandari et al. 2020) and its 7.5B-parameter example on 64
// GPUs; activations against Korthikanti et al. 2022 (Table 2 per layer, Section 4 per
// pipeline stage) on the GPT-3-scale configurations of their Table 3 (22B, 175B, 530B, 1T;
// s = 2048, b = 1, t = 8). These models are far too big for an arena: everything below is
// constexpr arithmetic on the types. The activation sets a stage holds are compared with the
// schedule simulation's peaks.
#include <catch2/catch.hpp>

#include "weft/core/dtype.hpp"
#include "weft/model/gpt.hpp"
#include "weft/model/llama.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/schedule.hpp"
#include "weft/parallel/tensor_parallel.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

using namespace weft;

namespace {

using u64 = std::uint64_t;

// ---- Korthikanti et al. 2022, Table 2: bytes per transformer layer ----
// 16-bit activations, 1-byte dropout masks; s sequence, b micro-batch, h width, a heads, t tp.
struct korthikanti {
  u64 s, b, h, a, t;
  u64 no_parallelism() const { return s * b * h * 34 + 5 * a * s * s * b; }        // sbh(34 + 5as/h)
  u64 selective() const { return s * b * h * 34; }                                 // sbh·34
  u64 tensor() const { return s * b * h * 10 + s * b * h * 24 / t + 5 * a * s * s * b / t; }  // sbh(10 + 24/t + 5as/ht)
  u64 tensor_selective() const { return s * b * h * 10 + s * b * h * 24 / t; }     // sbh(10 + 24/t)
  u64 tensor_sequence() const { return (s * b * h * 34 + 5 * a * s * s * b) / t; } // sbh/t(34 + 5as/h)
  u64 tensor_sequence_selective() const { return s * b * h * 34 / t; }             // sbh·34/t
  u64 full() const { return 2 * s * b * h; }                                       // 2sbh
  // Section 4.4: the first stage's input-embedding dropout mask, p micro-batches (sbhp/t), and
  // with one stage the output layernorm, head input and 32-bit logits 4sbh/t·(1 + v/h).
  u64 embedding_dropout(u64 p) const { return s * b * h * p / t; }
  u64 output(u64 v) const { return 4 * s * b * h / t + 4 * s * b * v / t; }
};

// ---- ZeRO, Section 3.1 / Figure 1: model-state bytes with mixed precision and Adam ----
struct zero_paper {
  double psi, nd, k = 12;
  double baseline() const { return (2 + 2 + k) * psi; }
  double os() const { return 2 * psi + 2 * psi + k * psi / nd; }
  double os_g() const { return 2 * psi + (2 + k) * psi / nd; }
  double os_g_p() const { return (2 + 2 + k) * psi / nd; }
};

double gb(double bytes) { return bytes / 1e9; }
double round1(double x) { return std::round(x * 10) / 10; }
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

// ---- GPT-3 with Megatron's dropout, and plans over it ----
template <std::size_t A, std::size_t H, std::size_t L>
using gpt3 = with_dropout_masks<gpt<gpt_config<vocab<51200>, context<2048>, width<H>, heads<A>, depth<L>>>>;

template <class Model, std::size_t P, std::size_t M, class TpPart, class Recompute>
using gpt3_plan = plan<Model, batch<micro<1>, seq<2048>>,
                       strategy<mesh<axis<"dp">, axis<"tp", 8>, axis<"pp", P>>, TpPart,
                                pipeline<"pp", one_f_one_b, microbatches<M>>, recompute<Recompute>,
                                precision<bf16, f32>>>;

using tp_only = tensor_parallel<"tp">;
using tp_sp = tensor_parallel<"tp", sequence_parallel>;

// GPT's parameters one tensor-parallel rank of the first stage holds, counted by hand: per
// block 6h replicated (two layernorms of 2h, the two row-parallel biases) and (12h² + 7h)/t
// sharded; the token table is a vocabulary shard, the learned positions are replicated.
constexpr u64 gpt_first_stage_params(u64 v, u64 ctx, u64 h, u64 layers, u64 t) {
  return layers * (6 * h + (12 * h * h + 7 * h) / t) + v * h / t + ctx * h;
}

// All the checks of one Table 3 configuration (a heads, h width, L layers, p stages, M micro-batches).
template <std::size_t A, std::size_t H, std::size_t L, std::size_t P, std::size_t M>
void check_configuration() {
  using model = gpt3<A, H, L>;
  const korthikanti k{2048, 1, H, A, 8};
  INFO("a=" << A << " h=" << H << " L=" << L << " p=" << P);

  // Per layer: Table 2's rows.
  CHECK(gpt3_plan<model, P, M, tp_only, none>::memory::layer_bytes == k.tensor());
  CHECK(gpt3_plan<model, P, M, tp_sp, none>::memory::layer_bytes == k.tensor_sequence());
  CHECK(gpt3_plan<model, P, M, tp_only, selective>::memory::layer_bytes == k.tensor_selective());
  CHECK(gpt3_plan<model, P, M, tp_sp, selective>::memory::layer_bytes == k.tensor_sequence_selective());
  CHECK(gpt3_plan<model, P, M, tp_only, full>::memory::layer_bytes == k.full());

  // The first stage: 1F1B keeps p micro-batches of L/p layers — L layers' worth — and the
  // embedding's dropout masks of p micro-batches (Section 4.3, 4.4).
  using best = gpt3_plan<model, P, M, tp_sp, selective>;
  constexpr stage_memory first = best::memory::stages[0];
  CHECK(first.activation_sets == P);
  CHECK(first.layers == L / P);
  CHECK(first.activation_bytes == L * k.tensor_sequence_selective());
  CHECK(first.embedding_bytes == k.embedding_dropout(P));
  CHECK(gpt3_plan<model, P, M, tp_sp, none>::memory::stages[0].activation_bytes == L * k.tensor_sequence());
  if constexpr (P == 1) CHECK(first.output_bytes == k.output(51200));

  // Model states: 2 + 2 + 12 bytes per parameter the rank holds (no data-parallel sharding).
  constexpr u64 final_norm = P == 1 ? 2 * H : 0;  // with one stage, the first is also the last
  CHECK(first.params == gpt_first_stage_params(51200, 2048, H, L / P, 8) + final_norm);
  CHECK(first.model_state_bytes() == 16 * (gpt_first_stage_params(51200, 2048, H, L / P, 8) + final_norm));
  // The last stage holds the final layernorm and a vocabulary shard of the tied table.
  constexpr stage_memory last = best::memory::stages[P - 1];
  CHECK(last.params == (L / P) * (6 * H + (12ull * H * H + 7 * H) / 8) + 2 * H + 51200ull * H / 8 + (P > 1 ? 0 : 2048ull * H));
  CHECK(last.activation_sets == 1);

  std::printf("  a=%3zu h=%5zu L=%3zu p=%2zu: first stage %7.3f GiB activations (sp+selective), %7.3f GiB (sp), "
              "%8.3f GiB model states\n",
              A, H, L, P, first.activations_total() / gib,
              gpt3_plan<model, P, M, tp_sp, none>::memory::stages[0].activations_total() / gib,
              first.model_state_bytes() / gib);
}

}  // namespace

TEST_CASE("layer activations follow Korthikanti et al. Table 2 on the GPT-3 configurations", "[parallel][memory]") {
  std::printf("Korthikanti et al. 2022, Table 3 configurations (s=2048, b=1, t=8):\n");
  check_configuration<64, 6144, 48, 1, 1>();       // 22B
  check_configuration<96, 12288, 96, 8, 64>();     // 175B (GPT-3), global batch 64
  check_configuration<128, 20480, 105, 35, 280>(); // 530B, global batch 280
  check_configuration<160, 25600, 128, 64, 512>(); // 1T, global batch 512

  // The table in docs/parallelism.md: first-stage activations L·sbh·34/t (tp + sp + selective)
  // and L·sbh/t·(34 + 5as/h) (tp + sp), in GiB, from the formulas.
  const auto table = [](u64 a, u64 h, u64 layers) {
    const korthikanti k{2048, 1, h, a, 8};
    return std::pair{layers * k.tensor_sequence_selective() / gib, layers * k.tensor_sequence() / gib};
  };
  CHECK(table(64, 6144, 48) == std::pair{2.390625, 9.890625});
  CHECK(table(96, 12288, 96) == std::pair{9.5625, 32.0625});
  CHECK(table(128, 20480, 105) == std::pair{17.431640625, 50.244140625});
  CHECK(table(160, 25600, 128) == std::pair{26.5625, 76.5625});
}

TEST_CASE("the layer count without tensor parallelism is Table 2's first rows", "[parallel][memory]") {
  const korthikanti k{2048, 1, 12288, 96, 1};
  const layer_activation_dims d{2048, 1, 12288, 96, 96, 4 * 12288, false, 2, 1};
  CHECK(layer_activation_bytes(d, 1, false, recompute_kind::none) == k.no_parallelism());
  CHECK(layer_activation_bytes(d, 1, false, recompute_kind::selective) == k.selective());
  CHECK(layer_activation_bytes(d, 1, false, recompute_kind::full) == k.full());
  // Sequence parallel with full recompute keeps the sequence shard of the input (Table 2: 2sbh, without sp).
  CHECK(layer_activation_bytes(d, 8, true, recompute_kind::full) == k.full() / 8);
}

TEST_CASE("weft's generalisation: no dropout, 32-bit activations, grouped-query attention, SwiGLU", "[parallel][memory]") {
  // Term by term: per token 4h·e whole (norm and projection inputs), Q + K + V + output
  // projection input + MLP inner split by t; per head s² softmax outputs.
  using m = llama<llama_config<vocab<32000>, context<4096>, width<4096>, heads<32>, kv_heads<8>, depth<32>, ffn<11008>>>;
  using P = plan<m, batch<micro<2>, seq<4096>>, strategy<mesh<axis<"dp">, axis<"tp", 4>>, tensor_parallel<"tp">>>;
  constexpr u64 s = 4096, b = 2, h = 4096, a = 32, kv = 8, d = 128, f = 11008, t = 4, e = 4;
  constexpr u64 expected = s * b * 4 * h * e + s * b * e * (h / t + 2 * (kv / t) * d + h / t + 3 * (f / t)) + (a / t) * s * s * b * e;
  STATIC_REQUIRE(P::memory::layer_bytes == expected);
  STATIC_REQUIRE(P::memory::stages[0].embedding_bytes == 0);  // no dropout masks
  // One stage: output layernorm and head inputs (e each) and the logits, a vocabulary shard.
  STATIC_REQUIRE(P::memory::stages[0].output_bytes == 2 * s * b * h * e + s * b * (32000 / t) * 4);
  // f32 without a master copy: 4 + 4 + 8 bytes per parameter.
  STATIC_REQUIRE(P::memory::stages[0].model_state_bytes() == 16 * P::memory::stages[0].params);
}

TEST_CASE("model states follow ZeRO's 7.5B example on 64 GPUs", "[parallel][memory][zero]") {
  // The paper: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB per GPU for Ψ = 7.5B, K = 12, Nd = 64.
  const zero_paper z{7.5e9, 64};
  const state_bytes mixed = state_bytes_for<f16, f32>;
  CHECK(mixed.params == 2);
  CHECK(mixed.grads == 2);
  CHECK(mixed.optimizer() == 12);
  CHECK(zero_model_states(7'500'000'000, mixed, 0, 64).total() == z.baseline());
  CHECK(zero_model_states(7'500'000'000, mixed, 1, 64).total() == z.os());
  CHECK(zero_model_states(7'500'000'000, mixed, 2, 64).total() == z.os_g());
  CHECK(zero_model_states(7'500'000'000, mixed, 3, 64).total() == z.os_g_p());
  CHECK(round1(gb(z.baseline())) == 120.0);
  CHECK(round1(gb(z.os())) == 31.4);
  CHECK(round1(gb(z.os_g())) == 16.6);
  CHECK(round1(gb(z.os_g_p())) == 1.9);
}

namespace {
// A GPT of 7,500,029,952 parameters (within rounding of ZeRO's 7.5B), on a static dp axis of 64.
using gpt_7_5b = gpt<gpt_config<vocab<60096>, context<1024>, width<4096>, heads<32>, depth<36>>>;
template <std::size_t Stage, class Precision = precision<f16, f32>>
using zero_plan = plan<gpt_7_5b, batch<micro<1>, seq<1024>>,
                       strategy<mesh<axis<"dp", 64>>, data_parallel<"dp", zero<Stage>>, Precision>>;
template <class P>
constexpr double states(const P&) { return static_cast<double>(P::memory::stages[0].model_state_bytes()); }
}  // namespace

TEST_CASE("the plan's model states are ZeRO's for a 7.5B GPT on 64 data-parallel ranks", "[parallel][memory][zero]") {
  constexpr u64 v = 60096, ctx = 1024, h = 4096, layers = 36;
  constexpr u64 psi = v * h + ctx * h + layers * (12 * h * h + 13 * h) + 2 * h;
  STATIC_REQUIRE(zero_plan<0>::param_count == psi);
  STATIC_REQUIRE(zero_plan<0>::memory::stages[0].params == psi);
  const zero_paper z{static_cast<double>(psi), 64};
  CHECK(states(zero_plan<0>{}) == z.baseline());
  CHECK(states(zero_plan<1>{}) == z.os());
  CHECK(states(zero_plan<2>{}) == z.os_g());
  CHECK(states(zero_plan<3>{}) == z.os_g_p());
  CHECK(round1(gb(states(zero_plan<0>{}))) == 120.0);
  CHECK(round1(gb(states(zero_plan<1>{}))) == 31.4);
  CHECK(round1(gb(states(zero_plan<2>{}))) == 16.6);
  CHECK(round1(gb(states(zero_plan<3>{}))) == 1.9);
  // weft's f32 (no master copy, K = 8 for the two moments): P_os is 4Ψ + 4Ψ + 8Ψ/Nd.
  CHECK(states(zero_plan<1, precision<f32>>{}) == 8.0 * psi + 8.0 * psi / 64);
  // A dynamic dp axis is priced at dp = 1 (an upper bound) unless told the size.
  using dynamic_dp = plan<gpt_7_5b, batch<micro<1>, seq<1024>>,
                          strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>, precision<f16, f32>>>;
  STATIC_REQUIRE(dynamic_dp::memory::stages[0].model_state_bytes() == 16 * psi);
  STATIC_REQUIRE(dynamic_dp::memory::stage(0, 64).model_state_bytes() == 16 * psi / 64);
}

TEST_CASE("interleaving keeps L·(1 + (p−1)/(p·V)) layers' worth on the first stage", "[parallel][memory]") {
  // Korthikanti et al. Section 4.3, for the interleaved schedule with V chunks per stage.
  using model = gpt3<96, 12288, 96>;
  using P = plan<model, batch<micro<1>, seq<2048>>,
                 strategy<mesh<axis<"dp">, axis<"tp", 8>, axis<"pp", 8>>, tp_sp,
                          pipeline<"pp", interleaved<2>, microbatches<64>>, recompute<selective>, precision<bf16, f32>>>;
  const korthikanti k{2048, 1, 12288, 96, 8};
  constexpr u64 L = 96, p = 8, v = 2;
  CHECK(P::memory::stages[0].activation_bytes * p * v == L * k.tensor_sequence_selective() * (p * v + p - 1));
}

TEST_CASE("activation sets in flight equal the schedule simulation's peaks", "[parallel][memory][schedule]") {
  // Every stage of many schedules: the walk memory_model uses against simulate(); the first
  // and last chunk's sets against a count over the stage's instruction list.
  std::size_t compared = 0;
  for (const schedule_kind kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::interleaved})
    for (std::size_t p = 1; p <= 6; ++p)
      for (std::size_t m = 1; m <= 12; ++m)
        for (std::size_t v = 1; v <= (kind == schedule_kind::interleaved ? 3 : 1); ++v) {
          if (!detail::pipeline_problem(kind, p, m, kind == schedule_kind::interleaved ? v : 1).empty()) continue;
          const schedule<> s = make_schedule(kind, p, m, v);
          const auto report = simulate(s);
          REQUIRE(report.ok());
          for (std::size_t st = 0; st < p; ++st) {
            INFO("kind " << static_cast<int>(kind) << " p " << p << " m " << m << " v " << v << " stage " << st);
            CHECK(peak_activation_sets(kind, p, m, v, st) == report.peak_activations[st]);
            for (const std::size_t chunk : {std::size_t{0}, s.chunks() - 1}) {
              std::size_t held = 0, peak = 0;
              for (const instruction& i : s.list(st)) {
                if (!i.is_compute() || i.chunk != chunk) continue;
                if (i.kind == instruction_kind::forward) peak = std::max(peak, ++held);
                else --held;
              }
              CHECK(peak_chunk_sets(kind, p, m, v, st, chunk) == peak);
            }
            ++compared;
          }
        }
  CHECK(compared == 574);  // docs/parallelism.md quotes it
  // The published closed forms: gpipe M, 1F1B min(P − s, M).
  CHECK(peak_activation_sets(schedule_kind::gpipe, 4, 8, 1, 2) == 8);
  CHECK(peak_activation_sets(schedule_kind::one_f_one_b, 4, 8, 1, 0) == 4);
  CHECK(peak_activation_sets(schedule_kind::one_f_one_b, 4, 8, 1, 3) == 1);
}

namespace {
// example-begin memory-plan-175b
// GPT-3 175B as Korthikanti et al. 2022 train it (Table 3): t = 8, p = 8, s = 2048, b = 1,
// sequence parallelism with selective recomputation, 16-bit activations and dropout.
using gpt3_175b = with_dropout_masks<gpt<gpt_config<vocab<51200>, context<2048>, width<12288>, heads<96>, depth<96>>>>;
using plan_175b = plan<gpt3_175b, batch<micro<1>, seq<2048>>,
                       strategy<mesh<axis<"dp">, axis<"tp", 8>, axis<"pp", 8>>,
                                tensor_parallel<"tp", sequence_parallel>,
                                pipeline<"pp", one_f_one_b, microbatches<64>>,
                                recompute<selective>, precision<bf16, f32>>>;
constexpr stage_memory first = plan_175b::memory::stages[0];

// Activations: 1F1B keeps p = 8 micro-batches of L/p = 12 layers on the first stage,
// sbh·34/t bytes per layer (Table 2), so L·sbh·34/t = 9.5625 GiB; plus the input
// embedding's dropout masks, sbhp/t = 24 MiB.
static_assert(first.activation_sets == 8 && first.layers == 12);
static_assert(first.activation_bytes == 96ull * 2048 * 12288 * 34 / 8);
static_assert(first.embedding_bytes == 2048ull * 12288 * 8 / 8);

// Model states (ZeRO's 2 + 2 + 12 bytes per parameter): 12 blocks of
// 6h + (12h² + 7h)/t parameters, a vocabulary shard of the token table, the positions.
static_assert(first.params == 12 * (6 * 12288ull + (12 * 12288ull * 12288 + 7 * 12288) / 8) + 51200ull * 12288 / 8 +
                                  2048ull * 12288);
static_assert(first.model_state_bytes() == 16 * first.params);

static_assert(plan_175b::memory_per_rank < 80_GiB);  // the first stage is the largest: 51.65 GiB
// example-end memory-plan-175b
}  // namespace

TEST_CASE("the documented 175B memory plan (docs/parallelism.md)", "[parallel][memory][docs]") {
  // The numbers the page quotes, from the formulas (not from the plan).
  const double activations = 96.0 * 2048 * 12288 * 34 / 8, embedding = 2048.0 * 12288;
  const double params = 12 * (6 * 12288.0 + (12 * 12288.0 * 12288 + 7 * 12288) / 8) + 51200.0 * 12288 / 8 + 2048.0 * 12288;
  CHECK(activations / gib == 9.5625);
  CHECK(embedding / (1 << 20) == 24.0);
  CHECK(params == 2822731776.0);
  CHECK(std::round(16 * params / gib * 100) / 100 == 42.06);
  CHECK(std::round((16 * params + activations + embedding) / gib * 100) / 100 == 51.65);
  CHECK(static_cast<double>(plan_175b::memory_per_rank) == 16 * params + activations + embedding);
  CHECK(plan_175b::memory::peak_stage == 0);
  plan_175b::report_strategy();
}

namespace {
// ZeRO >= 1: the local arenas have no master or moment sections (state_sections.hpp).
using tiny_gpt = gpt<gpt_config<vocab<64>, context<16>, width<32>, heads<4>, depth<2>>>;
template <std::size_t Zero, class Precision = precision<float>>
using zero_tiny = plan<tiny_gpt, batch<micro<2>, seq<8>>,
                       strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<Zero>>>,
                       Precision>;
template <class P>
constexpr std::size_t moments = P::section_elements[P::adam_m] + P::section_elements[P::adam_v];
}  // namespace

TEST_CASE("under ZeRO the local arenas hold no optimizer state; the dp step's shards do", "[parallel][memory][zero]") {
  using z0 = zero_tiny<0>;
  using z1 = zero_tiny<1>;
  STATIC_REQUIRE(z0::optimizer_state_in_arena && !z1::optimizer_state_in_arena);
  STATIC_REQUIRE(moments<z0> == 2 * z0::param_count);
  STATIC_REQUIRE(moments<z1> == 0 && moments<zero_tiny<2>> == 0 && moments<zero_tiny<3>> == 0);
  STATIC_REQUIRE(z1::section_elements[z1::params] == z1::param_count && z1::section_elements[z1::grads] == z1::param_count);
  STATIC_REQUIRE(z0::bytes_per_rank - z1::bytes_per_rank == 2 * z0::param_count * sizeof(float));
  // mixed precision: no master copy either
  using m0 = zero_tiny<0, precision<bf16, float>>;
  using m1 = zero_tiny<1, precision<bf16, float>>;
  STATIC_REQUIRE(m0::section_elements[m0::master] == m0::param_count && m1::section_elements[m1::master] == 0);
  // the tensor-parallel shard's arena follows its plan
  STATIC_REQUIRE(moments<tensor_parallel_plan<z0>> == 2 * tensor_parallel_plan<z0>::param_count);
  STATIC_REQUIRE(moments<tensor_parallel_plan<z1>> == 0);
  // mixed precision: the shard's arena has an f32 master and f32 moments as plan<>'s (none under
  // ZeRO); a single-type shard's master section is empty
  using tm0 = tensor_parallel_plan<m0>;
  using tm1 = tensor_parallel_plan<m1>;
  STATIC_REQUIRE(tm0::mixed_precision && tm0::section_elements[tm0::master] == tm0::param_count);
  STATIC_REQUIRE(tm0::section_element_bytes[tm0::master] == 4 && tm0::section_element_bytes[tm0::adam_m] == 4);
  STATIC_REQUIRE(moments<tm0> == 2 * tm0::param_count && tm0::section_element_bytes[tm0::params] == 2);
  STATIC_REQUIRE(tm1::section_elements[tm1::master] == 0 && moments<tm1> == 0);
  STATIC_REQUIRE(tensor_parallel_plan<z0>::section_elements[tensor_parallel_plan<z0>::master] == 0);
  // a plan without a zero<> part, for data_parallel_step<Plan, Comm, Zero> given the stage itself
  using bare = plan<tiny_gpt, batch<micro<2>, seq<8>>>;
  STATIC_REQUIRE(std::is_same_v<zero_local_plan_t<bare, 0>, bare>);
  STATIC_REQUIRE(moments<zero_local_plan_t<bare, 1>> == 0);
  STATIC_REQUIRE(std::is_same_v<zero_local_plan_t<z1, 3>, z1>);
  STATIC_REQUIRE(zero_local_plan_t<bare, 2>::bytes_per_rank < bare::bytes_per_rank);
}

TEST_CASE("ZeRO-2/3 with data parallelism alone: the arena holds the layers outside the block stack and two block windows",
          "[parallel][memory][zero]") {
  using deep = gpt<gpt_config<vocab<64>, context<16>, width<32>, heads<4>, depth<5>>>;
  using B = batch<micro<2>, seq<8>>;
  using part = model_partition<deep>;
  using z3 = plan<deep, B, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<3>>>>;
  using z2 = plan<deep, B, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<2>>>>;
  using tp3 = plan<deep, B, strategy<mesh<axis<"dp", 2>, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<3>>>>;
  using bare = plan<deep, B>;
  using z1 = plan<deep, B, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<1>>>>;
  STATIC_REQUIRE(z3::windowed_params && !z2::windowed_params && !tp3::windowed_params && !bare::windowed_params);
  STATIC_REQUIRE(zero_local_plan_t<bare, 3>::windowed_params && !zero_local_plan_t<bare, 2>::windowed_params);
  // gradients: ZeRO-2 and 3 (not 1, not under tp)
  STATIC_REQUIRE(z3::windowed_grads && z2::windowed_grads && !z1::windowed_grads && !tp3::windowed_grads && !bare::windowed_grads);
  STATIC_REQUIRE(zero_local_plan_t<bare, 2>::windowed_grads && zero_local_plan_t<bare, 3>::windowed_grads &&
                 !zero_local_plan_t<bare, 1>::windowed_grads);
  // the stack starts after the token and position embeddings; 5 blocks of one block's elements
  STATIC_REQUIRE(z3::window_begin == deep::find_param("h.0.ln_1.weight") && z3::window_blocks == 5);
  STATIC_REQUIRE(z3::window_block == deep::find_param("h.1.ln_1.weight") - deep::find_param("h.0.ln_1.weight"));
  STATIC_REQUIRE(z3::window_block == part::block.total);
  STATIC_REQUIRE(z3::resident_param_count == z3::param_count - 5 * z3::window_block);
  STATIC_REQUIRE(z3::section_elements[z3::params] == z3::resident_param_count);
  STATIC_REQUIRE(z3::section_elements[z3::windows] == 2 * z3::window_block);
  // gradients as parameters: resident layers, two windows (ZeRO-2 and 3)
  STATIC_REQUIRE(z3::resident_grad_count == z3::resident_param_count && z2::resident_grad_count == z3::resident_grad_count);
  STATIC_REQUIRE(z3::section_elements[z3::grads] == z3::resident_grad_count);
  STATIC_REQUIRE(z3::section_elements[z3::grad_windows] == 2 * z3::window_block);
  STATIC_REQUIRE(z2::section_elements[z2::grad_windows] == 2 * z2::window_block && z2::window_block == z3::window_block);
  STATIC_REQUIRE(z1::section_elements[z1::grad_windows] == 0 && z1::section_elements[z1::grads] == z1::param_count);
  STATIC_REQUIRE(z2::section_elements[z2::windows] == 0 && z2::section_elements[z2::params] == z2::param_count);
  // 3 blocks fewer than ZeRO-2's arena: 5 not held, 2 windows; ZeRO-2's 3 fewer than ZeRO-1's
  STATIC_REQUIRE(z2::bytes_per_rank - z3::bytes_per_rank >= 3 * z3::window_block * sizeof(float) - 64);
  STATIC_REQUIRE(z1::bytes_per_rank - z2::bytes_per_rank >= 3 * z2::window_block * sizeof(float) - 64);
  // resident parameters keep their names' offsets outside the stack; the stack's are not in the arena
  STATIC_REQUIRE(z3::param_offset_bytes("h.2.attn.c_attn.weight") == npos_param);
  STATIC_REQUIRE(z3::param_offset_bytes("wte.weight") == z2::param_offset_bytes("wte.weight"));
  STATIC_REQUIRE(z3::param_offset_bytes("ln_f.weight") ==
                 z3::offsets[z3::params] + (deep::find_param("ln_f.weight") - 5 * z3::window_block) * sizeof(float));
  // the memory model counts what the arena holds: working bytes = the resident layers and two
  // windows, of gradients (ZeRO-2, 3) and of parameters (ZeRO-3), on a tp shard too
  constexpr state_bytes b = state_bytes_for<float>;
  constexpr std::size_t held = z3::resident_param_count + 2 * z3::window_block;
  STATIC_REQUIRE(z3::memory::stage(0, 4).working_bytes == held * b.grads + held * b.params);
  STATIC_REQUIRE(z2::memory::stage(0, 4).working_bytes == held * b.grads);
  // under tp the tp shard's arena (tensor_parallel_plan) holds its stack layer by layer too: the
  // single-rank arena of tp3 is not windowed, but it asks for windows, and the shard's plan has them
  using tpl = tensor_parallel_plan<tp3>;
  STATIC_REQUIRE(tp3::wants_windowed_params && tp3::wants_windowed_grads && !z1::wants_windowed_grads);
  STATIC_REQUIRE(tpl::windowed_params && tpl::windowed_grads && tpl::window_blocks == 5);
  STATIC_REQUIRE(tpl::window_block == model_partition<deep, 2>::block.per_rank);
  STATIC_REQUIRE(tpl::param_count == tp3::memory::stage(0, 2).params);
  STATIC_REQUIRE(tpl::resident_param_count == tpl::param_count - 5 * tpl::window_block);
  STATIC_REQUIRE(tpl::section_elements[tpl::windows] == 2 * tpl::window_block);
  STATIC_REQUIRE(tpl::section_elements[tpl::grad_windows] == 2 * tpl::window_block);
  STATIC_REQUIRE(!tensor_parallel_plan<z1>::windowed_grads && !tensor_parallel_plan<bare>::windowed_grads);
  constexpr std::size_t tp_held = tpl::resident_param_count + 2 * tpl::window_block;
  STATIC_REQUIRE(tp3::memory::stage(0, 2).working_bytes == tp_held * b.grads + tp_held * b.params);
  STATIC_REQUIRE(z3::memory::stage(0, 4).total() < z2::memory::stage(0, 4).total());
  STATIC_REQUIRE(zero_held_elements(100, 10, 1, true) == 100);  // one block: no window saves anything
  STATIC_REQUIRE(zero_held_elements(100, 10, 8, false) == 100 && zero_held_elements(100, 10, 8, true) == 40);
  STATIC_REQUIRE(zero_working_bytes(100, b, 2, 40) == 40 * b.grads && zero_working_bytes(100, b, 3, 40) == 40 * (b.grads + b.params));
}

TEST_CASE("the working buffers of weft's ZeRO: gradients (2, 3) and gathered parameters (3)", "[parallel][memory][zero]") {
  constexpr state_bytes f32 = state_bytes_for<float>;
  STATIC_REQUIRE(zero_working_bytes(1000, f32, 0) == 0);
  STATIC_REQUIRE(zero_working_bytes(1000, f32, 1) == 0);
  STATIC_REQUIRE(zero_working_bytes(1000, f32, 2) == 4000);
  STATIC_REQUIRE(zero_working_bytes(1000, f32, 3) == 8000);
  // in the plan: counted in total() and memory_per_rank, not in ZeRO's model states
  using z3 = plan<tiny_gpt, batch<micro<2>, seq<8>>, strategy<mesh<axis<"dp", 4>>, data_parallel<"dp", zero<3>>>>;
  constexpr stage_memory m = z3::memory::stages[0];
  STATIC_REQUIRE(m.working_bytes == 2 * 4 * z3::param_count);
  STATIC_REQUIRE(m.allocated_bytes() == m.model_state_bytes() + m.working_bytes + m.activations_total());
  STATIC_REQUIRE(m.total() == m.allocated_bytes() + m.comm_bytes);
  STATIC_REQUIRE(z3::memory_per_rank == m.total());
}

TEST_CASE("the collectives' temporaries: in-flight buckets, reduce-scatter pieces", "[parallel][memory][zero]") {
  constexpr std::size_t mib = std::size_t{1} << 20, f = 4;  // f32 gradients
  // no data parallelism: no collective over the gradients
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 0, 1, 25 * mib) == 0);
  // ZeRO-0/1: a temporary per bucket in flight, at most gradient_buckets_in_flight of them ...
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 0, 2, 25 * mib) == gradient_buckets_in_flight * 25 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 1, 8, 4 * mib) == gradient_buckets_in_flight * 4 * mib);
  // ... and never more than the whole gradient (a model smaller than the buckets in flight)
  STATIC_REQUIRE(comm_buffer_bytes(1000, f, 0, 2, 25 * mib) == 1000 * f);
  // ZeRO-2/3: one piece of bucket_bytes; Open MPI's reduce-scatter keeps the piece and up to three
  // blocks of piece/dp, at most another piece
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 2, 2, 24 * mib) == 2 * 24 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 3, 4, 24 * mib) == 24 * mib + 3 * 6 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 2, 8, 24 * mib) == 24 * mib + 3 * 3 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(1000, f, 3, 2, 25 * mib) == 2 * 1000 * f);
  // layer by layer a block's gradient window is one reduce-scatter: the piece is the larger
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 2, 2, 24 * mib, 8 * mib / f) == 2 * 24 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 2, 2, 24 * mib, 32 * mib / f) == 2 * 32 * mib);
  STATIC_REQUIRE(comm_buffer_bytes(100 * mib, f, 0, 2, 24 * mib, 32 * mib / f) == gradient_buckets_in_flight * 24 * mib);
  // in the plan: counted in total() and memory_per_rank, at the mesh's dp, with the strategy's buckets
  using dp2 = plan<tiny_gpt, batch<micro<2>, seq<8>>,
                   strategy<mesh<axis<"dp", 2>>, data_parallel<"dp", zero<1>, bucket_bytes<4096>>>>;
  constexpr stage_memory m = dp2::memory::stages[0];
  STATIC_REQUIRE(m.comm_bytes == gradient_buckets_in_flight * 4096);
  STATIC_REQUIRE(dp2::memory_per_rank == m.allocated_bytes() + m.comm_bytes);
  STATIC_REQUIRE(dp2::memory::stage(0, 1).comm_bytes == 0);
}
