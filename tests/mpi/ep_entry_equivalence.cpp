// expert_parallel<"ep"> as a strategy part, through the entry point: make_training_step<Plan>(world)
// of a plan whose strategy has an expert-parallel axis reproduces the single process, under mpirun,
// alone and composed with data parallelism (ZeRO 0-3), tensor parallelism (with and without
// sequence parallelism) and pipelines. The plan maps moe_gpt's moe_mlp layers to ep_moe_mlp<…, ep>
// itself (plan::rank_model) and the entry point returns distributed_step, whose local step is
// expert_parallel_local around training_step, tensor_parallel_step or pipeline_step; ranks follow
// strategy.hpp's order (rank = ((pp·dp + dp index)·ep + ep index)·tp + tp index; coords() says so).
// The reference, on every rank, is the whole moe_gpt trained by one process with gradient
// accumulation over every data shard's micro-batches: with M micro-batches per step per rank
// (a pipeline's microbatches<M>, else grad_accum: 2 for ep2-tp2-sp and ep2-dp-zero1, else 1),
// reference micro-batch j·M + m is micro-batch m of data shard j = dp index · ep + ep index
// (data_rank() of data_shards() = dp · ep), read by every tp
// rank of that (dp, ep) pair and, in a pipeline, by its first and last stage. From the same
// initialisation, per step the loss and the gradient norm agree within 1e-10 (relative, f64);
// then every rank's parameters (its tp shard of its ep slice of its stage; under ZeRO-3 after
// gathering them) equal the reference's elements, and a forward-only evaluation equals the
// reference's.
//   mpirun -np 2 mpi_ep_entry_equivalence ep2           strategy<mesh<axis<"ep", 2>>, expert_parallel<"ep">>
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-dp        + data_parallel<"dp"> (dp from the world)
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-tp2       strategy<mesh<axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp">>
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-tp2-sp    the same with tensor_parallel<"tp", sequence_parallel>, grad_accum 2
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-pp2       strategy<mesh<axis<"ep", 2>, axis<"pp", 2>>, expert_parallel<"ep">, pipeline<"pp", one_f_one_b, microbatches<2>>>
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-dp-zero1  data_parallel<"dp", zero<1>> beside ep2, grad_accum 2
//   mpirun -np 4 mpi_ep_entry_equivalence ep2-dp-zero3  data_parallel<"dp", zero<3>> beside ep2
//   mpirun -np 8 mpi_ep_entry_equivalence ep2-tp2-dp-zero2  all three: dp2 (ZeRO-2) x ep2 x tp2
//   mpirun -np 8 mpi_ep_entry_equivalence ep2-tp2-pp2-dp-zero1  ep2 x tp2 x pp2 (dp 1 at 8 ranks, ZeRO-1)
//   [steps]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model/mlp.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/exec/expert_parallel_local.hpp>  // the local step expert_parallel wraps
#include <weft/exec/training_step.hpp>
#include <weft/parallel/tensor_parallel.hpp>

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
// The entry point's step for an ep strategy: distributed_step, its local step wrapped.
static_assert(std::is_same_v<training_step_for_t<ep_plan<ep2_dp>, mpi_communicator>,
                             distributed_step<ep_plan<ep2_dp>, mpi_communicator>>);
static_assert(std::is_same_v<distributed_step<ep_plan<ep2_dp>, mpi_communicator>::local_step,
                             expert_parallel_local<training_step<ep_dp_plan>, mpi_communicator>>);

// example-begin ep-tp-strategy
// Expert parallelism composed with tensor parallelism and ZeRO: 2 tp ranks share each expert rank's
// model (the mixture of experts replicated over them), 2 expert ranks share the experts, and dp
// replicas from the world shard the optimizer state and gradients (ZeRO-2). 8 ranks for dp 2.
using ep2_tp2_dp = strategy<mesh<axis<"dp">, axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">,
                            tensor_parallel<"tp">, data_parallel<"dp", zero<2>>>;
using ep_tp_plan = plan<moe_gpt<cfg, moe_t>, batch<micro<B>, seq<S>>, ep2_tp2_dp, precision<double>>;
static_assert(ep_tp_plan::ep == 2 && ep_tp_plan::tp == 2 && ep2_tp2_dp::zero_stage == 2);
// make_training_step<ep_tp_plan>(world) returns distributed_step: ZeRO-2 data parallelism over a
// local step that binds the expert group around a tensor_parallel_step.
static_assert(std::is_same_v<distributed_step<ep_tp_plan, mpi_communicator>::local_step,
                             expert_parallel_local<tensor_parallel_step<ep_tp_plan>, mpi_communicator>>);
// example-end ep-tp-strategy
using ep2_tp2 = strategy<mesh<axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp">>;
using ep2_pp2 = strategy<mesh<axis<"ep", 2>, axis<"pp", 2>>, expert_parallel<"ep">, pipeline<"pp", one_f_one_b, microbatches<2>>>;
using ep2_tp2_pp2_dp = strategy<mesh<axis<"dp">, axis<"ep", 2>, axis<"tp", 2>, axis<"pp", 2>>, expert_parallel<"ep">,
                               tensor_parallel<"tp">, pipeline<"pp", one_f_one_b, microbatches<2>>, data_parallel<"dp", zero<1>>>;
using ep2_tp2_sp = strategy<mesh<axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp", sequence_parallel>>;
using ep2_zero1 = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp", zero<1>>>;
using ep2_zero3 = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp", zero<3>>>;

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

// Accum: micro-batches per step of a step without a pipeline (grad_accum), else 1.
template <class Strategy, std::size_t Accum = 1>
int run(mpi_communicator& world, const char* name, std::size_t steps) {
  using P = ep_plan<Strategy>;
  constexpr std::size_t tp = Strategy::tp, ep = ep_degree<Strategy>, pp = Strategy::pp;
  constexpr std::size_t mb = pp > 1 ? Strategy::microbatches : Accum;  // micro-batches per step and rank
  const int np = world.size();
  const std::size_t shards = static_cast<std::size_t>(np) / (tp * pp);  // one per (dp, ep) pair
  constexpr double tol = 1e-10;

  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_accum = shards * mb;
  training_step<full_plan> ref(o);  // one process, every data shard's micro-batches accumulated
  o.grad_accum = pp > 1 ? 1 : Accum;
  // example-begin ep-entry
  auto step = make_training_step<P>(world, o);  // distributed_step; its local step binds the expert group
  // example-end ep-entry
  static_assert(std::is_same_v<decltype(step), distributed_step<P, mpi_communicator>>);

  // the documented rank order: rank = ((pp index · dp + dp index) · ep + ep index) · tp + tp index
  const std::size_t w = static_cast<std::size_t>(world.rank()), dp = step.dp_size();
  const rank_coords c = step.coords();
  WEFT_CHECK(c.tp() == w % tp && expert_index(c) == (w / tp) % ep && c.dp() == (w / (tp * ep)) % dp &&
             c.pp() == w / (tp * ep * dp));
  WEFT_CHECK(Strategy::rank_of(c, step.dp_size()) == w);
  WEFT_CHECK(Strategy::coords(w, step.dp_size()) == c);
  WEFT_CHECK(step.data_shards() == shards && step.data_rank() == c.dp() * ep + expert_index(c));
  auto& local = step.inner().local();  // expert_parallel_local
  WEFT_CHECK(local.expert_rank() == expert_index(c) && local.expert_size() == ep);
  const std::size_t r = expert_index(c);

  std::map<std::string, param_info> full_info, rank_info;
  for (const auto& p : ref.parameter_infos()) full_info[p.name] = p;
  for (const auto& p : P::parameters()) rank_info[p.name] = p;  // one expert rank's whole model
  auto shard_error = [&] {
    step.inner().gather_parameters();  // ZeRO-3: the working parameters from the master shards
    double d = 0, ref_max = 0;
    for (const auto& p : local.parameter_infos()) {
      const param_info& q = full_info.at(p.name);
      const param_info& wr = rank_info.at(p.name);
      // this expert rank's slice of the reference's tensor, then this tp rank's shard of it
      const std::size_t from = q.offset + (is_expert_parameter(p) ? r * wr.size : 0);
      const auto idx = shard_indices(wr, p.tp_role == role::replicated ? 1 : tp, c.tp());
      WEFT_CHECK(idx.size() == p.size);
      for (std::size_t i = 0; i < p.size; ++i) {
        const double e = ref.params()[from + idx[i]];
        d = std::max(d, std::abs(e - local.params()[p.offset + i])), ref_max = std::max(ref_max, std::abs(e));
      }
    }
    double worst[1] = {d / ref_max};
    world.all_reduce(std::span<double>(worst), reduce_op::max);
    return worst[0];
  };
  WEFT_CHECK(shard_error() == 0.0);  // each rank starts from its slice of the whole model's experts

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t micro = 0;
    aux_losses().gradient_scale = 1.0 / static_cast<double>(shards * mb);
    const step_metrics m = ref.step([&](auto tok, auto tgt) { fill_micro(s, micro++, tok, tgt); });
    // the shard's mb micro-batches in order (a pipeline's first and last stage read them)
    std::size_t mine = 0;
    const step_metrics e = step([&](auto tok, auto tgt) { fill_micro(s, step.data_rank() * mb + mine++, tok, tgt); });
    const double e_loss = std::abs(e.loss - m.loss) / std::abs(m.loss);
    const double e_norm = std::abs(e.grad_norm - m.grad_norm) / std::abs(m.grad_norm);
    if (w == 0)
      std::printf("%s, %d ranks, step %zu: loss %.12f (reference %.12f, rel %.2g), grad norm %.10f (reference %.10f, rel %.2g)\n",
                  name, np, s, e.loss, m.loss, e_loss, e.grad_norm, m.grad_norm, e_norm);
    WEFT_CHECK(!e.skipped);
    WEFT_CHECK(e_loss <= tol);
    WEFT_CHECK(e_norm <= tol);
  }
  const double worst = shard_error();
  if (w == 0) std::printf("parameters after %zu steps: worst relative difference %.3g\n", steps, worst);
  WEFT_CHECK(worst <= tol);

  // forward only, one micro-batch per data shard: the mean over the world's equals the reference's
  std::size_t micro = 0;
  const double ref_eval = ref.evaluate([&](auto tok, auto tgt) { fill_micro(steps, micro++, tok, tgt); }, shards);
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
  // presets with a fixed world; the others take dp from the world (a wrong size is left to the
  // step, which says so on every rank)
  const std::map<std::string, int> fixed{{"ep2", 2}, {"ep2-tp2", 4}, {"ep2-tp2-sp", 4}, {"ep2-pp2", 4}};
  const bool known = fixed.count(preset) || preset == "ep2-dp" || preset == "ep2-dp-zero1" ||
                     preset == "ep2-dp-zero3" || preset == "ep2-tp2-dp-zero2" || preset == "ep2-tp2-pp2-dp-zero1";
  if (argc > 3 || !known || (fixed.count(preset) && world.size() != fixed.at(preset))) {
    if (world.rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np 2 mpi_ep_entry_equivalence ep2 [steps] | mpirun -np 4 mpi_ep_entry_equivalence ep2-tp2|ep2-tp2-sp|ep2-pp2 [steps] | mpirun -np 2k mpi_ep_entry_equivalence ep2-dp|ep2-dp-zero1|ep2-dp-zero3 [steps] | mpirun -np 4k mpi_ep_entry_equivalence ep2-tp2-dp-zero2 [steps] | mpirun -np 8k mpi_ep_entry_equivalence ep2-tp2-pp2-dp-zero1 [steps]\n");
    return 2;
  }
  if (preset == "ep2") return run<ep2>(world, "ep2", steps);
  if (preset == "ep2-tp2") return run<ep2_tp2>(world, "ep2 x tp2", steps);
  if (preset == "ep2-tp2-pp2-dp-zero1") return run<ep2_tp2_pp2_dp>(world, "ep2 x tp2 x pp2 x dp, ZeRO-1", steps);
  if (preset == "ep2-pp2") return run<ep2_pp2>(world, "ep2 x pp2 (1F1B, 2 micro-batches)", steps);
  if (preset == "ep2-tp2-sp") return run<ep2_tp2_sp, 2>(world, "ep2 x tp2, sequence parallel, 2 micro-batches", steps);
  if (preset == "ep2-dp-zero1") return run<ep2_zero1, 2>(world, "ep2 x dp, ZeRO-1, 2 micro-batches", steps);
  if (preset == "ep2-dp-zero3") return run<ep2_zero3>(world, "ep2 x dp, ZeRO-3", steps);
  if (preset == "ep2-tp2-dp-zero2") return run<ep2_tp2_dp>(world, "ep2 x tp2 x dp, ZeRO-2", steps);
  return run<ep2_dp>(world, "ep2 x dp", steps);
}
