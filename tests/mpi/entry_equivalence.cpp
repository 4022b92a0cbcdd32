// Every strategy preset, through the plan-driven entry point (make_training_step), reproduces
// the single-process run. Under mpirun each rank builds `make_training_step<Plan>(world, o)` for
// the preset named on the command line, and also (cheaply: the models are tiny) the
// single-process reference over the whole global batch, dp · K micro-batches per step (K: the
// pipeline's micro-batches, or the gradient-accumulation count). After several steps the loss
// and the gradient norm of every step must agree on every rank. An unknown preset, model or
// dtype ends the run with one line and status 2 (no fallback to a default strategy).
// The step is also held to the plan its preset names, read from the name itself ("tp2-sp-pp2":
// tp 2, pp 2, data parallelism over the rest of the world), never from the step under test:
// each rank's mesh coordinates (strategy.hpp's rank order), the data-parallel size and shard, the
// ZeRO stage a name gives, and the parameters the rank holds (the planner's memory model for its
// stage: plan<>::memory::stage). The data layout (this rank's rows, the replicas the reference
// runs) comes from that plan too, so a step that silently fell back to plain data parallelism
// fails. `tp2-control-dp` is that fallback on purpose (a tp2 plan, a plain data-parallel step):
// a negative control that must fail (mpi.failure.entry_equivalence_fallback_control).
//   mpirun -np N mpi_entry_equivalence <preset> <gpt|llama|llama-variant|gemma-like|neox|gemma3> <f64|f32> [steps]
//   mpirun -np 1 mpi_entry_equivalence --list
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace weft;

// ---- models: tiny, so that the reference costs nothing; depth 12 lets pp 4 x 3 chunks cut it ----
template <std::size_t Depth>
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<Depth>>>;
template <std::size_t Depth>
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<Depth>>>;
// The LLaMA variants (llama-variant): a head that multiplies by the token table (LLaMA 3.2's
// small models), a base-500000 rotary (LLaMA 3), a sliding window of 5 of the 8 tokens (Mistral),
// and Qwen's q, k, v bias, QK-norm, RMSNorm epsilon of 1e-6 and 4 heads of 6 on a width of 16
template <std::size_t Depth>
using llama_variant_t =
    llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<Depth>, tie_word_embeddings<>,
                       rope_theta<500000>, sliding_window<5>, qkv_bias<>, query_key_norm<>, head_dim<6>, norm_eps<1e-6>>>;
// A Gemma-shaped composition (gemma-like): the embedding scaled by sqrt(width), GeGLU MLPs,
// heads of 6 on a width of 16, a tied head (tests/model/test_gemma_like.cpp builds the same)
template <std::size_t Depth>
struct gemma_variant_t
    : sequential<named<"embed", token_embedding<32, 16>>, embedding_scale<16>,
                 named<"layers", repeat<Depth, block<rmsnorm<16>, attention<16, 4, 2, rope, false, export_layout::as_is, 0, 6>,
                                                     rmsnorm<16>, geglu_mlp<16, 24>>>>,
                 named<"norm", rmsnorm<16>>, lm_head<32, 16, tied<"embed.weight">>> {
  static constexpr std::size_t vocab_size = 32, context_length = 8, depth = Depth, width = 16, heads = 4, kv_heads = 2,
                               head_dim = 6, ffn = 24;
  static constexpr std::size_t lookup_param_count = 0;
};
// GPT-NeoX (neox): parallel-residual blocks of two LayerNorms, attention with biases and half of
// each head of 4 rotating, a GELU MLP with biases, an untied head
template <std::size_t Depth>
using neox_t = gpt_neox<neox_config<vocab<32>, context<8>, width<16>, heads<4>, depth<Depth>, rotary_pct<0.5>>>;
// Gemma 3 (gemma3): sandwich blocks of four (1 + w) RMSNorms, QK-norm, GeGLU, a tied head, and
// every third block global (block 2 of 4: the second pipeline stage's first block) while the
// others attend through a window of 3 with another rotary base; the global layers' frequencies
// scaled linearly by 4
template <std::size_t Depth>
using gemma3_t = gemma3<gemma3_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, head_dim<6>, depth<Depth>,
                                      ffn<24>, sliding_window<3>, layer_pattern<3>, rope_scaling<linear_rope_scaling<4>>>>;
constexpr std::size_t B = 2, S = 8;  // per rank: micro-batches of 2 sequences of 8 tokens
constexpr std::size_t K = 2;         // micro-batches per step when there is no pipeline

// Token of (step, micro-batch, global row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

// ---- the presets: a strategy each, over a mesh whose dp axis takes the rest of the world ----
template <class Model, class T, class Strategy>
using plan_of = plan<Model, batch<micro<B>, seq<S>>, precision<T>, Strategy>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;
template <std::size_t TP, bool SP, std::size_t Zero = 0>
using tp_s = std::conditional_t<SP,
                                strategy<mesh<axis<"dp">, axis<"tp", TP>>, tensor_parallel<"tp", sequence_parallel>,
                                         data_parallel<"dp", zero<Zero>>>,
                                strategy<mesh<axis<"dp">, axis<"tp", TP>>, tensor_parallel<"tp">,
                                         data_parallel<"dp", zero<Zero>>>>;
template <std::size_t PP, class Schedule, std::size_t M, std::size_t Zero = 0>
using pp_s = strategy<mesh<axis<"dp">, axis<"pp", PP>>, pipeline<"pp", Schedule, microbatches<M>>,
                      data_parallel<"dp", zero<Zero>>>;
template <class Schedule, std::size_t Zero = 0>
using tp_pp_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                         pipeline<"pp", Schedule, microbatches<4>>, data_parallel<"dp", zero<Zero>>>;

// With recompute<> in the strategy: the same parts, activations recomputed in backward.
template <class Policy, std::size_t TP, bool SP>
using tp_rc_s = std::conditional_t<SP,
                                   strategy<mesh<axis<"dp">, axis<"tp", TP>>, tensor_parallel<"tp", sequence_parallel>,
                                            data_parallel<"dp", zero<1>>, recompute<Policy>>,
                                   strategy<mesh<axis<"dp">, axis<"tp", TP>>, tensor_parallel<"tp">, recompute<Policy>>>;
template <class Policy, class Schedule>
using pp_rc_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", Schedule, microbatches<4>>, recompute<Policy>>;
template <class Policy>
using tp_pp_rc_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                            pipeline<"pp", one_f_one_b, microbatches<4>>, recompute<Policy>>;

// Sequence parallelism inside a pipeline: each tp rank's stages see its slice of the sequence.
template <class Schedule, class... Extra>
using tp_sp_pp_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                            pipeline<"pp", Schedule, microbatches<4>>, data_parallel<"dp", zero<1>>, Extra...>;

// ---- the plan a preset's name states: "tp<N>", "pp<N>", "zero<N>" between dashes ----
struct named_plan {
  std::size_t tp = 1, pp = 1;
  long zero = -1;  // -1: the name does not say
};
named_plan plan_from_name(std::string_view name) {
  named_plan e;
  for (std::size_t b = 0; b <= name.size();) {
    const std::size_t end = std::min(name.find('-', b), name.size());
    const std::string_view token = name.substr(b, end - b);
    const auto number_after = [&](std::string_view prefix) -> long {
      if (token.size() <= prefix.size() || token.substr(0, prefix.size()) != prefix) return -1;
      long v = 0;
      for (const char c : token.substr(prefix.size())) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
      }
      return v;
    };
    if (const long v = number_after("tp"); v > 0) e.tp = static_cast<std::size_t>(v);
    else if (const long v = number_after("pp"); v > 0) e.pp = static_cast<std::size_t>(v);
    else if (const long v = number_after("zero"); v >= 0) e.zero = v;
    b = end + 1;
  }
  return e;
}

// One check of the step against the plan; a mismatch is one line naming both numbers.
void agree(const std::string& name, const char* what, std::size_t got, std::size_t planned, int line) {
  const std::string text = name + ": " + what + " = " + std::to_string(got) + ", the plan says " + std::to_string(planned);
  test::check(got == planned, text.c_str(), __FILE__, line);
}

// `StepStrategy` is what the step is built from: `Strategy` itself, except in the negative
// control (a plain data-parallel step under a plan that names another strategy).
template <class Model, class T, class Strategy, class StepStrategy = Strategy>
void run(mpi_communicator& world, const std::string& name, std::size_t steps, double tol) {
  using P = plan_of<Model, T, Strategy>;
  using SP = plan_of<Model, T, StepStrategy>;
  using R = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;  // one process, no strategy
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the sharded norm must be right
  constexpr std::size_t k = P::pp > 1 ? P::strategy_type::microbatches : K;
  if constexpr (SP::pp == 1) o.grad_accum = K;
  auto step = make_training_step<SP>(world, o);

  // ---- the plan, from the preset's name and the world size: never read from the step ----
  const named_plan want = plan_from_name(name);
  const std::size_t n = static_cast<std::size_t>(world.size()), r = static_cast<std::size_t>(world.rank());
  agree(name, "the plan type's tp", P::tp, want.tp, __LINE__);  // the preset table builds what its name says
  agree(name, "the plan type's pp", P::pp, want.pp, __LINE__);
  agree(name, "ranks left over by tp x pp", n % (want.tp * want.pp), 0, __LINE__);
  const std::size_t dp = std::max<std::size_t>(1, n / (want.tp * want.pp));
  // strategy.hpp's rank order: tensor-parallel ranks adjacent, then data-parallel, then pipeline
  const std::size_t t = r % want.tp, d = r / want.tp % dp, stage = r / (want.tp * dp);
  const rank_coords c = step.coords();
  agree(name, "tensor-parallel index", c.tp(), t, __LINE__);
  agree(name, "data-parallel index", c.dp(), d, __LINE__);
  agree(name, "pipeline stage", c.pp(), stage, __LINE__);
  agree(name, "data-parallel size", step.dp_size(), dp, __LINE__);
  agree(name, "data shards", step.data_shards(), dp, __LINE__);
  agree(name, "data shard", step.data_rank(), d, __LINE__);
  if (want.zero >= 0) agree(name, "ZeRO stage", step.inner().zero_stage, static_cast<std::size_t>(want.zero), __LINE__);
  // The parameters this rank holds (its tp shard of its stage, before ZeRO) = the planner's count
  // for the stage; and, whatever the planner says, fewer than the whole model exactly when the
  // plan cuts the model.
  const std::size_t held = detail::parameter_block_size_of(step.inner().local());
  agree(name, "parameters on this rank", held, P::memory::stage(stage, dp).params, __LINE__);
  agree(name, "whole model on this rank (1 = yes)", held == P::global_param_count,
        want.tp * want.pp == 1 ? 1 : 0, __LINE__);
  // ZeRO's shard of them: dp contiguous runs, the first held % dp one longer
  agree(name, "ZeRO shard of this rank", step.inner().shard_size(), held / dp + (d < held % dp ? 1 : 0), __LINE__);
  const std::size_t row0 = d * B;  // this replica's rows of each micro-batch, by the plan

  train_options ro = o;
  ro.grad_accum = k * dp;  // the reference sees every data-parallel replica's micro-batches
  training_step<R> ref(ro);

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0;
    const auto md = step.step([&](auto tok, auto tgt) {  // this replica's rows of micro-batch i
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, i, row0 + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, i, row0 + b, t + 1, Model::vocab_size);
        }
      ++i;
    });
    std::size_t j = 0;
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = replica j / k's micro j % k
      const std::size_t r = j / k, mi = j % k;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, mi, r * B + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1, Model::vocab_size);
        }
      ++j;
    });
    const bool loss_ok = std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss);
    const bool norm_ok = std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm;
    WEFT_CHECK(loss_ok);
    WEFT_CHECK(norm_ok);
    WEFT_CHECK(std::isfinite(md.loss) && md.loss > 0);
    if (!loss_ok || !norm_ok)
      std::fprintf(stderr, "rank %d step %zu: loss %.17g vs %.17g, grad norm %.17g vs %.17g\n", world.rank(), s,
                   md.loss, mr.loss, md.grad_norm, mr.grad_norm);
  }
  if (world.rank() == 0)
    std::printf("%s: %d ranks = dp %zu x tp %zu x pp %zu, %zu steps of %zu micro-batches each compared (tolerance %.0e)\n",
                name.c_str(), world.size(), dp, P::tp, P::pp, steps, k * dp, tol);
}

// ---- the preset table: name -> strategy (and the depth its pipeline needs) ----
// Every preset runs with gpt in f64; a core subset (one of each kind) also with llama and in
// f32. Each instantiation is a whole distributed step, so the full matrix would cost minutes of
// compile time for little more coverage.
template <template <std::size_t> class Model, class T>
bool dispatch_core(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (p == "dp") run<Model<4>, T, dp_s<0>>(world, n, steps, tol);
  else if (p == "zero3") run<Model<4>, T, dp_s<3>>(world, n, steps, tol);
  else if (p == "tp2-sp") run<Model<4>, T, tp_s<2, true, 1>>(world, n, steps, tol);
  else if (p == "pp2-interleaved") run<Model<4>, T, pp_s<2, interleaved<2>, 4>>(world, n, steps, tol);
  else if (p == "tp2-pp2") run<Model<4>, T, tp_pp_s<one_f_one_b, 1>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2") run<Model<4>, T, tp_sp_pp_s<one_f_one_b>>(world, n, steps, tol);
  // attention keeping row statistics (flash_attention) against the reference's probabilities
  else if (p == "tp2-sp-pp2-flash") run<Model<4>, T, tp_sp_pp_s<one_f_one_b, flash_attention>>(world, n, steps, tol);
  else return false;
  return true;
}
template <template <std::size_t> class Model, class T>
bool dispatch_all(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (dispatch_core<Model, T>(world, p, steps, tol)) return true;
  if (p == "zero1") run<Model<4>, T, dp_s<1>>(world, n, steps, tol);
  else if (p == "zero2") run<Model<4>, T, dp_s<2>>(world, n, steps, tol);
  else if (p == "tp2") run<Model<4>, T, tp_s<2, false>>(world, n, steps, tol);
  else if (p == "tp4") run<Model<4>, T, tp_s<4, false>>(world, n, steps, tol);
  else if (p == "tp4-sp-zero2") run<Model<4>, T, tp_s<4, true, 2>>(world, n, steps, tol);
  else if (p == "pp2-gpipe") run<Model<4>, T, pp_s<2, gpipe, 4>>(world, n, steps, tol);
  else if (p == "pp2-1f1b") run<Model<4>, T, pp_s<2, one_f_one_b, 4>>(world, n, steps, tol);
  else if (p == "pp2-1f1b-zero2") run<Model<4>, T, pp_s<2, one_f_one_b, 4, 2>>(world, n, steps, tol);
  else if (p == "pp4-1f1b") run<Model<4>, T, pp_s<4, one_f_one_b, 4>>(world, n, steps, tol);
  else if (p == "pp4-interleaved3") run<Model<12>, T, pp_s<4, interleaved<3>, 8>>(world, n, steps, tol);
  else if (p == "tp2-pp2-gpipe-zero2") run<Model<4>, T, tp_pp_s<gpipe, 2>>(world, n, steps, tol);
  else if (p == "tp2-recompute-full") run<Model<4>, T, tp_rc_s<full, 2, false>>(world, n, steps, tol);
  else if (p == "tp2-sp-recompute-selective") run<Model<4>, T, tp_rc_s<selective, 2, true>>(world, n, steps, tol);
  else if (p == "pp2-recompute-full") run<Model<4>, T, pp_rc_s<full, one_f_one_b>>(world, n, steps, tol);
  else if (p == "pp2-interleaved-recompute-selective")
    run<Model<4>, T, pp_rc_s<selective, interleaved<2>>>(world, n, steps, tol);
  else if (p == "tp2-pp2-recompute-full") run<Model<4>, T, tp_pp_rc_s<full>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2-interleaved-selective")
    run<Model<4>, T, tp_sp_pp_s<interleaved<2>, recompute<selective>>>(world, n, steps, tol);
  else if (p == "zero3-flash")
    run<Model<4>, T, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>, flash_attention>>(world, n, steps, tol);
  // negative control (not in --list): the tp2 plan, run by a plain data-parallel step; must fail
  else if (p == "tp2-control-dp") run<Model<4>, T, tp_s<2, false>, dp_s<0>>(world, n, steps, tol);
  else return false;
  return true;
}

// The LLaMA variants (f64): where the tied table is cut or summed between stages, and the window
// under tensor, sequence and pipeline parallelism and under flash_attention.
bool dispatch_variant(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (p == "zero3") run<llama_variant_t<4>, double, dp_s<3>>(world, n, steps, tol);
  else if (p == "pp2-interleaved") run<llama_variant_t<4>, double, pp_s<2, interleaved<2>, 4>>(world, n, steps, tol);
  else if (p == "tp2-pp2") run<llama_variant_t<4>, double, tp_pp_s<one_f_one_b, 1>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2") run<llama_variant_t<4>, double, tp_sp_pp_s<one_f_one_b>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2-flash")
    run<llama_variant_t<4>, double, tp_sp_pp_s<one_f_one_b, flash_attention>>(world, n, steps, tol);
  else return false;
  return true;
}

// The Gemma-shaped composition (f64): its new layers under tensor, sequence and pipeline parallelism.
bool dispatch_gemma(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (p == "zero3") run<gemma_variant_t<4>, double, dp_s<3>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2") run<gemma_variant_t<4>, double, tp_sp_pp_s<one_f_one_b>>(world, n, steps, tol);
  else return false;
  return true;
}

// GPT-NeoX (f64): the two branches of each parallel block (each with its own norm) under tensor,
// sequence and pipeline parallelism and ZeRO-3.
bool dispatch_neox(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (p == "zero3") run<neox_t<4>, double, dp_s<3>>(world, n, steps, tol);
  else if (p == "tp2-pp2") run<neox_t<4>, double, tp_pp_s<one_f_one_b, 1>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2") run<neox_t<4>, double, tp_sp_pp_s<one_f_one_b>>(world, n, steps, tol);
  else return false;
  return true;
}

// Gemma 3 (f64): the layer index under ZeRO-3's block windows and pipeline stages (interleaved
// chunks too), with tensor and sequence parallelism.
bool dispatch_gemma3(mpi_communicator& world, std::string_view p, std::size_t steps, double tol) {
  const std::string n(p);
  if (p == "zero3") run<gemma3_t<4>, double, dp_s<3>>(world, n, steps, tol);
  else if (p == "pp2-interleaved") run<gemma3_t<4>, double, pp_s<2, interleaved<2>, 4>>(world, n, steps, tol);
  else if (p == "tp2-sp-pp2") run<gemma3_t<4>, double, tp_sp_pp_s<one_f_one_b>>(world, n, steps, tol);
  else return false;
  return true;
}

constexpr const char* presets =
    "dp zero1 zero2 zero3 tp2 tp2-sp tp4 tp4-sp-zero2 pp2-gpipe pp2-1f1b pp2-interleaved pp2-1f1b-zero2 pp4-1f1b "
    "pp4-interleaved3 tp2-pp2 tp2-pp2-gpipe-zero2 tp2-recompute-full tp2-sp-recompute-selective pp2-recompute-full "
    "pp2-interleaved-recompute-selective tp2-pp2-recompute-full tp2-sp-pp2 tp2-sp-pp2-interleaved-selective "
    "tp2-sp-pp2-flash zero3-flash";
constexpr const char* core_presets = "dp zero3 tp2-sp pp2-interleaved tp2-pp2 tp2-sp-pp2 tp2-sp-pp2-flash";
constexpr const char* variant_presets = "zero3 pp2-interleaved tp2-pp2 tp2-sp-pp2 tp2-sp-pp2-flash";
constexpr const char* gemma_presets = "zero3 tp2-sp-pp2";
constexpr const char* neox_presets = "zero3 tp2-pp2 tp2-sp-pp2";
constexpr const char* gemma3_presets = "zero3 pp2-interleaved tp2-sp-pp2";

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  if (argc == 2 && std::string_view(argv[1]) == "--list") {
    if (world.rank() == 0) std::printf("%s\n", presets);
    return 0;
  }
  const std::string preset = argc > 1 ? argv[1] : "", model = argc > 2 ? argv[2] : "", dtype = argc > 3 ? argv[3] : "";
  char* end = nullptr;
  const std::size_t steps = argc > 4 ? std::strtoul(argv[4], &end, 10) : 4;
  const bool args_ok = argc >= 4 && argc <= 5 && (model == "gpt" || model == "llama" || model == "llama-variant" || model == "gemma-like" || model == "neox" || model == "gemma3") &&
                       (dtype == "f64" || dtype == "f32") && (argc == 4 || (*end == '\0' && steps > 0));
  collective_check(world, args_ok,
                   "entry_equivalence: usage: <preset> <gpt|llama|llama-variant|gemma-like|neox|gemma3> <f64|f32> [steps > 0]; got '" + preset + " " + model +
                       " " + dtype + "'",
                   2);
  const double tol = dtype == "f64" ? 1e-10 : 2e-5;
  bool known = false;
  if (model == "llama-variant") known = dtype == "f64" && dispatch_variant(world, preset, steps, tol);
  else if (model == "gemma-like") known = dtype == "f64" && dispatch_gemma(world, preset, steps, tol);
  else if (model == "neox") known = dtype == "f64" && dispatch_neox(world, preset, steps, tol);
  else if (model == "gemma3") known = dtype == "f64" && dispatch_gemma3(world, preset, steps, tol);
  else if (model == "gpt" && dtype == "f64") known = dispatch_all<gpt_t, double>(world, preset, steps, tol);
  else if (model == "gpt") known = dispatch_core<gpt_t, float>(world, preset, steps, tol);
  else if (dtype == "f64") known = dispatch_core<llama_t, double>(world, preset, steps, tol);
  else known = dispatch_core<llama_t, float>(world, preset, steps, tol);
  collective_check(world, known,
                   "entry_equivalence: unknown preset '" + preset + "' for " + model + " " + dtype + " (gpt f64: " +
                       presets + "; llama-variant f64: " + variant_presets + "; gemma-like f64: " + gemma_presets + "; neox f64: " + neox_presets + "; gemma3 f64: " + gemma3_presets + "; otherwise: " + core_presets + ")",
                   2);
  return test::finish(world, ("entry_equivalence " + preset + " " + model + " " + dtype).c_str());
}
