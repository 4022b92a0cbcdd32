#pragma once
// ---- distributed_step: the training step a plan's strategy asks for, on a world of ranks ----
// From plan<Model, batch<…>, strategy<mesh<…>, parts…>> and a communicator over the whole job,
// this builds the groups of the mesh (tensor-parallel ranks adjacent, then data-parallel, then
// pipeline: rank = (pp·dp + dp_index)·tp + tp_index), the local step of this rank's
// model-parallel shard, and data parallelism with the strategy's ZeRO stage around it.
// A world that does not fit the mesh ends every rank with one line and status 2.
#include "weft/comm/check.hpp"                  // collective_check
#include "weft/comm/communicator.hpp"           // communicator
#include "weft/parallel/plan.hpp"               // plan
#include "weft/train/batch_source.hpp"          // batch_source, fill_from
#include "weft/train/data_parallel_step.hpp"    // data_parallel_step
#include "weft/train/expert_parallel_step.hpp"  // expert_parallel_step
#include "weft/train/pipeline_step.hpp"         // pipeline_step
#include "weft/train/tensor_parallel_step.hpp"  // tensor_parallel_step
#include "weft/train/training_step.hpp"         // training_step

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
}  // namespace detail

/// The distributed training step of `Plan` over the ranks of `world`.
template <class Plan, class Comm>
  requires communicator<Comm>
class distributed_step {
 public:
  using strategy_type = typename Plan::strategy_type;
  // Its groups have no expert-parallel axis: an ep plan runs as expert_parallel_step.
  static constexpr bool without_experts = !strategy_type::has_expert_parallel;
  static_assert(without_experts, "weft::distributed_step: the plan's strategy has expert_parallel, which this step does not run. Build the step with make_training_step<Plan>(world) (it returns expert_parallel_step for such a plan).");
  using local_step = detail::local_step_t<Plan, Comm>;
  static constexpr std::size_t tp = Plan::tp, pp = Plan::pp;

  distributed_step(Comm& world, train_options options = {})
      : world_(world),
        dp_n_(checked_dp(world)),
        coords_(strategy_type::coords(static_cast<std::size_t>(world.rank()), dp_n_)),
        // Groups: same (pp, dp) -> a tensor-parallel group; same (pp, tp) -> a data-parallel group.
        tp_group_(world.split(static_cast<int>(coords_.pp * dp_n_ + coords_.dp), static_cast<int>(coords_.tp))),
        dp_group_(world.split(static_cast<int>(coords_.pp * tp + coords_.tp), static_cast<int>(coords_.dp))),
        // Same (dp, tp) -> a pipeline: the stages of one model replica.
        pp_group_(world.split(static_cast<int>(coords_.dp * tp + coords_.tp), static_cast<int>(coords_.pp))),
        step_(dp_group_, make_local(options), strategy_type::bucket_bytes) {}

  /// This rank's place in the mesh.
  rank_coords coords() const { return coords_; }
  std::size_t dp_size() const { return dp_n_; }
  /// Rows of the global batch this rank reads: data shard `dp index` of `dp_size()`.
  std::size_t data_rank() const { return coords_.dp; }

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
                         " x dp). Launch a multiple of " + std::to_string(tp * pp) + " ranks (mpirun -np N).",
                     2);
    return n;
  }
  local_step make_local(const train_options& o) {
    if constexpr (pp > 1 && tp > 1) return local_step(pp_group_, tp_group_, o);
    else if constexpr (pp > 1) return local_step(pp_group_, o);
    else if constexpr (tp > 1) return local_step(tp_group_, o);
    else return local_step(o);
  }

  Comm& world_;
  std::size_t dp_n_;
  rank_coords coords_;
  Comm tp_group_, dp_group_, pp_group_;
  data_parallel_step<Plan, Comm, strategy_type::zero_stage, local_step> step_;
};

namespace detail {
// The step of a plan: expert_parallel_step when its strategy has expert_parallel<> (ep ranks
// exchange routed rows, so the communicator needs all_to_all), distributed_step otherwise.
// After the message below: a stand-in, so that no second error follows it.
template <class Comm>
struct no_expert_step {
  no_expert_step(Comm&, const train_options&) {}
};
template <bool Exchanges, class Plan, class Comm>
struct ep_step_or {
  using type = no_expert_step<Comm>;
};
template <class Plan, class Comm>
struct ep_step_or<true, Plan, Comm> {
  using type = expert_parallel_step<Plan, Comm>;
};
template <class Plan, class Comm>
struct training_step_for {
  using type = distributed_step<Plan, Comm>;
};
template <class Plan, class Comm>
  requires(Plan::strategy_type::has_expert_parallel)
struct training_step_for<Plan, Comm> {
  static constexpr bool exchanges = all_to_all_communicator<Comm>;
  static_assert(exchanges, "weft::make_training_step: expert_parallel needs a communicator with all_to_all and all_to_all_v (mpi_communicator has them). Run the plan over mpi::world, or drop expert_parallel.");
  using type = typename ep_step_or<exchanges, Plan, Comm>::type;
};
}  // namespace detail

/// The step make_training_step<Plan> returns for a world of type `Comm`: distributed_step, or
/// expert_parallel_step for a strategy with expert_parallel<"ep">.
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
