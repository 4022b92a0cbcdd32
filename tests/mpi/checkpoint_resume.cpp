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
// model: gpt (default) or llama (presets dp2tp2pp2, tp2, single).
// Presets: dp2tp2pp2 (8 ranks: dp 2 x tp 2 x pp 2, 1F1B, ZeRO-1), tp2 (dp x tp 2), pp2 (dp x pp 2,
// 1F1B), zero3 (dp, ZeRO-3), single (dp, ZeRO-0; on one rank: one process).
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/train/distributed_checkpoint.hpp>
#include <weft/train/distributed_step.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

using namespace weft;

using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<4>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<4>>>;
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
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;

train_options base_options(std::size_t total_steps) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, total_steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the restored moments and norm must be right
  return o;
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
    save_checkpoint(step, world, root, saved, checkpoint_options{.keep_last = 2});
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
    for (std::size_t s = K; s < 2 * K; ++s) train(s);
  }
  if (world.rank() == 0)
    std::printf("checkpoint_resume %s %s %s: %d ranks = dp %zu x tp %zu x pp %zu\n", phase.c_str(), preset.c_str(),
                Model::family, world.size(), dp, P::tp, P::pp);
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string phase = argc > 1 ? argv[1] : "", preset = argc > 2 ? argv[2] : "";
  const long K = argc > 4 ? test::number_arg(argv[4]) : 3;
  const std::string model = argc > 5 ? argv[5] : "gpt";
  test::require_args(world,
                     argc >= 4 && argc <= 6 && test::one_of(phase, {"save", "resume", "fault"}) &&
                         test::one_of(preset, {"dp2tp2pp2", "tp2", "pp2", "zero3", "single"}) && K > 0 &&
                         (model == "gpt" || (model == "llama" && test::one_of(preset, {"dp2tp2pp2", "tp2", "single"}))),
                     "checkpoint_resume: usage: <save|resume|fault> <dp2tp2pp2|tp2|pp2|zero3|single> <root> [K > 0] "
                     "[gpt | llama (dp2tp2pp2, tp2, single)]",
                     argc, argv);
  const std::filesystem::path root = argv[3];
  const auto k = static_cast<std::size_t>(K);
  try {
    if (model == "llama") {  // untied head, grouped-query attention (packed q/k/v segments), weft's names
      if (preset == "dp2tp2pp2") run<llama_t, dp2tp2pp2_s>(world, phase, preset, root, k);
      else if (preset == "tp2") run<llama_t, tp2_s>(world, phase, preset, root, k);
      else run<llama_t, dp_s<0>>(world, phase, preset, root, k);
    } else if (preset == "dp2tp2pp2") run<gpt_t, dp2tp2pp2_s>(world, phase, preset, root, k);
    else if (preset == "tp2") run<gpt_t, tp2_s>(world, phase, preset, root, k);
    else if (preset == "pp2") run<gpt_t, pp2_s>(world, phase, preset, root, k);
    else if (preset == "zero3") run<gpt_t, dp_s<3>>(world, phase, preset, root, k);
    else run<gpt_t, dp_s<0>>(world, phase, preset, root, k);
  } catch (const checkpoint_error& e) {  // the same line on every rank; rank 0 prints it
    WEFT_CHECK(!"checkpoint_error");
    if (world.rank() == 0) std::fprintf(stderr, "%s\n", e.what());
  }
  return test::finish(world, ("checkpoint_resume " + phase + " " + preset).c_str());
}
