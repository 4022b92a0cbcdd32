#pragma once
// ---- distributed_step: the training step a plan's strategy asks for, on a world of ranks ----
// From plan<Model, batch<…>, strategy<mesh<…>, parts…>> and a communicator over the whole job,
// this builds one group per part of the strategy (the ranks that differ only along its axis;
// strategy.hpp's rank order: tensor-parallel ranks adjacent, data-parallel, then pipeline, and any
// other part by its rank_order), the local step of this rank's model-parallel shard
// (training_step, tensor_parallel_step or pipeline_step), each part's local_step wrapper around it
// (expert_parallel's expert_parallel_local: the expert group bound around forward and backward,
// the dense gradients summed over it), and data parallelism with the strategy's ZeRO stage around
// that. So dp × ZeRO 0-3 × tp × pp and any part written outside this file (expert_parallel is one)
// run through this one step; every rank reads the rows of its data shard: data_rank() of
// data_shards(), a mixed radix over the parts that split data (dp and ep).
// A world that does not fit the mesh ends every rank with one line and status 2.
#include "weft/comm/check.hpp"                  // collective_check
#include "weft/comm/communicator.hpp"           // communicator
#include "weft/core/fixed_string.hpp"           // fixed_string
#include "weft/data/batch_source.hpp"           // batch_source, fill_from
#include "weft/exec/data_parallel_step.hpp"     // data_parallel_step
#include "weft/exec/pipeline_step.hpp"          // pipeline_step
#include "weft/exec/tensor_parallel_step.hpp"   // tensor_parallel_step
#include "weft/exec/training_step.hpp"          // training_step
#include "weft/parallel/plan.hpp"               // plan

#include <array>
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

// A part that wraps the local step: it has a local_step hook, a degree above 1, and takes `Comm`
// (when it does not, distributed_step says so, and the step is left unwrapped: one message).
template <template <class, class> class>
struct local_step_hook {};
template <class Strategy, class Comm, class P>
consteval bool part_wraps_local() {
  if constexpr (requires { typename local_step_hook<P::template local_step>; })
    return (Strategy::template degree_of<P::family> > 1) && part_takes_communicator<P, Comm>();
  else
    return false;
}
template <class Strategy, class Comm>
struct wraps_local {
  template <class P>
  struct test : std::bool_constant<part_wraps_local<Strategy, Comm, P>()> {};
};
template <class Strategy, class Comm, class List>
struct wrapper_parts_of;
template <class Strategy, class Comm, class... Ps>
struct wrapper_parts_of<Strategy, Comm, type_list<Ps...>> {
  using type = typename filter_list<wraps_local<Strategy, Comm>::template test, Ps...>::type;
};
// A wrapper the part only declares (its header not included here) is said once, by name.
template <class P, class W>
consteval bool check_wrapper_defined() {
  if constexpr (!requires { sizeof(W); })
    strategy_error<fixed_string("weft::distributed_step: the local_step of ") + P::family +
                   fixed_string(" is declared but not defined here. Include the header that defines it (the part's "
                                "header names it; weft/exec.hpp includes those of weft's parts).")>();
  return true;
}
// The local step wrapped by each of the parts in `List`, the first innermost.
template <class Local, class Comm, class List>
struct wrap_local {
  using type = Local;
};
template <class Local, class Comm, class P, class... Ps>
struct wrap_local<Local, Comm, type_list<P, Ps...>> {
  using wrapped = typename P::template local_step<Local, Comm>;
  static_assert(check_wrapper_defined<P, wrapped>());
  using type = typename wrap_local<wrapped, Comm, type_list<Ps...>>::type;
};
template <std::size_t I, class List>
struct list_at;
template <class P, class... Ps>
struct list_at<0, type_list<P, Ps...>> {
  using type = P;
};
template <std::size_t I, class P, class... Ps>
struct list_at<I, type_list<P, Ps...>> : list_at<I - 1, type_list<Ps...>> {};
}  // namespace detail

/// The distributed training step of `Plan` over the ranks of `world`.
template <class Plan, class Comm>
  requires communicator<Comm>
class distributed_step {
 public:
  using strategy_type = typename Plan::strategy_type;
  static constexpr std::size_t tp = Plan::tp, pp = Plan::pp;
  // Every part takes this communicator (expert_parallel needs all_to_all); said once, by the part.
  static_assert(strategy_type::template takes_communicator<Comm> || true);
  /// The parts that wrap the local step (a local_step hook and a degree above 1), as written.
  using wrapper_parts = typename detail::wrapper_parts_of<strategy_type, Comm, typename strategy_type::written_parts>::type;
  /// The step of this rank's model-parallel shard.
  using model_parallel_step = detail::local_step_t<Plan, Comm>;
  /// That step inside each wrapper part's local step (expert_parallel_local under ep > 1).
  using local_step = typename detail::wrap_local<model_parallel_step, Comm, wrapper_parts>::type;

  distributed_step(Comm& world, train_options options = {})
      : world_(world),
        dp_n_(checked_dp(world)),
        coords_(strategy_type::coords(static_cast<std::size_t>(world.rank()), dp_n_)),
        // One group per built-in part: the ranks that differ from this one only along its axis
        // (a rank alone when the strategy has no such part).
        tp_group_(split_along(world, "tensor_parallel")),
        dp_group_(split_along(world, "data_parallel")),
        pp_group_(split_along(world, "pipeline")),
        step_(dp_group_, make_local(options), strategy_type::bucket_bytes) {}

  /// This rank's place in the mesh.
  rank_coords coords() const { return coords_; }
  std::size_t dp_size() const { return dp_n_; }
  /// Rows of the global batch this rank reads: data shard data_rank() of data_shards(), one per
  /// combination of the indices of the parts that split data (dp, and ep: every expert rank
  /// brings its own tokens), dp index · ep + ep index of dp · ep. The ranks of a tensor-parallel
  /// group or a pipeline read the same shard.
  std::size_t data_rank() const { return strategy_type::data_rank(coords_, dp_n_); }
  std::size_t data_shards() const { return strategy_type::data_shards(dp_n_); }
  /// The group of the part of `family` this rank belongs to, for a part that wraps the local
  /// step (nullptr for any other).
  Comm* group_of(std::string_view family) {
    for (std::size_t i = 0; i < wrapper_parts::size; ++i)
      if (wrapper_families_[i] == family && wrapper_groups_[i]) return &*wrapper_groups_[i];
    return nullptr;
  }

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
    const std::size_t model_ranks = strategy_type::model_ranks;
    collective_check(world, n != 0,
                     "weft::distributed_step: the world has " + std::to_string(world.size()) +
                         " ranks, which the mesh cannot use (" + mesh_text() + " x dp). Launch a multiple of " +
                         std::to_string(model_ranks) + " ranks (mpirun -np N).",
                     2);
    return n;
  }
  // "tp 2 x pp 2 x ep 2": the degree of every part but data parallelism (any other part by the
  // name of its axis).
  static std::string mesh_text() {
    std::string t = "tp " + std::to_string(tp) + " x pp " + std::to_string(pp);
    [&]<class... Ps>(detail::type_list<Ps...>) {
      ((Ps::family.view() == "data_parallel" || Ps::family.view() == "tensor_parallel" || Ps::family.view() == "pipeline"
            ? void()
            : void(t += " x " + std::string(Ps::axis_name.view()) + " " +
                        std::to_string(strategy_type::template degree_of<Ps::family>))),
       ...);
    }(typename strategy_type::parts{});
    return t;
  }
  Comm split_along(Comm& world, std::string_view family) {
    return world.split(static_cast<int>(strategy_type::group_color(coords_, family, dp_n_)),
                       static_cast<int>(coords_[family]));
  }
  model_parallel_step make_model_parallel(const train_options& o) {
    if constexpr (pp > 1 && tp > 1) return model_parallel_step(pp_group_, tp_group_, o);
    else if constexpr (pp > 1) return model_parallel_step(pp_group_, o);
    else if constexpr (tp > 1) return model_parallel_step(tp_group_, o);
    else return model_parallel_step(o);
  }
  // Wrapper part I's group (split here: only parts that wrap get one, since a split communicator
  // can cost device resources, e.g. NCCL's), and its local_step around `inner`.
  template <std::size_t I, class Inner>
  auto wrap(Inner&& inner) {
    if constexpr (I == wrapper_parts::size) {
      return std::move(inner);
    } else {
      using P = typename detail::list_at<I, wrapper_parts>::type;
      wrapper_families_[I] = P::family.view();
      wrapper_groups_[I].emplace(split_along(world_, P::family.view()));
      using W = typename P::template local_step<std::remove_cvref_t<Inner>, Comm>;
      return wrap<I + 1>(W(*wrapper_groups_[I], std::move(inner)));
    }
  }
  local_step make_local(const train_options& o) { return wrap<0>(make_model_parallel(o)); }

  Comm& world_;
  std::size_t dp_n_;
  rank_coords coords_;
  Comm tp_group_, dp_group_, pp_group_;
  std::array<std::string_view, wrapper_parts::size> wrapper_families_{};
  std::array<std::optional<Comm>, wrapper_parts::size> wrapper_groups_{};
  data_parallel_step<Plan, Comm, strategy_type::zero_stage, local_step> step_;
};

namespace detail {
// The step of a plan: distributed_step, for every strategy. When a part does not take the
// communicator (expert_parallel needs all_to_all), its message, then a stand-in, so that no
// second error follows it.
template <class Comm>
struct no_training_step {
  no_training_step(Comm&, const train_options&) {}
};
template <class Plan, class Comm>
struct training_step_for {
  using type = distributed_step<Plan, Comm>;
};
template <class Plan, class Comm>
  requires(!Plan::strategy_type::template takes_communicator<Comm>)
struct training_step_for<Plan, Comm> {
  using type = no_training_step<Comm>;
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
