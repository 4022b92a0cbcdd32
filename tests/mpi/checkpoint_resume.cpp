// Distributed checkpoints reshard on load (train/distributed_checkpoint.hpp). A tiny GPT in f64
// is trained under one strategy for K steps and saved; another run — other strategy, other
// world size, or one process — loads it and trains K more. Every step's loss and gradient norm
// must equal those of the uninterrupted single-process run (the reference, computed by every
// rank: the model is tiny) within the tolerance of tests/mpi/entry_equivalence.cpp. The global
// batch is the same under every preset: G = 8 micro-batches of B sequences per step, split as
// dp replicas x (pipeline micro-batches or gradient accumulation).
//   mpirun -np N mpi_checkpoint_resume save   <preset> <root> [K [model]]  K steps, then save (rank 0 clears root first)
//   mpirun -np N mpi_checkpoint_resume resume <preset> <root> [K [model]]  load root's latest, K more steps
//   mpirun -np N mpi_checkpoint_resume fault  <preset> <root> [K [model]]  save after K steps, and again after
//                                                                          2K with rank 1 killed (SIGKILL) half-way
// model: gpt (default), llama (presets dp2tp2pp2, tp2, single) or moe (presets ep2, single).
// Presets: dp2tp2pp2 (8 ranks: dp 2 x tp 2 x pp 2, 1F1B, ZeRO-1), tp2 (dp x tp 2), pp2 (dp x pp 2,
// 1F1B), zero3 (dp, ZeRO-3), dp2tp2-zero3 (dp x tp 2 + sequence parallelism, ZeRO-3: the tp
// shard holds its block stack in windows; saved and loaded through the master shards), single (dp, ZeRO-0; on one rank: one process), ep2 (moe only: dp x
// ep 2, expert_parallel: each expert rank holds 2 of the 4 experts and brings its own tokens),
// ep2-zero3 (the same with ZeRO-3), ep2-tp2 (ep 2 x tp 2, the MoE layer replicated over tp),
// ep2-pp2 (ep 2 x pp 2, 1F1B).
// moe: a moe_gpt (4 experts, top-2, shared expert, load-balancing loss). Saved under ep2, the
// files must be the whole model's as one process writes them: after the save, rank 0 saves the
// reference with the single-process save_checkpoint and compares (same headers and config.json
// bytes, every tensor within the tolerance); after a load under single, the parameters equal the
// reference's.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/distributed_checkpoint.hpp>
#include <weft/io/safetensors_reader.hpp>
#include <weft/model/aux_loss.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/exec/distributed_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

using namespace weft;

using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<4>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<4>>>;
using moe_layer_t = moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>, aux_loss_weight<1, 10>>;
using moe_t = moe_gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>, moe_layer_t>;
constexpr std::size_t B = 2, S = 8;  // per rank: micro-batches of 2 sequences of 8 tokens
constexpr std::size_t G = 8;         // micro-batches per step over the whole world
constexpr double tol = 1e-10;        // f64, as entry_equivalence

std::int32_t token_at(std::size_t step, std::size_t seq, std::size_t pos) {
  std::uint64_t h = step * 1000003u + seq * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % 32);  // both models' vocabulary
}

template <class Model, class Strategy>
using plan_of = plan<Model, batch<micro<B>, seq<S>>, precision<double>, Strategy>;
template <class Model>
using reference_plan = plan<Model, batch<micro<B>, seq<S>>, precision<double>>;

using dp2tp2pp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                             pipeline<"pp", one_f_one_b, microbatches<4>>, data_parallel<"dp", zero<1>>>;
using tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
// dp x tp 2 with sequence parallelism under ZeRO-3: the tp shard's block stack layer by layer
using dp_tp2_zero3_s =
    strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>, data_parallel<"dp", zero<3>>>;
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>>;
using ep2_tp2_s = strategy<mesh<axis<"dp">, axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp">>;
using ep2_pp2_s = strategy<mesh<axis<"dp">, axis<"ep", 2>, axis<"pp", 2>>, expert_parallel<"ep">,
                           pipeline<"pp", one_f_one_b, microbatches<4>>>;
template <std::size_t Zero>
using ep2_s = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp", zero<Zero>>>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;

train_options base_options(std::size_t total_steps) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, total_steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the restored moments and norm must be right
  return o;
}

// |a - b| <= tol · (|b| + max |b| of the tensor): relative to the tensor's scale, so that an
// element summed to nearly 0 in another order does not fail.
bool close_tensors(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size()) return false;
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (std::abs(b[i]) + scale))) return false;
  return true;
}
std::string file_bytes(const std::filesystem::path& p, std::size_t n = static_cast<std::size_t>(-1)) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.substr(0, std::min(n, s.size()));
}
// The distributed save `dir` against the single-process save `ref_dir` of the same model and step:
// the same headers (names, shapes, dtypes, offsets, metadata) and config.json, every tensor close.
void compare_with_single_process(const std::filesystem::path& dir, const std::filesystem::path& ref_dir) {
  WEFT_CHECK(file_bytes(dir / "config.json") == file_bytes(ref_dir / "config.json"));
  for (const char* name : {"model.safetensors", "optimizer.safetensors"}) {
    const auto a = safetensors_file::open(dir / name), b = safetensors_file::open(ref_dir / name);
    const bool same_head = a.header_length() == b.header_length() &&
                           file_bytes(dir / name, 8 + a.header_length()) == file_bytes(ref_dir / name, 8 + b.header_length());
    WEFT_CHECK(same_head);
    WEFT_CHECK(a.names() == b.names());
    if (!same_head || a.names() != b.names()) continue;
    for (const auto& n : b.names()) {
      std::vector<double> x(b.info(n).element_count), y(x.size());
      a.read_as(n, std::span<double>(x));
      b.read_as(n, std::span<double>(y));
      const bool ok = close_tensors(x, y);
      WEFT_CHECK(ok);
      if (!ok) std::fprintf(stderr, "%s: tensor %s differs from the single-process save\n", name, n.c_str());
    }
  }
}

template <class Model, class Strategy>
void run(mpi_communicator& world, const std::string& phase, const std::string& preset, const std::filesystem::path& root,
         std::size_t K) {
  using P = plan_of<Model, Strategy>;
  constexpr std::size_t pipeline_micro = P::pp > 1 ? P::strategy_type::microbatches : 1;
  train_options o = base_options(2 * K);
  const std::size_t dp = static_cast<std::size_t>(world.size()) / (P::tp * P::pp);
  const std::size_t k = G / dp;  // micro-batches of this replica per step
  collective_check(world, dp > 0 && G % dp == 0 && (P::pp == 1 || k == pipeline_micro),
                   "checkpoint_resume: preset " + preset + " cannot split " + std::to_string(G) +
                       " micro-batches over " + std::to_string(world.size()) + " ranks",
                   2);
  if constexpr (P::pp == 1) o.grad_accum = k;
  o.seed = phase == "resume" ? 999 : 7;  // a resumed run must take everything from the checkpoint
  auto step = make_training_step<P>(world, o);
  // moe: the load-balancing loss of each of the step's G micro-batches weighs 1/G (docs/moe.md), in
  // the reference and under dp; the expert-parallel step sets its own (the same) and restores this.
  aux_losses().gradient_scale = 1.0 / static_cast<double>(G);

  train_options ro = base_options(2 * K);
  ro.grad_accum = G;
  ro.seed = 7;
  training_step<reference_plan<Model>> ref(ro);

  const std::size_t row0 = step.data_rank() * k * B;  // this replica's first sequence of a step
  auto ref_step = [&](std::size_t s) {                 // the uninterrupted run: all G micro-batches
    std::size_t j = 0;
    return ref.step([&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, j * B + b, t);
          tgt[b * S + t] = token_at(s, j * B + b, t + 1);
        }
      ++j;
    });
  };
  auto train = [&](std::size_t s) {  // step s, compared with the reference's
    std::size_t i = 0;
    const auto md = step.step([&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, row0 + i * B + b, t);
          tgt[b * S + t] = token_at(s, row0 + i * B + b, t + 1);
        }
      ++i;
    });
    const auto mr = ref_step(s);
    const bool loss_ok = std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss);
    const bool norm_ok = std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm;
    WEFT_CHECK(loss_ok);
    WEFT_CHECK(norm_ok);
    if (!loss_ok || !norm_ok)
      std::fprintf(stderr, "rank %d step %zu: loss %.17g vs %.17g, grad norm %.17g vs %.17g\n", world.rank(), s, md.loss,
                   mr.loss, md.grad_norm, mr.grad_norm);
  };
  const checkpoint_state saved{{1337, 3 * K}};  // a sampler position to carry through

  if (phase == "save" || phase == "fault") {
    if (world.rank() == 0) std::filesystem::remove_all(root);
    world.barrier();
    for (std::size_t s = 0; s < K; ++s) train(s);
    const auto dir = save_checkpoint(step, world, root, saved, checkpoint_options{.keep_last = 2});
    (void)dir;
    if constexpr (P::ep > 1) {  // the whole model's files, as one process writes them
      if (world.rank() == 0) {
        const auto ref_dir = root.parent_path() / (root.filename().string() + "-single-process");
        std::filesystem::remove_all(ref_dir);
        save_checkpoint(ref, ref_dir, saved);
        compare_with_single_process(dir, ref_dir);
      }
    }
    if (phase == "fault") {
      for (std::size_t s = K; s < 2 * K; ++s) train(s);
      // Rank 1 dies after writing 3 runs of its slices of this save; the job ends (mpirun).
      ::setenv("WEFT_TEST_CHECKPOINT_KILL", ("1:3:" + std::to_string(2 * K)).c_str(), 1);
      save_checkpoint(step, world, root, saved, checkpoint_options{.keep_last = 2});
      WEFT_CHECK(!"the save with a killed rank returned");
    }
  } else {
    for (std::size_t s = 0; s < K; ++s) ref_step(s);  // the reference's first K steps, which the checkpoint holds
    const checkpoint_state cs = load_checkpoint(step, world, root);
    WEFT_CHECK(cs.sampler == saved.sampler);
    WEFT_CHECK(step.inner().step_count() == K);
    if constexpr (P::ep == 1 && P::tp == 1 && P::pp == 1 && P::strategy_type::zero_stage < 3) {
      // Every replica holds the whole model, in the single process's layout.
      const auto got = step.inner().local().params();
      const auto want = ref.params();
      const bool ok = close_tensors(std::span<const double>(got.data(), got.size()),
                                    std::span<const double>(want.data(), want.size()));
      WEFT_CHECK(ok);
    }
    for (std::size_t s = K; s < 2 * K; ++s) train(s);
  }
  if (world.rank() == 0)
    std::printf("checkpoint_resume %s %s %s: %d ranks = data shards %zu (dp x ep %zu) x tp %zu x pp %zu\n", phase.c_str(),
                preset.c_str(), Model::family, world.size(), dp, P::ep, P::tp, P::pp);
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string phase = argc > 1 ? argv[1] : "", preset = argc > 2 ? argv[2] : "";
  const long K = argc > 4 ? test::number_arg(argv[4]) : 3;
  const std::string model = argc > 5 ? argv[5] : "gpt";
  test::require_args(world,
                     argc >= 4 && argc <= 6 && test::one_of(phase, {"save", "resume", "fault"}) &&
                         test::one_of(preset, {"dp2tp2pp2", "tp2", "pp2", "zero3", "dp2tp2-zero3", "single", "ep2", "ep2-zero3", "ep2-tp2", "ep2-pp2"}) && K > 0 &&
                         ((model == "gpt" && !preset.starts_with("ep2")) ||
                          (model == "llama" && test::one_of(preset, {"dp2tp2pp2", "tp2", "single"})) ||
                          (model == "moe" && test::one_of(preset, {"ep2", "ep2-zero3", "ep2-tp2", "ep2-pp2", "single"}))),
                     "checkpoint_resume: usage: <save|resume|fault> <dp2tp2pp2|tp2|pp2|zero3|dp2tp2-zero3|single|ep2|ep2-zero3|ep2-tp2|ep2-pp2> "
                     "<root> [K > 0] [gpt | llama (dp2tp2pp2, tp2, single) | moe (ep2, ep2-zero3, ep2-tp2, ep2-pp2, single)]",
                     argc, argv);
  const std::filesystem::path root = argv[3];
  const auto k = static_cast<std::size_t>(K);
  try {
    if (model == "moe") {  // mixture of experts: expert-parallel save, loads under ep2 and ep 1
      if (preset == "ep2") run<moe_t, ep2_s<0>>(world, phase, preset, root, k);
      else if (preset == "ep2-tp2") run<moe_t, ep2_tp2_s>(world, phase, preset, root, k);
      else if (preset == "ep2-pp2") run<moe_t, ep2_pp2_s>(world, phase, preset, root, k);
      else if (preset == "ep2-zero3") run<moe_t, ep2_s<3>>(world, phase, preset, root, k);
      else run<moe_t, dp_s<0>>(world, phase, preset, root, k);
    } else if (model == "llama") {  // untied head, grouped-query attention (packed q/k/v segments), weft's names
      if (preset == "dp2tp2pp2") run<llama_t, dp2tp2pp2_s>(world, phase, preset, root, k);
      else if (preset == "tp2") run<llama_t, tp2_s>(world, phase, preset, root, k);
      else run<llama_t, dp_s<0>>(world, phase, preset, root, k);
    } else if (preset == "dp2tp2pp2") run<gpt_t, dp2tp2pp2_s>(world, phase, preset, root, k);
    else if (preset == "tp2") run<gpt_t, tp2_s>(world, phase, preset, root, k);
    else if (preset == "pp2") run<gpt_t, pp2_s>(world, phase, preset, root, k);
    else if (preset == "zero3") run<gpt_t, dp_s<3>>(world, phase, preset, root, k);
    else if (preset == "dp2tp2-zero3") run<gpt_t, dp_tp2_zero3_s>(world, phase, preset, root, k);
    else run<gpt_t, dp_s<0>>(world, phase, preset, root, k);
  } catch (const checkpoint_error& e) {  // the same line on every rank; rank 0 prints it
    WEFT_CHECK(!"checkpoint_error");
    if (world.rank() == 0) std::fprintf(stderr, "%s\n", e.what());
  }
  return test::finish(world, ("checkpoint_resume " + phase + " " + preset).c_str());
}
