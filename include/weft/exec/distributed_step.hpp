#pragma once
// ---- distributed_step: the training step a plan's strategy asks for, on a world of ranks ----
// From plan<Model, batch<…>, strategy<mesh<…>, parts…>> and a communicator over the whole job,
// this builds the groups of the mesh (strategy.hpp's order: tensor-parallel ranks adjacent, then
// expert-parallel, then data-parallel, then pipeline: rank = ((pp·dp + dp_index)·ep + ep_index)·tp
// + tp_index), the local step of this rank's model-parallel shard, and data parallelism with the
// strategy's ZeRO stage around it. Under expert_parallel<"ep"> the local step is wrapped in
// expert_parallel_local (the expert group bound around forward and backward, the dense gradients
// summed over it), so dp × ZeRO 0-3 × ep × tp × pp run through this one step; every (dp, ep) pair
// reads its own rows of the global batch (data_rank() of data_shards()).
// A world that does not fit the mesh ends every rank with one line and status 2.
#include "weft/comm/check.hpp"                  // collective_check
#include "weft/comm/communicator.hpp"           // communicator
#include "weft/parallel/plan.hpp"               // plan
#include "weft/data/batch_source.hpp"          // batch_source, fill_from
#include "weft/exec/data_parallel_step.hpp"    // data_parallel_step
#include "weft/comm/all_to_all.hpp"             // all_to_all_communicator
#include "weft/exec/expert_parallel_local.hpp" // expert_parallel_local
#include "weft/exec/expert_parallel_step.hpp"  // expert_parallel_step (built by hand)
#include "weft/exec/pipeline_step.hpp"         // pipeline_step
#include "weft/exec/tensor_parallel_step.hpp"  // tensor_parallel_step
#include "weft/exec/training_step.hpp"         // training_step

#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace weft {

namespace detail {
template <class Plan, class Comm>
struct local_step_of {
  using type = std::conditional_t<(Plan::tp > 1), tensor_parallel_step<Plan>, training_step<Plan>>;
};
template <class Plan, class Comm>
  requires(Plan::pp > 1)
struct local_step_of<Plan, Comm> {
  using strategy_type = typename Plan::strategy_type;
  using type = pipeline_step<Plan, Plan::pp, typename strategy_type::schedule_type, strategy_type::microbatches, Comm,
                             Plan::tp, strategy_type::sequence_parallel>;
};
template <class Plan, class Comm>
using local_step_t = typename local_step_of<Plan, Comm>::type;
// The local step of an expert-parallel plan: wrapped in expert_parallel_local (only when the
// communicator can exchange rows; distributed_step says so otherwise).
template <class Plan, class Comm, bool Wrap = (Plan::ep > 1 && all_to_all_communicator<Comm>)>
struct ep_local_step_of {
  using type = local_step_t<Plan, Comm>;
};
template <class Plan, class Comm>
struct ep_local_step_of<Plan, Comm, true> {
  using type = expert_parallel_local<local_step_t<Plan, Comm>, Comm>;
};
}  // namespace detail

/// The distributed training step of `Plan` over the ranks of `world`.
template <class Plan, class Comm>
  requires communicator<Comm>
class distributed_step {
 public:
  using strategy_type = typename Plan::strategy_type;
  static constexpr std::size_t tp = Plan::tp, pp = Plan::pp, ep = Plan::ep;
  // The ep_moe_mlp layers exchange routed rows over the expert group.
  static constexpr bool exchanges = ep == 1 || all_to_all_communicator<Comm>;
  static_assert(exchanges, "weft::distributed_step: expert_parallel needs a communicator with all_to_all and all_to_all_v (mpi_communicator has them). Run the plan over mpi::world, or drop expert_parallel.");
  /// The step of this rank's model-parallel shard (wrapped in expert_parallel_local under ep > 1).
  using local_step = typename detail::ep_local_step_of<Plan, Comm>::type;

  distributed_step(Comm& world, train_options options = {})
      : world_(world),
        dp_n_(checked_dp(world)),
        coords_(strategy_type::coords(static_cast<std::size_t>(world.rank()), dp_n_)),
        // Groups: same (pp, dp, ep) -> a tensor-parallel group; same (pp, ep, tp) -> a
        // data-parallel group; same (pp, dp, tp) -> an expert group.
        tp_group_(world.split(static_cast<int>((coords_.pp * dp_n_ + coords_.dp) * ep + coords_.ep),
                              static_cast<int>(coords_.tp))),
        dp_group_(world.split(static_cast<int>((coords_.pp * ep + coords_.ep) * tp + coords_.tp),
                              static_cast<int>(coords_.dp))),
        // Same (dp, ep, tp) -> a pipeline: the stages of one model replica.
        pp_group_(world.split(static_cast<int>((coords_.dp * ep + coords_.ep) * tp + coords_.tp),
                              static_cast<int>(coords_.pp))),
        ep_group_(split_experts(world)),
        step_(dp_group_, make_local(options), strategy_type::bucket_bytes) {}

  /// This rank's place in the mesh.
  rank_coords coords() const { return coords_; }
  std::size_t dp_size() const { return dp_n_; }
  /// Rows of the global batch this rank reads: data shard data_rank() of data_shards(), one per
  /// (dp, ep) pair (every expert rank brings its own tokens): dp index · ep + ep index of dp · ep.
  /// The ranks of a tensor-parallel group or a pipeline read the same shard.
  std::size_t data_rank() const { return coords_.dp * ep + coords_.ep; }
  std::size_t data_shards() const { return dp_n_ * ep; }

  /// One optimizer step over this rank's rows: from a batch source (`step(sampler)`), or from a
  /// `fill(tokens, targets)` callable called once per micro-batch.
  template <batch_source<Plan::B * Plan::S> Source>
  step_metrics step(Source& source) {
    auto fill = fill_from(source);
    return step_.step(fill);
  }
  template <class Fill>
    requires(!batch_source<std::remove_cvref_t<Fill>, Plan::B * Plan::S>)
  step_metrics step(Fill&& fill) {
    return step_.step(fill);
  }
  /// The same, with `accept(loss, grad_norm)` asked before the update (a spike_guard): the step
  /// updates only if every rank accepts; a non-finite step is skipped without asking.
  template <batch_source<Plan::B * Plan::S> Source, class Accept>
    requires std::predicate<Accept&, double, double>
  step_metrics step(Source& source, Accept&& accept) {
    auto fill = fill_from(source);
    return step_.step(fill, accept);
  }
  template <class Fill, class Accept>
    requires(!batch_source<std::remove_cvref_t<Fill>, Plan::B * Plan::S> && std::predicate<Accept&, double, double>)
  step_metrics step(Fill&& fill, Accept&& accept) {
    return step_.step(fill, accept);
  }
  /// Steps skipped so far (non-finite or not accepted; the same on every rank).
  std::size_t skipped_steps() const { return step_.skipped_steps(); }
  std::size_t step_count() const { return step_.step_count(); }
  /// Mean loss over `batches` micro-batches of a batch source (or a fill callable).
  template <batch_source<Plan::B * Plan::S> Source>
  double evaluate(Source& source, std::size_t batches) {
    auto fill = fill_from(source);
    return step_.evaluate(fill, batches);
  }
  template <class Fill>
    requires(!batch_source<std::remove_cvref_t<Fill>, Plan::B * Plan::S>)
  double evaluate(Fill&& fill, std::size_t batches) {
    return step_.evaluate(fill, batches);
  }
  /// `operator()` is `step`: `for (...) auto m = step(sampler);` as in DESIGN.md.
  template <class Source>
  step_metrics operator()(Source&& source) {
    return step(std::forward<Source>(source));
  }
  auto& inner() { return step_; }

 private:
  static std::size_t checked_dp(Comm& world) {
    const std::size_t n = strategy_type::dp_size(static_cast<std::size_t>(world.size()));
    collective_check(world, n != 0,
                     "weft::distributed_step: the world has " + std::to_string(world.size()) +
                         " ranks, which the mesh cannot use (tp " + std::to_string(tp) + " x pp " + std::to_string(pp) +
                         (ep > 1 ? " x ep " + std::to_string(ep) : std::string()) + " x dp). Launch a multiple of " +
                         std::to_string(tp * pp * ep) + " ranks (mpirun -np N).",
                     2);
    return n;
  }
  using model_parallel_step = detail::local_step_t<Plan, Comm>;
  model_parallel_step make_model_parallel(const train_options& o) {
    if constexpr (pp > 1 && tp > 1) return model_parallel_step(pp_group_, tp_group_, o);
    else if constexpr (pp > 1) return model_parallel_step(pp_group_, o);
    else if constexpr (tp > 1) return model_parallel_step(tp_group_, o);
    else return model_parallel_step(o);
  }
  local_step make_local(const train_options& o) {
    if constexpr (std::is_same_v<local_step, model_parallel_step>) return make_model_parallel(o);
    else return local_step(*ep_group_, make_model_parallel(o));
  }
  // Same (pp, dp, tp) -> an expert group; none without expert parallelism (no split: a split
  // communicator can cost device resources, e.g. NCCL's).
  std::optional<Comm> split_experts(Comm& world) {
    if constexpr (ep == 1) return std::nullopt;
    else
      return world.split(static_cast<int>((coords_.pp * dp_n_ + coords_.dp) * tp + coords_.tp),
                         static_cast<int>(coords_.ep));
  }

  Comm& world_;
  std::size_t dp_n_;
  rank_coords coords_;
  Comm tp_group_, dp_group_, pp_group_;
  std::optional<Comm> ep_group_;
  data_parallel_step<Plan, Comm, strategy_type::zero_stage, local_step> step_;
};

namespace detail {
// The step of a plan: distributed_step, for every strategy. Under expert_parallel<> the ep ranks
// exchange routed rows, so the communicator needs all_to_all; after the message below, a
// stand-in, so that no second error follows it.
template <class Comm>
struct no_expert_step {
  no_expert_step(Comm&, const train_options&) {}
};
template <class Plan, class Comm>
struct training_step_for {
  using type = distributed_step<Plan, Comm>;
};
template <class Plan, class Comm>
  requires(Plan::strategy_type::has_expert_parallel && !all_to_all_communicator<Comm>)
struct training_step_for<Plan, Comm> {
  static constexpr bool exchanges = all_to_all_communicator<Comm>;
  static_assert(exchanges, "weft::make_training_step: expert_parallel needs a communicator with all_to_all and all_to_all_v (mpi_communicator has them). Run the plan over mpi::world, or drop expert_parallel.");
  using type = no_expert_step<Comm>;
};
}  // namespace detail

/// The step make_training_step<Plan> returns for a world of type `Comm`: distributed_step (for
/// an expert_parallel<"ep"> strategy too, whose local step is then expert_parallel_local).
template <class Plan, class Comm>
using training_step_for_t = typename detail::training_step_for<Plan, Comm>::type;

/// The training step `Plan`'s strategy asks for, on the ranks of `world` (DESIGN's entry point):
/// `auto step = make_training_step<plan_t>(world, options);` (returned in place, never moved).
template <class Plan, class Comm>
  requires communicator<Comm>
training_step_for_t<Plan, Comm> make_training_step(Comm& world, train_options options = {}) {
  return training_step_for_t<Plan, Comm>(world, options);
}

}  // namespace weft
