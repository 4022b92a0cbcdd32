// A whole mixture-of-experts GPT trained with expert parallelism reproduces the single process,
// under mpirun. The world is an ep x dp grid (ep = the first argument). Each rank trains
// moe_gpt<cfg, ep_moe_mlp<moe, ep>> (its plan holds E/ep experts per block) with
// expert_parallel_step (train/expert_parallel_step.hpp: the single-rank training_step on its own
// micro-batch, its expert group bound; experts' gradients summed over dp, all others over the
// world; global norm, clipping, AdamW). The reference, on every rank, is the whole moe_gpt
// trained with gradient accumulation over the world's micro-batches, from the same
// initialisation (each rank's initial parameters must be exactly its shard of the reference's).
// Per step the loss and the gradient norm must agree within 1e-10 (relative, f64), and after the
// last step every rank's parameters must equal its shard of the reference's.
//   mpirun -np N mpi_ep_model_equivalence <ep> [steps [micro-batches per rank]]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/expert_group_adapter.hpp>
#include <weft/comm/mpi.hpp>
#include <weft/model/ep_moe_mlp.hpp>
#include <weft/model/mlp.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/exec/expert_parallel_step.hpp>
#include <weft/exec/training_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <string>

using namespace weft;

constexpr std::size_t B = 2, S = 8, V = 32;
using cfg = gpt_config<vocab<V>, context<S>, width<16>, heads<4>, depth<2>>;
using moe_t = moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>, aux_loss_weight<1, 10>>;
using full_model = moe_gpt<cfg, moe_t>;
using full_plan = plan<full_model, batch<micro<B>, seq<S>>, precision<double>>;
template <std::size_t EP>
using ep_plan = plan<moe_gpt<cfg, ep_moe_mlp<moe_t, EP>>, batch<micro<B>, seq<S>>, precision<double>>;

// The plan's accounting: a rank holds E/ep experts of each block.
constexpr std::size_t expert_params = moe_t::experts * (moe_t::expert_in * 16 + 16 * moe_t::ffn);
static_assert(ep_plan<2>::param_count == full_plan::param_count - cfg::depth * expert_params / 2);
static_assert(ep_plan<4>::param_count == full_plan::param_count - cfg::depth * expert_params * 3 / 4);

namespace {

std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t i) {
  std::uint64_t h = step * 1000003u + micro * 10007u + i;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}
template <class Span>
void fill_micro(std::size_t step, std::size_t micro, Span tokens, Span targets) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = token_at(step, micro, i);
    targets[i] = token_at(step, micro, i + 1);
  }
}

template <std::size_t EP>
int run(mpi_communicator& world, std::size_t steps, std::size_t accum) {
  using P = ep_plan<EP>;
  const int w = world.rank(), np = world.size();
  constexpr double tol = 1e-10;

  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_accum = static_cast<std::size_t>(np) * accum;
  training_step<full_plan> ref(o);  // one process, every rank's micro-batches accumulated
  o.grad_accum = accum;
  expert_parallel_step<P, mpi_communicator> ep(world, EP, o);
  const std::size_t r = ep.expert_rank();

  // this rank's shard of the reference's parameters (experts: its slice)
  std::map<std::string, param_info> full_info;
  for (const auto& p : ref.parameter_infos()) full_info[p.name] = p;
  auto shard_of_reference = [&](std::span<double> dst) {
    for (const auto& p : ep.local().parameter_infos()) {
      const param_info& q = full_info.at(p.name);
      const std::size_t from = q.offset + (is_expert_parameter(p) ? r * p.size : 0);
      std::copy_n(ref.params().begin() + static_cast<std::ptrdiff_t>(from), p.size, dst.begin() + static_cast<std::ptrdiff_t>(p.offset));
    }
  };
  auto shard_error = [&] {
    std::vector<double> expect(P::param_count);
    shard_of_reference(expect);
    double d = 0, ref_max = 0;
    for (std::size_t i = 0; i < expect.size(); ++i)
      d = std::max(d, std::abs(expect[i] - ep.local().params()[i])), ref_max = std::max(ref_max, std::abs(expect[i]));
    double worst[1] = {d / ref_max};
    world.all_reduce(std::span<double>(worst), reduce_op::max);
    return worst[0];
  };
  // initialisation: each rank draws its slice of the whole model's experts
  WEFT_CHECK(shard_error() == 0.0);

  for (std::size_t step = 0; step < steps; ++step) {
    std::size_t micro = 0;
    aux_losses().gradient_scale = 1.0 / static_cast<double>(static_cast<std::size_t>(np) * accum);  // each reference micro-batch's weight
    const step_metrics m = ref.step([&](auto tok, auto tgt) { fill_micro(step, micro++, tok, tgt); });
    std::size_t mine = static_cast<std::size_t>(w) * accum;  // rank w's micro-batches are the reference's w·accum …
    const step_metrics e = ep.step([&](auto tok, auto tgt) { fill_micro(step, mine++, tok, tgt); });
    const double e_loss = std::abs(e.loss - m.loss) / std::abs(m.loss);
    const double e_norm = std::abs(e.grad_norm - m.grad_norm) / std::abs(m.grad_norm);
    if (w == 0)
      std::printf("ep%zu x dp%d, %zu micro-batches per rank, step %zu: loss %.12f (reference %.12f, rel %.2g), grad norm %.10f (reference %.10f, rel %.2g)\n",
                  EP, np / static_cast<int>(EP), accum, step, e.loss, m.loss, e_loss, e.grad_norm, m.grad_norm, e_norm);
    WEFT_CHECK(e_loss <= tol);
    WEFT_CHECK(e_norm <= tol);
  }
  const double worst = shard_error();
  if (w == 0) std::printf("parameters after %zu steps: worst relative difference %.3g\n", steps, worst);
  WEFT_CHECK(worst <= tol);
  return test::finish(world, "ep_model_equivalence");
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const int ep = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::size_t steps = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 4;
  const std::size_t accum = argc > 3 ? static_cast<std::size_t>(std::atoi(argv[3])) : 1;
  if (argc > 4 || accum < 1 || (ep != 1 && ep != 2 && ep != 4) || world.size() % ep != 0) {
    if (world.rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np N mpi_ep_model_equivalence <ep: 1, 2 or 4 dividing N> [steps [micro-batches per rank]]\n");
    return 2;
  }
  if (ep == 1) return run<1>(world, steps, accum);
  if (ep == 2) return run<2>(world, steps, accum);
  return run<4>(world, steps, accum);
}
