// QK-norm under tensor parallelism reproduces the single process, under mpirun. The model is
// LLaMA's body with qk_norm_attention (OLMo 2 / Qwen 3: RMSNorm of every q and k head before
// rope), planned with a tensor_parallel<"tp"> strategy and trained through make_training_step;
// tp_shard maps qk_norm to tensor_parallel_qk_norm (the rank's heads, the gains whole, their
// gradients summed over the tp group; with sequence parallelism by tensor_parallel_step). The
// reference, on every rank, is training_step over the whole global batch. Two micro-batches
// per step (gradient accumulation), so that a gain gradient summed twice would show; clipping
// on, so that the norm counts the gains once. Per step the loss and the gradient norm must agree.
//   mpirun -np 2 mpi_qk_norm_tp_equivalence tp2 | tp2-sp     (tp 2)
//   mpirun -np 4 mpi_qk_norm_tp_equivalence dp2-tp2          (dp 2 x tp 2, ZeRO-1)
//   [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

using namespace weft;

// ---- a LLaMA with QK-norm (heads 4, kv_heads 2: tp 2 gives each rank 2 q and 1 k head) ----
constexpr std::size_t V = 32, Ctx = 8, C = 16, H = 4, KVH = 2, Depth = 2, F = 24;
using qk_block = block<rmsnorm<C>, qk_norm_attention<C, H, KVH, rope, false>, rmsnorm<C>, swiglu_mlp<C, F>>;
struct qk_llama : sequential<named<"embed", token_embedding<V, C>>, named<"layers", repeat<Depth, qk_block>>,
                             named<"norm", rmsnorm<C>>, named<"head", lm_head<V, C, untied>>> {
  static constexpr std::size_t vocab_size = V, context_length = Ctx, depth = Depth, width = C, heads = H,
                               kv_heads = KVH, ffn = F;
  static constexpr std::size_t lookup_param_count = V * C;
};
static_assert(language_model<qk_llama>);
// the tp form: the rank's heads, the gains whole
using shard = tp_model<qk_llama, 2>;
static_assert(shard::param_count < qk_llama::param_count);
static_assert(std::is_same_v<tp_shard_t<qk_norm<H, KVH, C / H>, 2, false, true>, tensor_parallel_qk_norm<2, 1, C / H, 2, false>>);

constexpr std::size_t B = 2, S = 8, K = 2;  // micro-batches of 2 x 8 tokens, 2 per step

std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

using tp2 = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
using tp2_sp = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>>;
using dp2_tp2 = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<1>>>;

template <class Strategy>
int run(mpi_communicator& world, const std::string& name, std::size_t steps) {
  using P = plan<qk_llama, batch<micro<B>, seq<S>>, precision<double>, Strategy>;
  using R = plan<qk_llama, batch<micro<B>, seq<S>>, precision<double>>;
  constexpr double tol = 1e-10;
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;  // small enough to clip
  o.grad_accum = K;
  auto step = make_training_step<P>(world, o);
  const std::size_t dp = step.dp_size(), row0 = step.data_rank() * B;
  train_options ro = o;
  ro.grad_accum = K * dp;
  training_step<R> ref(ro);

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0;
    const auto md = step.step([&](auto tok, auto tgt) {  // this replica's rows of micro-batch i
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) tok[b * S + t] = token_at(s, i, row0 + b, t), tgt[b * S + t] = token_at(s, i, row0 + b, t + 1);
      ++i;
    });
    std::size_t j = 0;
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = replica j / K's micro j % K
      const std::size_t r = j / K, mi = j % K;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) tok[b * S + t] = token_at(s, mi, r * B + b, t), tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1);
      ++j;
    });
    const double e_loss = std::abs(md.loss - mr.loss) / std::abs(mr.loss);
    const double e_norm = std::abs(md.grad_norm - mr.grad_norm) / mr.grad_norm;
    if (world.rank() == 0)
      std::printf("%s step %zu: loss %.12f (reference %.12f, rel %.2g), grad norm %.10f (reference %.10f, rel %.2g)\n",
                  name.c_str(), s, md.loss, mr.loss, e_loss, md.grad_norm, mr.grad_norm, e_norm);
    WEFT_CHECK(e_loss <= tol);
    WEFT_CHECK(e_norm <= tol);
  }
  return test::finish(world, "qk_norm_tp_equivalence");
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string preset = argc > 1 ? argv[1] : "";
  const std::size_t steps = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 4;
  if (argc <= 3) {
    if (preset == "tp2" && world.size() == 2) return run<tp2>(world, preset, steps);
    if (preset == "tp2-sp" && world.size() == 2) return run<tp2_sp>(world, preset, steps);
    if (preset == "dp2-tp2" && world.size() == 4) return run<dp2_tp2>(world, preset, steps);
  }
  if (world.rank() == 0)
    std::fprintf(stderr, "usage: mpirun -np 2 mpi_qk_norm_tp_equivalence <tp2|tp2-sp> [steps] | mpirun -np 4 ... dp2-tp2 [steps]\n");
  return 2;
}
