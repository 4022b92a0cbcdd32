#pragma once
// ---- expert_parallel_step: training a model with ep_moe_mlp layers over an ep x dp world ----
// The world (an all_to_all_communicator) is a grid of ep x dp ranks, ep consecutive ranks
// forming an expert group. Each rank runs the ordinary single-rank training_step of `Plan`
// (whose model holds ep_moe_mlp<Moe, ep> layers: E/ep experts per block) over its own
// micro-batches, with its expert group bound around forward and backward; then
//   * the experts' gradients (parameters named `…experts.…`) are summed over dp, the rest over
//     the whole world (the router and the shared expert see only their rank's tokens);
//   * the global norm counts each expert once (summed over the expert group) and the rest once;
//   * clipping and AdamW run on every rank (element-wise, so shards stay consistent).
// The loss is that of one process training the whole model over all ranks' micro-batches
// (world · grad_accum of them): a mean over every token. Initialisation gives each rank its
// slice of the whole model's experts (the same values a single process would draw), so a run is
// comparable to the single process step by step (tests/mpi/ep_model_equivalence.cpp).
// Two ways to build it:
//   * from a plan whose strategy has expert_parallel<"ep"> and data parallelism only
//     (strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>), with
//     (world, options); a world that does not fit the mesh ends every rank with one line, status 2.
//     make_training_step<Plan>(world) returns distributed_step for such a plan instead (its local
//     step wrapped in expert_parallel_local, exec/expert_parallel_local.hpp), which also runs ZeRO,
//     tensor parallelism and pipelines beside the experts;
//   * by hand, from a plan of a model already built with ep_moe_mlp<Moe, ep>, with (world, ep, options).
// Ranks: rank w is expert rank w % ep of data replica w / ep (strategy.hpp's order with tp = pp = 1);
// every rank reads its own rows: data shard data_rank() of data_shards() = the world size.
#include "weft/comm/all_to_all.hpp"            // all_to_all_communicator
#include "weft/comm/check.hpp"                 // collective_check
#include "weft/comm/expert_group_adapter.hpp"  // expert_group_adapter
#include "weft/model/aux_loss.hpp"             // aux_losses
#include "weft/model/ep_moe_mlp.hpp"           // is_expert_parameter, bind_expert_group
#include "weft/ops/clip.hpp"                   // clip
#include "weft/ops/fill.hpp"                   // zero
#include "weft/ops/sum_squares.hpp"            // sum_squares
#include "weft/parallel/expert_parallel.hpp"   // ep_degree, rank_coords
#include "weft/data/batch_source.hpp"         // batch_source, fill_from
#include "weft/exec/training_step.hpp"        // training_step, train_options, step_metrics

#include <chrono>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

/// One rank's step of a model with ep_moe_mlp layers over an ep x dp world (see the top of the file).
template <class Plan, all_to_all_communicator Comm>
class expert_parallel_step {
 public:
  using T = typename Plan::value_type;

  /// `world`'s size must be a multiple of `ep`; rank w is expert rank w % ep of data replica w / ep.
  expert_parallel_step(Comm& world, std::size_t ep, train_options options = {})
      : world_(world),
        ep_(ep),
        ep_comm_(split_ep(world, ep)),
        dp_comm_(world.split(static_cast<int>(static_cast<std::size_t>(world.rank()) % ep),
                             static_cast<int>(static_cast<std::size_t>(world.rank()) / ep))),
        group_(ep_comm_),
        step_(options) {
    // runs of expert and non-expert parameters, merged where adjacent
    for (const auto& p : step_.parameter_infos()) {
      const bool e = is_expert_parameter(p);
      if (!runs_.empty() && runs_.back().expert == e && runs_.back().offset + runs_.back().size == p.offset)
        runs_.back().size += p.size;
      else
        runs_.push_back({p.offset, p.size, e});
    }
    // this rank's slice of the whole model's experts: skip the earlier ranks' share of the stream
    const std::size_t r = static_cast<std::size_t>(world.rank()) % ep;
    for (const auto& p : step_.parameter_infos()) {
      if (!is_expert_parameter(p) || !p.random_init) continue;
      splitmix64 g{detail::param_seed(options.seed, p.name)};
      for (std::size_t i = 0; i < r * p.size; ++i) (void)detail::normal01(g);
      T* dst = step_.params().data() + p.offset;
      for (std::size_t i = 0; i < p.size; ++i) dst[i] = static_cast<T>(p.init_stddev * detail::normal01(g));
    }
  }

  /// From the plan's strategy (expert_parallel<"ep"> with data parallelism): ep is the mesh's.
  explicit expert_parallel_step(Comm& world, train_options options = {})
    requires(Plan::has_strategy && Plan::strategy_type::template has_part<"expert_parallel">)
      : expert_parallel_step(world, checked_ep(world), options) {}

  expert_parallel_step(const expert_parallel_step&) = delete;  // its group refers to its own communicator
  expert_parallel_step& operator=(const expert_parallel_step&) = delete;

  training_step<Plan>& local() { return step_; }
  Comm& expert_comm() { return ep_comm_; }
  Comm& data_comm() { return dp_comm_; }
  std::size_t expert_rank() const { return static_cast<std::size_t>(world_.rank()) % ep_; }

  // ---- the interface of distributed_step ----
  /// This rank's place in the mesh: {pp 0, dp replica, tp 0, expert rank}.
  rank_coords coords() const {
    const std::size_t w = static_cast<std::size_t>(world_.rank());
    return rank_coords(0, w / ep_, 0).set("expert_parallel", w % ep_);
  }
  /// Data-parallel replicas (the mesh's dp axis): the world over ep.
  std::size_t dp_size() const { return static_cast<std::size_t>(world_.size()) / ep_; }
  /// Every rank brings its own tokens (the ranks of an expert group too): this rank reads data
  /// shard data_rank() of data_shards(), its world rank of the world size.
  std::size_t data_rank() const { return static_cast<std::size_t>(world_.rank()); }
  std::size_t data_shards() const { return static_cast<std::size_t>(world_.size()); }
  std::size_t step_count() const { return step_.step_count(); }

  /// One optimizer step from a batch source (one next() per micro-batch of this rank).
  template <batch_source<Plan::B * Plan::S> Source>
  step_metrics step(Source& source) {
    auto fill = fill_from(source);
    return step(fill);
  }
  /// `operator()` is `step`, as distributed_step's.
  template <class Source>
  step_metrics operator()(Source&& source) {
    return step(std::forward<Source>(source));
  }
  /// Mean loss over `batches` micro-batches per rank, over every rank's (forward only; a collective).
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    double sum[1] = {0};
    {
      bind_expert_group bound(group_);
      if constexpr (batch_source<std::remove_cvref_t<Fill>, Plan::B * Plan::S>) {
        auto f = fill_from(fill);
        sum[0] = step_.evaluate(f, batches) * static_cast<double>(batches);
      } else {
        sum[0] = step_.evaluate(fill, batches) * static_cast<double>(batches);
      }
    }
    world_.all_reduce(std::span<double>(sum), reduce_op::sum);
    return batches ? sum[0] / static_cast<double>(batches * static_cast<std::size_t>(world_.size())) : 0.0;
  }

  /// One optimizer step; `fill(tokens, targets)` writes each of this rank's micro-batches.
  template <class Fill>
    requires(!batch_source<std::remove_cvref_t<Fill>, Plan::B * Plan::S>)
  step_metrics step(Fill&& fill) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t k = step_.options().grad_accum, world = static_cast<std::size_t>(world_.size());
    ops::zero(step_.context(), flat(step_.context(), step_.grads().data(), Plan::param_count));
    // every micro-batch of every rank weighs 1 / (k · world) in the step's loss, aux included
    auto& meter = aux_losses();
    const double saved_scale = meter.gradient_scale;
    meter.gradient_scale = 1.0 / static_cast<double>(k * world);
    double loss[1] = {0};
    {
      bind_expert_group bound(group_);
      for (std::size_t i = 0; i < k; ++i) {
        fill(step_.tokens(), step_.targets());
        loss[0] += step_.accumulate(static_cast<T>(1.0 / static_cast<double>(Plan::rows * k * world)));
      }
    }
    meter.gradient_scale = saved_scale;
    world_.all_reduce(std::span<double>(loss), reduce_op::sum);
    double sq[2] = {0, 0};  // this expert rank's experts, the rest
    for (const auto& run : runs_) {
      std::span<T> g(step_.grads().data() + run.offset, run.size);
      if (run.expert) dp_comm_.all_reduce(g, reduce_op::sum);
      else world_.all_reduce(g, reduce_op::sum);
      sq[run.expert ? 0 : 1] += ops::sum_squares(step_.context(), flat(step_.context(), g));
    }
    ep_comm_.all_reduce(std::span<double>(sq, 1), reduce_op::sum);
    step_metrics m;
    m.loss = loss[0] / static_cast<double>(k * world);
    m.grad_norm = std::sqrt(sq[0] + sq[1]);
    ops::clip(step_.context(), flat(step_.context(), step_.grads().data(), Plan::param_count), m.grad_norm,
              static_cast<double>(step_.options().grad_clip));
    m.lr = step_.apply_optimizer();
    m.step = step_.step_count();
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.tokens_per_second = static_cast<double>(Plan::rows * k) / m.seconds;  // this rank's
    return m;
  }

 private:
  // The strategy's ep, after every rank agreed that the world fits the mesh (dp · ep ranks).
  static std::size_t checked_ep(Comm& world) {
    using S = typename Plan::strategy_type;
    const std::size_t n = S::dp_size(static_cast<std::size_t>(world.size()));
    collective_check(world, n != 0,
                     "weft::expert_parallel_step: the world has " + std::to_string(world.size()) +
                         " ranks, which the mesh cannot use (ep " + std::to_string(ep_degree<S>) +
                         " x dp). Launch a multiple of " + std::to_string(ep_degree<S>) + " ranks (mpirun -np N).",
                     2);
    return ep_degree<S>;
  }
  static Comm split_ep(Comm& world, std::size_t ep) {
    if (ep == 0 || static_cast<std::size_t>(world.size()) % ep != 0)
      throw std::invalid_argument("weft::expert_parallel_step: the world size is not a multiple of ep. Run ep x dp ranks.");
    return world.split(static_cast<int>(static_cast<std::size_t>(world.rank()) / ep),
                       static_cast<int>(static_cast<std::size_t>(world.rank()) % ep));
  }
  struct run {
    std::size_t offset, size;
    bool expert;
  };
  Comm& world_;
  std::size_t ep_;
  Comm ep_comm_, dp_comm_;
  expert_group_adapter<Comm> group_;
  training_step<Plan> step_;
  std::vector<run> runs_;
};

}  // namespace weft
