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
// Not a strategy part yet: plan<> does not know an expert-parallel axis; this step is given ep.
#include "weft/comm/all_to_all.hpp"            // all_to_all_communicator
#include "weft/comm/expert_group_adapter.hpp"  // expert_group_adapter
#include "weft/model/aux_loss.hpp"             // aux_losses
#include "weft/model/ep_moe_mlp.hpp"           // is_expert_parameter, bind_expert_group
#include "weft/ops/clip.hpp"                   // clip
#include "weft/ops/fill.hpp"                   // zero
#include "weft/ops/sum_squares.hpp"            // sum_squares
#include "weft/train/training_step.hpp"        // training_step, train_options, step_metrics

#include <chrono>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
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
      const bool e = is_expert_parameter(p.name);
      if (!runs_.empty() && runs_.back().expert == e && runs_.back().offset + runs_.back().size == p.offset)
        runs_.back().size += p.size;
      else
        runs_.push_back({p.offset, p.size, e});
    }
    // this rank's slice of the whole model's experts: skip the earlier ranks' share of the stream
    const std::size_t r = static_cast<std::size_t>(world.rank()) % ep;
    for (const auto& p : step_.parameter_infos()) {
      if (!is_expert_parameter(p.name) || !p.random_init) continue;
      splitmix64 g{detail::param_seed(options.seed, p.name)};
      for (std::size_t i = 0; i < r * p.size; ++i) (void)detail::normal01(g);
      T* dst = step_.params().data() + p.offset;
      for (std::size_t i = 0; i < p.size; ++i) dst[i] = static_cast<T>(p.init_stddev * detail::normal01(g));
    }
  }

  expert_parallel_step(const expert_parallel_step&) = delete;  // its group refers to its own communicator
  expert_parallel_step& operator=(const expert_parallel_step&) = delete;

  training_step<Plan>& local() { return step_; }
  Comm& expert_comm() { return ep_comm_; }
  Comm& data_comm() { return dp_comm_; }
  std::size_t expert_rank() const { return static_cast<std::size_t>(world_.rank()) % ep_; }

  /// One optimizer step; `fill(tokens, targets)` writes each of this rank's micro-batches.
  template <class Fill>
  step_metrics step(Fill&& fill) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t k = step_.options().grad_accum, world = static_cast<std::size_t>(world_.size());
    ops::zero(step_.context(), step_.grads().data(), Plan::param_count);
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
      sq[run.expert ? 0 : 1] += ops::sum_squares(step_.context(), g.data(), g.size());
    }
    ep_comm_.all_reduce(std::span<double>(sq, 1), reduce_op::sum);
    step_metrics m;
    m.loss = loss[0] / static_cast<double>(k * world);
    m.grad_norm = std::sqrt(sq[0] + sq[1]);
    ops::clip(step_.context(), step_.grads().data(), Plan::param_count, m.grad_norm,
              static_cast<double>(step_.options().grad_clip));
    m.lr = step_.apply_optimizer();
    m.step = step_.step_count();
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.tokens_per_second = static_cast<double>(Plan::rows * k) / m.seconds;  // this rank's
    return m;
  }

 private:
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
