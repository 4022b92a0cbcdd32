// Data parallelism and ZeRO 0-3 reproduce the single-process run: under mpirun, every rank
// runs the distributed step on its rows, and also (cheaply, the models are tiny) the
// single-process reference over the whole global batch; after several steps the losses and
// the (gathered) parameters must agree. f64 tightly, f32 looser.
//   mpirun -np 2 mpi_dp_equivalence <gpt|llama|moe> <zero 0-3> <f64|f32> [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/data_parallel_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace weft;

using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<3>>>;  // 3 blocks: ZeRO-3 cycles its two windows
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>>>;
// A mixture of experts (SwiGLU experts, a shared expert, the load-balancing loss): its blocks
// carry routing in their kept activations and come through the same windows.
using moe_layer_t = moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>, aux_loss_weight<1, 10>>;
using moe_t = moe_gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<3>>, moe_layer_t>;
constexpr std::size_t B = 2, S = 8, K = 2;  // per rank: micro-batches of 2 sequences, 2 per step

// Token of (step, global micro-batch row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

template <class Model, class T, std::size_t Zero>
void run(mpi_communicator& world, std::size_t steps, double tol) {
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;
  const std::size_t dp = static_cast<std::size_t>(world.size()), rank = static_cast<std::size_t>(world.rank());
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the sharded norm must be right
  o.grad_accum = K;
  data_parallel_step<P, mpi_communicator, Zero> dist(world, o, /*bucket_bytes=*/512);

  train_options ro = o;
  ro.grad_accum = K * dp;  // the reference sees every rank's micro-batches
  training_step<P> ref(ro);

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0;
    const auto md = dist.step([&](auto tok, auto tgt) {  // this rank's rows of micro-batch i
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, i, rank * B + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, i, rank * B + b, t + 1, Model::vocab_size);
        }
      ++i;
    });
    std::size_t j = 0;
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = rank j / K's micro j % K
      const std::size_t r = j / K, mi = j % K;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, mi, r * B + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1, Model::vocab_size);
        }
      ++j;
    });
    WEFT_CHECK(std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss));
    WEFT_CHECK(std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm);
    if (world.rank() == 0 && std::abs(md.loss - mr.loss) > tol * std::abs(mr.loss))
      std::fprintf(stderr, "step %zu: loss %.17g vs reference %.17g\n", s, md.loss, mr.loss);
  }
  // Forward only after the last update: the same loss (ZeRO-3 must not run on stale windows).
  const auto eval_fill = [&](std::size_t first_row) {
    return [&, first_row](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(steps, 0, first_row + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(steps, 0, first_row + b, t + 1, Model::vocab_size);
        }
    };
  };
  const double ed = dist.evaluate(eval_fill(rank * B), 1);
  double er = 0;
  for (std::size_t r = 0; r < dp; ++r) er += ref.evaluate(eval_fill(r * B), 1) / static_cast<double>(dp);
  WEFT_CHECK(std::abs(ed - er) <= tol * std::abs(er));
  // f64: relative difference (floor 1e-3); f32: absolute, since AdamW turns the rounding noise of a
  // near-zero gradient into an update of either sign for tiny parameters.
  double worst = 0;
  const auto a = dist.parameters();
  const auto b = ref.params();
  WEFT_CHECK(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    worst = std::max(worst, sizeof(T) == 8 ? d / std::max(1e-3, std::abs(static_cast<double>(b[i]))) : d);
  }
  WEFT_CHECK(worst <= tol * 10);
  WEFT_CHECK(dist.step_count() == steps);
  if constexpr (Zero <= 1) WEFT_CHECK(dist.buckets_overlapped() > 0);  // reduction overlapped backward
  if constexpr (Zero >= 2) {
    // Gradients layer by layer: the arena holds the gradients of the layers outside the block
    // stack and two block windows; each block's window was reduce-scattered into the shards
    // once per micro-batch (K per step), with the shard's earlier micro-batches added.
    using local_plan = typename decltype(dist)::local_step::plan_type;
    static_assert(decltype(dist)::grads_by_layer && local_plan::windowed_grads);
    WEFT_CHECK(dist.local().grads().size() == local_plan::param_count - Model::depth * local_plan::window_block);
    WEFT_CHECK(dist.local().grad_windows().size() == 2 * local_plan::window_block);
    WEFT_CHECK(dist.window_reductions() == steps * K * Model::depth);
    if (world.rank() == 0) std::printf("zero<%zu>: %zu block gradient windows reduce-scattered\n", Zero, dist.window_reductions());
  }
  if constexpr (Zero == 3) {
    // Layer by layer: the arena holds neither the block stack nor a gathered copy of it, every
    // block was gathered into a window (forward, then again in backward), and the next block
    // was gathered ahead while one computed.
    using local_plan = typename decltype(dist)::local_step::plan_type;
    static_assert(decltype(dist)::layer_by_layer && local_plan::windowed_params);
    WEFT_CHECK(dist.local().params().size() == local_plan::param_count - Model::depth * local_plan::window_block);
    WEFT_CHECK(dist.window_gathers() >= steps * Model::depth);
    WEFT_CHECK(dist.window_prefetch_hits() > 0);
    if (world.rank() == 0)
      std::printf("zero<3>: %zu block gathers, %zu found gathered ahead\n", dist.window_gathers(), dist.window_prefetch_hits());
  }
  if (world.rank() == 0)
    std::printf("zero<%zu> %s: %zu steps, %zu buckets, worst parameter difference %.3g (tolerance %.1g)\n", Zero,
                sizeof(T) == 8 ? "f64" : "f32", steps, dist.buckets(), worst, tol * 10);
}

template <class Model, class T>
void dispatch(mpi_communicator& world, int zero, std::size_t steps, double tol) {
  switch (zero) {
    case 0: run<Model, T, 0>(world, steps, tol); break;
    case 1: run<Model, T, 1>(world, steps, tol); break;
    case 2: run<Model, T, 2>(world, steps, tol); break;
    default: run<Model, T, 3>(world, steps, tol); break;
  }
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string model = argc > 1 ? argv[1] : "", dtype = argc > 3 ? argv[3] : "";
  const long zero_arg = argc > 2 ? test::number_arg(argv[2]) : -1, steps_arg = argc > 4 ? test::number_arg(argv[4]) : 4;
  test::require_args(world,
                     argc >= 4 && argc <= 5 && test::one_of(model, {"gpt", "llama", "moe"}) && zero_arg >= 0 && zero_arg <= 3 &&
                         test::one_of(dtype, {"f64", "f32"}) && steps_arg > 0,
                     "dp_equivalence: usage: <gpt|llama|moe> <zero 0-3> <f64|f32> [steps > 0]", argc, argv);
  const int zero = static_cast<int>(zero_arg);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  const bool f64 = dtype == "f64";
  const double tol = f64 ? 1e-10 : 1e-5;
  if (model == "gpt") f64 ? dispatch<gpt_t, double>(world, zero, steps, tol) : dispatch<gpt_t, float>(world, zero, steps, tol);
  else if (model == "llama") f64 ? dispatch<llama_t, double>(world, zero, steps, tol) : dispatch<llama_t, float>(world, zero, steps, tol);
  else if (f64) dispatch<moe_t, double>(world, zero, steps, tol);
  else test::require_args(world, false, "dp_equivalence: the moe model runs in f64 only", argc, argv);
  return test::finish(world, ("dp_equivalence " + model + " zero " + std::to_string(zero) + " " + dtype).c_str());
}
