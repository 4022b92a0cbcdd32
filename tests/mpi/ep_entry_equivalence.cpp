// expert_parallel<"ep"> as a strategy part, through the entry point: make_training_step<Plan>(world)
// of a plan whose strategy has an expert-parallel axis reproduces the single process, under mpirun.
// The plan maps moe_gpt's moe_mlp layers to ep_moe_mlp<…, ep> itself (plan::rank_model) and the
// entry point returns expert_parallel_step; ranks follow strategy.hpp's order (rank = dp·ep + ep
// index; coords() says so). The reference, on every rank, is the whole moe_gpt trained by one
// process with gradient accumulation over every rank's micro-batches (rank w reads data shard
// data_rank() = w of data_shards() = world size), from the same initialisation. Per step the loss
// and the gradient norm agree within 1e-10 (relative, f64); then every rank's parameters equal
// its shard of the reference's, and a forward-only evaluation equals the reference's.
//   mpirun -np 2 mpi_ep_entry_equivalence ep2        strategy<mesh<axis<"ep", 2>>, expert_parallel<"ep">>
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-dp     strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>
//   [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model/mlp.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/train/distributed_step.hpp>
#include <weft/train/training_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <string>
#include <type_traits>

using namespace weft;

constexpr std::size_t B = 2, S = 8, V = 32;
using cfg = gpt_config<vocab<V>, context<S>, width<16>, heads<4>, depth<2>>;
using moe_t = moe_mlp<16, 4, 2, 12, swiglu_experts, shared_expert<swiglu_mlp<16, 8>>, aux_loss_weight<1, 10>>;
using model_t = moe_gpt<cfg, moe_t>;
using full_plan = plan<model_t, batch<micro<B>, seq<S>>, precision<double>>;
constexpr std::size_t expert_params = moe_t::experts * (moe_t::expert_in * 16 + 16 * moe_t::ffn);  // one layer's

// example-begin ep-strategy
// Expert groups of 2 ranks (each holds 2 of the 4 experts of every block) x dp replicas, dp from the world.
using ep2_dp = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using ep_dp_plan = plan<moe_gpt<cfg, moe_t>, batch<micro<B>, seq<S>>, ep2_dp, precision<double>>;
// The plan runs each moe_mlp as its expert-parallel form and counts one rank's parameters.
static_assert(std::is_same_v<ep_dp_plan::rank_model, moe_gpt<cfg, ep_moe_mlp<moe_t, 2>>>);
static_assert(ep_dp_plan::param_count == full_plan::param_count - cfg::depth * expert_params / 2);
// example-end ep-strategy

using ep2 = strategy<mesh<axis<"ep", 2>>, expert_parallel<"ep">>;  // no data-parallel axis: 2 ranks
template <class Strategy>
using ep_plan = plan<model_t, batch<micro<B>, seq<S>>, Strategy, precision<double>>;
static_assert(std::is_same_v<ep_plan<ep2_dp>, ep_dp_plan>);
static_assert(std::is_same_v<ep_plan<ep2>::rank_model, moe_gpt<cfg, ep_moe_mlp<moe_t, 2>>>);
static_assert(ep_plan<ep2>::param_count == ep_dp_plan::param_count);
static_assert(ep_plan<ep2>::global_param_count == full_plan::param_count);
// The entry point's step for an ep strategy.
static_assert(std::is_same_v<training_step_for_t<ep_plan<ep2_dp>, mpi_communicator>,
                             expert_parallel_step<ep_plan<ep2_dp>, mpi_communicator>>);

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

template <class Strategy>
int run(mpi_communicator& world, const char* name, std::size_t steps) {
  using P = ep_plan<Strategy>;
  const int np = world.size();
  constexpr double tol = 1e-10;

  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_accum = static_cast<std::size_t>(np);
  training_step<full_plan> ref(o);  // one process, every rank's micro-batch accumulated
  o.grad_accum = 1;
  // example-begin ep-entry
  auto step = make_training_step<P>(world, o);  // an expert_parallel_step for an expert_parallel<> strategy
  // example-end ep-entry
  static_assert(std::is_same_v<decltype(step), expert_parallel_step<P, mpi_communicator>>);

  // the documented rank order: rank = dp index · ep + ep index
  const std::size_t w = static_cast<std::size_t>(world.rank());
  const rank_coords c = step.coords();
  WEFT_CHECK(c.ep == w % 2 && c.dp == w / 2 && c.tp == 0 && c.pp == 0);
  WEFT_CHECK(Strategy::rank_of(c, step.dp_size()) == w);
  WEFT_CHECK(Strategy::coords(w, step.dp_size()) == c);
  WEFT_CHECK(step.data_shards() == static_cast<std::size_t>(np) && step.data_rank() == w);
  const std::size_t r = step.expert_rank();

  std::map<std::string, param_info> full_info;
  for (const auto& p : ref.parameter_infos()) full_info[p.name] = p;
  auto shard_error = [&] {
    double d = 0, ref_max = 0;
    for (const auto& p : step.local().parameter_infos()) {
      const param_info& q = full_info.at(p.name);
      const std::size_t from = q.offset + (is_expert_parameter(p.name) ? r * p.size : 0);
      for (std::size_t i = 0; i < p.size; ++i) {
        const double e = ref.params()[from + i];
        d = std::max(d, std::abs(e - step.local().params()[p.offset + i])), ref_max = std::max(ref_max, std::abs(e));
      }
    }
    double worst[1] = {d / ref_max};
    world.all_reduce(std::span<double>(worst), reduce_op::max);
    return worst[0];
  };
  WEFT_CHECK(shard_error() == 0.0);  // each rank starts from its slice of the whole model's experts

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t micro = 0;
    aux_losses().gradient_scale = 1.0 / static_cast<double>(np);
    const step_metrics m = ref.step([&](auto tok, auto tgt) { fill_micro(s, micro++, tok, tgt); });
    const step_metrics e = step([&](auto tok, auto tgt) { fill_micro(s, step.data_rank(), tok, tgt); });
    const double e_loss = std::abs(e.loss - m.loss) / std::abs(m.loss);
    const double e_norm = std::abs(e.grad_norm - m.grad_norm) / std::abs(m.grad_norm);
    if (w == 0)
      std::printf("%s, %d ranks, step %zu: loss %.12f (reference %.12f, rel %.2g), grad norm %.10f (reference %.10f, rel %.2g)\n",
                  name, np, s, e.loss, m.loss, e_loss, e.grad_norm, m.grad_norm, e_norm);
    WEFT_CHECK(e_loss <= tol);
    WEFT_CHECK(e_norm <= tol);
  }
  const double worst = shard_error();
  if (w == 0) std::printf("parameters after %zu steps: worst relative difference %.3g\n", steps, worst);
  WEFT_CHECK(worst <= tol);

  // forward only, one micro-batch per rank: the mean over the world's equals the reference's
  std::size_t micro = 0;
  const double ref_eval = ref.evaluate([&](auto tok, auto tgt) { fill_micro(steps, micro++, tok, tgt); }, static_cast<std::size_t>(np));
  const double ep_eval = step.evaluate([&](auto tok, auto tgt) { fill_micro(steps, step.data_rank(), tok, tgt); }, 1);
  if (w == 0) std::printf("evaluation: %.12f (reference %.12f)\n", ep_eval, ref_eval);
  WEFT_CHECK(std::abs(ep_eval - ref_eval) <= tol * std::abs(ref_eval));
  return test::finish(world, "ep_entry_equivalence");
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string preset = argc > 1 ? argv[1] : "";
  const std::size_t steps = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 4;
  // (a world of the wrong size for ep2-dp is left to the step, which says so on every rank)
  if (argc > 3 || (preset != "ep2" && preset != "ep2-dp") || (preset == "ep2" && world.size() != 2)) {
    if (world.rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np 2 mpi_ep_entry_equivalence ep2 [steps] | mpirun -np 2k mpi_ep_entry_equivalence ep2-dp [steps]\n");
    return 2;
  }
  if (preset == "ep2") return run<ep2>(world, "ep2", steps);
  return run<ep2_dp>(world, "ep2 x dp", steps);
}
