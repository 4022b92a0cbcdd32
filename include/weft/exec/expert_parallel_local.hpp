#pragma once
// ---- expert_parallel_local: a local step of a model with ep_moe_mlp layers, on one expert rank ----
// Wraps any local step that data_parallel_step accepts (training_step<Plan>,
// tensor_parallel_step<Plan>, pipeline_step<Plan, …>) of a plan whose model holds ep_moe_mlp
// layers (plan<> maps moe_mlp to them under expert_parallel<"ep">), and is itself such a local
// step. So dp × ZeRO 0-3 × ep × tp × pp all come from distributed_step's one code path:
//   data_parallel_step<Plan, dp group, Zero, expert_parallel_local<Local, Comm>>
// What the expert group changes (GShard / Switch: each ep rank brings its own tokens):
//   * forward, backward and evaluation run with the expert group bound (bind_expert_group), so
//     that the ep_moe_mlp layers exchange routed rows with the group's other ranks;
//   * the loss is the mean over every token of the dp·ep ranks: the cross-entropy gradient
//     data_parallel_step asks for (1/(rows·k·dp)) is divided by ep, the load-balancing loss of
//     one micro-batch weighs 1/(k·dp·ep) (aux_losses().gradient_scale), and each micro-batch's
//     loss is averaged over the group;
//   * the dense gradients (every parameter that is not an expert's, is_expert_parameter: the
//     router, the shared expert, attention, norms, embeddings) are summed over the expert group
//     as backward finishes them, before the report reaches data_parallel_step's buckets (which
//     then sum over dp). Each micro-batch's are summed, with expert rank 0 alone carrying the
//     earlier micro-batches' sums, as tensor_parallel_step does for sequence parallelism; a
//     pipeline (which runs its micro-batches itself and reports nothing) has them summed once,
//     after its schedule. The experts' gradients are complete over the group's tokens already
//     (sum over dp only);
//   * the global norm counts each dense parameter once (on expert rank 0: the others skip them,
//     norm_skipped) and every rank's experts; model_parallel_sum also sums over the group;
//   * each rank starts from its slice of the whole model's experts: rank r's E/ep experts are
//     [r·E/ep, (r+1)·E/ep) of the single-process tensor of that name, drawn from the same stream.
// Under a pipeline the expert group is the ranks with the same stage (and dp, tp index); each
// stage's ep_moe_mlp layers exchange with their peers of that stage.
// Under tensor parallelism the mixture of experts is replicated over the tp group (tp_shard,
// parallel/tensor_parallel.hpp; under sequence parallelism on the gathered sequence), so the
// expert group is the ranks with the same (pp, dp, tp index): every tp rank exchanges with its
// own peers and routes the same rows.
#include "weft/comm/all_to_all.hpp"            // all_to_all_communicator
#include "weft/comm/communicator.hpp"          // reduce_op
#include "weft/comm/expert_group_adapter.hpp"  // expert_group_adapter
#include "weft/model/aux_loss.hpp"             // aux_losses
#include "weft/model/ep_moe_mlp.hpp"           // is_expert_parameter, bind_expert_group
#include "weft/model/layer.hpp"                // grad_ready_hook, param_info
#include "weft/ops/fill.hpp"                   // zero
#include "weft/ops/sum_squares.hpp"            // sum_squares_continue
#include "weft/data/splitmix64.hpp"           // splitmix64
#include "weft/exec/gradient_runs.hpp"        // gradient_runs
#include "weft/exec/local_step_wrapper.hpp"   // local_step_wrapper
#include "weft/exec/training_step.hpp"        // detail::param_seed, detail::normal01

#include <algorithm>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

/// `Local` (a micro-batch local step of an expert-parallel plan) on one rank of the expert group
/// `Comm` (see the top of the file).
template <class Local, all_to_all_communicator Comm>
class expert_parallel_local : public local_step_wrapper<Local> {
  using base = local_step_wrapper<Local>;
  using base::local_;
  using base::own_schedule;

 public:
  using base::microbatches;
  using base::rows;

  /// A run of the parameter block.
  struct run {
    std::size_t offset, size;
  };

  /// `ep` is this rank's expert group (its size is the plan's ep); `local` is built on the plan
  /// (and, for tensor parallelism, on its tp group) and is re-initialised here with this rank's
  /// slice of the experts.
  expert_parallel_local(Comm& ep, Local&& local)
      : base(std::move(local)), ep_(&ep), group_(ep),
        ep_size_(static_cast<std::size_t>(ep.size())), ep_rank_(static_cast<std::size_t>(ep.rank())) {
    const auto& infos = local_.parameter_infos();
    std::vector<gradient_runs::run> dense;
    for (const auto& p : infos)
      if (!is_expert_parameter(p)) dense.push_back({p.offset, p.size});
    dense_ = gradient_runs(std::move(dense));
    initialise_experts(infos);
    // The runs the norm skips: the wrapped step's (tp replicas on tp ranks != 0), and the dense
    // parameters on expert ranks != 0 (rank 0 counts them for the group); sorted and merged.
    std::vector<run> all;
    if constexpr (requires { local_.norm_skipped(); })
      for (const auto& r : local_.norm_skipped()) all.push_back({r.offset, r.size});
    if (ep_rank_ != 0)
      for (const auto& r : dense_.runs()) all.push_back({r.offset, r.size});
    std::sort(all.begin(), all.end(), [](const run& a, const run& b) { return a.offset < b.offset; });
    for (const auto& r : all) {
      if (!skipped_.empty() && r.offset <= skipped_.back().offset + skipped_.back().size) {
        const std::size_t end = std::max(skipped_.back().offset + skipped_.back().size, r.offset + r.size);
        skipped_.back().size = end - skipped_.back().offset;
      } else {
        skipped_.push_back(r);
      }
    }
  }

  expert_parallel_local(expert_parallel_local&&) noexcept = default;

  std::size_t expert_rank() const { return ep_rank_; }
  std::size_t expert_size() const { return ep_size_; }

  // Every other member of the local-step interface is local_step_wrapper's, forwarded.
  /// Called as gradients become final, after their sum over the expert group.
  void set_grad_ready(grad_ready_hook hook) { grad_ready_ = hook; }

  /// Forward and backward of this rank's micro-batch, adding its gradients (scaled by
  /// `scale` / ep) to grads(), the dense ones summed over the expert group; returns the group's
  /// mean loss of the micro-batch.
  template <class Scale>
  double accumulate(Scale scale) {
    // The group's sum below adds every rank's share; rank 0 alone keeps the earlier ones.
    if (ep_rank_ != 0) {
      auto g = local_.grads();
      for (const auto& r : dense_.runs()) ops::zero(local_.context(),
                                                    flat(local_.context(), g.data() + r.offset, r.size));
    }
    dense_.restart();
    local_.set_grad_ready({&expert_parallel_local::on_grads_final, this});  // `this` now (the step is moved in)
    auto& meter = aux_losses();
    const double saved = meter.gradient_scale;
    const double per_rank = static_cast<double>(scale) / static_cast<double>(ep_size_);
    meter.gradient_scale = per_rank * static_cast<double>(rows);  // 1 / (k · dp · ep) per micro-batch
    double loss[1] = {0};
    try {
      bind_expert_group bound(group_);
      loss[0] = local_.accumulate(static_cast<Scale>(per_rank));
    } catch (...) {
      meter.gradient_scale = saved;
      throw;
    }
    meter.gradient_scale = saved;
    reduce_dense(0);  // whatever backward did not report
    ep_->all_reduce(std::span<double>(loss), reduce_op::sum);
    return loss[0] / static_cast<double>(ep_size_);
  }

  /// A pipeline's step: its M micro-batches through the schedule (`replicas` = dp, the ep ranks
  /// added here), the load-balancing loss of each weighing 1/(M · dp · ep), then the dense
  /// gradients summed over the group; returns the group's mean loss.
  template <class Fill>
    requires own_schedule
  double forward_backward(Fill&& fill, std::size_t replicas) {
    auto& meter = aux_losses();
    const double saved = meter.gradient_scale;
    meter.gradient_scale = 1.0 / static_cast<double>(microbatches * replicas * ep_size_);
    double loss[1] = {0};
    try {
      bind_expert_group bound(group_);
      loss[0] = local_.forward_backward(fill, replicas * ep_size_);
    } catch (...) {
      meter.gradient_scale = saved;
      throw;
    }
    meter.gradient_scale = saved;
    dense_.restart();
    reduce_dense(0);
    ep_->all_reduce(std::span<double>(loss), reduce_op::sum);
    return loss[0] / static_cast<double>(ep_size_);
  }

  /// Mean loss over `batches` micro-batches of this rank, averaged over the expert group
  /// (forward only; a collective over the group).
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    double loss[1] = {0};
    {
      bind_expert_group bound(group_);
      loss[0] = local_.evaluate(fill, batches);
    }
    ep_->all_reduce(std::span<double>(loss), reduce_op::sum);
    return loss[0] / static_cast<double>(ep_size_);
  }

  /// Runs the global norm skips on this rank (sorted): see the top of the file.
  const std::vector<run>& norm_skipped() const { return skipped_; }

  /// Squared global norm of the model's gradients, every parameter once (collective over the
  /// model-parallel ranks and the expert group).
  double grad_norm_squared() {
    const auto g = local_.grads();
    double sq = 0;
    std::size_t at = 0;
    for (const auto& r : skipped_) {
      sq = ops::sum_squares_continue(local_.context(), sq, flat(local_.context(), g.data() + at, r.offset - at));
      at = r.offset + r.size;
    }
    sq = ops::sum_squares_continue(local_.context(), sq, flat(local_.context(), g.data() + at, g.size() - at));
    return model_parallel_sum(sq);
  }
  /// A squared-norm contribution summed over the wrapped step's model-parallel ranks, then over
  /// the expert group.
  double model_parallel_sum(double part) {
    double v[1] = {local_.model_parallel_sum(part)};
    ep_->all_reduce(std::span<double>(v), reduce_op::sum);
    return v[0];
  }

 private:
  static void on_grads_final(void* self, std::size_t from) {
    auto& s = *static_cast<expert_parallel_local*>(self);
    s.reduce_dense(from);
    if (s.grad_ready_) s.grad_ready_(from);
  }
  // Sums over the expert group the dense parameters at offsets >= from not yet summed in this
  // backward (gradient_runs.hpp).
  void reduce_dense(std::size_t from) {
    auto g = local_.grads();
    dense_.take_final(from, [&](std::size_t at, std::size_t n) { ep_->all_reduce(g.subspan(at, n), reduce_op::sum); });
  }

  // This rank's slice of the whole model's experts: skip the earlier ranks' share of each
  // expert tensor's stream (the experts are the tensor's leading axis).
  void initialise_experts(const std::vector<param_info>& infos) {
    using T = typename decltype(local_.params())::value_type;
    auto params = local_.params();
    for (const auto& p : infos) {
      if (!is_expert_parameter(p) || !p.random_init) continue;
      expert_values(p, [&](std::size_t i, double v) {
        if constexpr (requires { local_.master(); }) {
          using M = typename decltype(local_.master())::value_type;
          const auto master = local_.master();
          if (!master.empty()) master[p.offset + i] = static_cast<M>(v);
          params[p.offset + i] = static_cast<T>(static_cast<M>(v));  // the master's rounded copy
        } else {
          params[p.offset + i] = static_cast<T>(v);
        }
      });
    }
  }
  // The initial values of expert tensor `p` on this rank, f(i, value) for its p.size elements:
  // this rank's block of the single-process tensor's stream (two draws per value skipped per
  // element of the earlier ranks' blocks).
  template <class F>
  void expert_values(const param_info& p, F&& f) const {
    splitmix64 g{detail::param_seed(local_.options().seed, p.name)};
    g.discard(2 * ep_rank_ * p.size);
    for (std::size_t i = 0; i < p.size; ++i) f(i, p.init_stddev * detail::normal01(g));
  }



  Comm* ep_;  // the expert group (outlives this step: distributed_step owns it)
  expert_group_adapter<Comm> group_;
  std::size_t ep_size_, ep_rank_;
  gradient_runs dense_;       // each non-expert parameter
  std::vector<run> skipped_;  // runs the norm skips, sorted
  grad_ready_hook grad_ready_{};
};

}  // namespace weft
