#pragma once
// ---- tensor_parallel_step: the training step of one tensor-parallel rank (Megatron-LM) ----
// Runs tp_model<Plan::model, TP, SP> (parallel/tensor_parallel.hpp) on this rank's shard of
// every parameter, with the whole micro-batch's tokens; the loss is the vocabulary-parallel
// softmax cross-entropy. It has the members data_parallel_step needs of a local step, so
// dp x tp is data_parallel_step<Plan, Comm, Zero, tensor_parallel_step<Plan, TP, SP>> over the
// data-parallel group, wrapping a step built on the tensor-parallel group.
//
// Replicated parameters (norms, row-parallel biases, learned positions) are held whole on
// every rank. Without SP their gradients come out equal on every rank. With SP each rank's
// backward sees only its sequence slice, so their gradients are summed over the tp group as
// soon as backward has finished them (before a data-parallel bucket holding them starts).
// Norms count each replicated parameter once (on tp rank 0), so clipping matches one process.
#include "weft/comm/communicator.hpp"            // communicator
#include "weft/comm/tp_adapter.hpp"              // make_tp_group
#include "weft/model/layer.hpp"                  // frame, param_info, tp_group, grad_ready_hook
#include "weft/model/tensor_parallel_layers.hpp" // vocab_parallel_cross_entropy_*
#include "weft/ops/adamw.hpp"                    // adamw_step
#include "weft/ops/cast.hpp"                     // cast (f32 master -> bf16 parameters)
#include "weft/ops/host_element.hpp"             // compute_t (the micro-batch scale of a bf16 plan)
#include "weft/ops/clip.hpp"                     // clip
#include "weft/ops/fill.hpp"                     // zero
#include "weft/ops/mean_loss.hpp"                // mean_loss
#include "weft/ops/sum_squares.hpp"              // sum_squares_continue
#include "weft/parallel/tensor_parallel.hpp"     // tensor_parallel_plan, tp_model, gather_shards, scatter_shards, for_each_shard_index
#include "weft/exec/arena_frame.hpp"            // arena_frame
#include "weft/exec/gradient_runs.hpp"          // gradient_runs
#include "weft/exec/training_step.hpp"          // train_options, step_metrics, initialise_parameters

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// Fills this rank's shard `local_block` with exactly the values the single-process run gives
/// the same elements (initialise_parameters per name, from `seed`), without a temporary: each
/// parameter's generator skips to the shard's next element (two draws per value).
template <class T>
void initialise_shards(std::span<T> local_block, const std::vector<param_info>& local,
                       const std::vector<param_info>& whole, std::size_t tp, std::size_t rank, std::uint64_t seed) {
  for (const auto& p : local) {
    const param_info& w = detail::whole_param(whole, p.name);
    if (!w.random_init) {
      std::fill_n(local_block.data() + p.offset, p.size, static_cast<T>(w.init_constant));
      continue;
    }
    const std::uint64_t stream = detail::param_seed(seed, w.name);
    splitmix64 g{stream};
    std::size_t next = 0, i = 0;  // next: the whole parameter's element the generator is at
    for_each_shard_index(w, p.tp_role == role::replicated ? 1 : tp, rank, [&](std::size_t k) {
      if (i >= p.size) return;
      if (k < next) g = splitmix64{stream}, next = 0;  // (the shard maps go forward; kept general)
      g.discard(2 * (k - next));
      local_block[p.offset + i++] = static_cast<T>(w.init_stddev * detail::normal01(g));
      next = k + 1;
    });
  }
}

namespace detail {
// Mixed-precision AdamW over runs {offset, size, decay} of a parameter block (as
// adamw_over_groups): the master and moments (M, e.g. f32) updated from the T gradients, the T
// parameters written from the new master in the same pass (one rounding); returns the rate.
template <execution_context Ctx, class T, class M, class Groups>
double mixed_adamw_over_groups(const Ctx& ctx, const train_options& options, std::size_t& step, M* master, T* params,
                               const T* grads, M* m, M* v, const Groups& groups) {
  const auto& o = options.optimizer;
  const double lr = options.schedule.at(step, o.lr);
  ++step;
  for (const auto& g : groups)
    ops::adamw_step(ctx, flat(ctx, master + g.offset, g.size), flat(ctx, params + g.offset, g.size),
                    flat(ctx, grads + g.offset, g.size), flat(ctx, m + g.offset, g.size),
                    flat(ctx, v + g.offset, g.size), static_cast<float>(lr), o.beta1, o.beta2, o.eps,
                    g.decay ? o.weight_decay : 0.0f, static_cast<int>(step));
  return lr;
}
}  // namespace detail

/// The training step of one of `TP` tensor-parallel ranks for the single-process plan `Plan`
/// (`SP`: with sequence parallelism). TP and SP default to the plan's strategy<>.
template <class Plan, std::size_t TP = detail::strategy_tp<Plan>(), bool SP = detail::strategy_sp<Plan>()>
class tensor_parallel_step : public step_skeleton<tensor_parallel_step<Plan, TP, SP>> {
 public:
  using plan_type = Plan;
  using local_plan = tensor_parallel_plan<Plan, TP, SP>;
  using model = typename local_plan::model;
  using T = typename Plan::value_type;
  /// Master weights and AdamW moments: T, or f32 under precision<bf16, f32> (as training_step).
  using M = typename local_plan::master_type;
  static constexpr bool mixed_precision = local_plan::mixed_precision;
  /// Per-token losses: float when T is narrower.
  using L = typename local_plan::loss_type;
  static constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows, V = Plan::vocab_size;
  static constexpr std::size_t vocab_local = local_plan::vocab_local;
  /// False under ZeRO >= 1 (data_parallel_step holds the optimizer state in shards).
  static constexpr bool optimizer_state_in_arena = local_plan::optimizer_state_in_arena;
  /// Bytes of the arena this step allocated (local_plan::bytes_per_rank).
  static constexpr std::size_t resident_bytes() { return local_plan::bytes_per_rank; }
  using context_type = host_context;  ///< where its ops run
  using frame_type = frame<T, B, local_plan::local_seq, model, context_type>;

  /// A step on the tensor-parallel group `tp` (size TP; rank = shard index).
  template <communicator Comm>
  explicit tensor_parallel_step(const Comm& tp, train_options options = {})
      : tensor_parallel_step(make_tp_group(tp), options) {}

  explicit tensor_parallel_step(std::unique_ptr<tp_group> tp, train_options options = {})
      : options_(options),
        tp_(std::move(tp)),
        arena_(static_cast<std::byte*>(::operator new[](local_plan::bytes_per_rank, std::align_val_t{64}))),
        infos_(local_plan::parameters()),
        whole_infos_(Plan::parameters()) {
    if (!tp_ || tp_->size() != static_cast<int>(TP))
      throw std::invalid_argument("weft::tensor_parallel_step: the group has " + std::to_string(tp_ ? tp_->size() : 0) +
                                  " ranks but the step is built for tp " + std::to_string(TP) +
                                  ". Pass the tensor-parallel group (world.split by data-parallel index).");
    if (options_.grad_accum == 0)
      throw std::invalid_argument("weft::tensor_parallel_step: grad_accum is 0. Use at least 1 micro-batch per step.");
    std::memset(arena_.get(), 0, local_plan::bytes_per_rank);
    std::vector<gradient_runs::run> replicated_params;
    for (const auto& p : infos_) {
      if (!groups_.empty() && groups_.back().decay == p.decay && groups_.back().offset + groups_.back().size == p.offset)
        groups_.back().size += p.size;
      else
        groups_.push_back({p.offset, p.size, p.decay});
      if (p.tp_role == role::replicated) {
        if (!replicated_.empty() && replicated_.back().offset + replicated_.back().size == p.offset)
          replicated_.back().size += p.size;  // runs, for the norm
        else
          replicated_.push_back({p.offset, p.size});
        replicated_params.push_back({p.offset, p.size});
      }
    }
    replicated_params_ = gradient_runs(std::move(replicated_params));
    if constexpr (mixed_precision && optimizer_state_in_arena) {
      // The f32 master shard is initialised; the T parameters are its rounded copy.
      initial_values(master());
      ops::cast(ctx_, flat(ctx_, section(local_plan::params), local_plan::param_count),
                flat(ctx_, section<M>(local_plan::master), local_plan::param_count));
    } else if constexpr (mixed_precision) {
      // No master section (ZeRO's shards hold it): the same rounded values.
      std::vector<M> values(local_plan::param_count);
      initial_values(std::span<M>(values));
      ops::cast(ctx_, flat(ctx_, section(local_plan::params), local_plan::param_count),
                flat(ctx_, values.data(), local_plan::param_count));
    } else {
      initialise_shards(params(), infos_, whole_infos_, TP, tp_rank(), options_.seed);
    }
  }

  tensor_parallel_step(tensor_parallel_step&&) noexcept = default;

  // ---- the arena's sections ----
  template <class U = T>
  U* section(typename local_plan::section_id s) const {
    return reinterpret_cast<U*>(arena_.get() + local_plan::offsets[s]);
  }
  std::span<T> params() const { return {section(local_plan::params), local_plan::param_count}; }
  std::span<T> grads() const { return {section(local_plan::grads), local_plan::param_count}; }
  /// The AdamW moments of the shard, in M (only when the arena holds them: not under ZeRO >= 1).
  std::span<M> adam_m() const
    requires local_plan::optimizer_state_in_arena
  {
    return {section<M>(local_plan::adam_m), local_plan::state.moments};
  }
  std::span<M> adam_v() const
    requires local_plan::optimizer_state_in_arena
  {
    return {section<M>(local_plan::adam_v), local_plan::state.moments};
  }
  /// The optimizer's f32 copy of the shard (mixed precision without ZeRO only; empty otherwise).
  std::span<M> master() const { return {section<M>(local_plan::master), local_plan::state.master}; }
  /// Writes the initial values of this rank's shard in M into `out` (params().size() elements):
  /// the single-process run's values of the same elements. A mixed-precision master starts from
  /// them (data_parallel_step's ZeRO master shards too); the T parameters are their rounding.
  void initial_values(std::span<M> out) const {
    initialise_shards(out, infos_, whole_infos_, TP, tp_rank(), options_.seed);
  }
  /// The whole micro-batch's (batch, seq) ids: the same on every rank of the tp group.
  std::span<std::int32_t, rows> tokens() const { return std::span<std::int32_t, rows>{section<std::int32_t>(local_plan::tokens), rows}; }
  std::span<std::int32_t, rows> targets() const { return std::span<std::int32_t, rows>{section<std::int32_t>(local_plan::targets), rows}; }
  /// This rank's logits (batch, seq, vocab/tp): tokens [tp_rank·vocab/tp, (tp_rank+1)·vocab/tp).
  std::span<T> logits() const { return {section(local_plan::logits), local_plan::logits_count}; }
  /// This rank's parameters: single-process names, shard shapes, offsets in its block.
  const std::vector<param_info>& parameter_infos() const { return infos_; }
  /// The single-process parameters the shards are cut from.
  const std::vector<param_info>& whole_parameter_infos() const { return whole_infos_; }
  const train_options& options() const { return options_; }
  const context_type& context() const { return ctx_; }
  train_options& options() { return options_; }
  std::size_t step_count() const { return step_; }
  void set_step_count(std::size_t s) { step_ = s; }
  void set_grad_ready(grad_ready_hook hook) { grad_ready_ = hook; }
  std::size_t tp_rank() const { return static_cast<std::size_t>(tp_->rank()); }
  /// The tensor-parallel group.
  tp_group& tp() const { return *tp_; }
  /// A contiguous run of parameters with or without weight decay.
  struct group {
    std::size_t offset, size;
    bool decay;
  };
  const std::vector<group>& parameter_groups() const { return groups_; }

  /// The model's frame over this arena (grads: whether backward may write gradients).
  frame_type root_frame(bool with_grads = true) {
    frame_type f = arena_frame<frame_type, local_plan>(arena_.get(), ctx_, with_grads);
    f.tp = tp_.get();
    if (with_grads && (SP || grad_ready_)) f.grad_ready = {&tensor_parallel_step::on_grads_final, this};
    return f;
  }

  /// This rank's logits for tokens() (in logits()).
  void forward() { model::forward(root_frame(false), nullptr, section(local_plan::logits)); }

  /// Mean loss of the micro-batch in tokens()/targets(), forward only.
  double loss() {
    forward();
    L* losses = section<L>(local_plan::losses);
    vocab_parallel_cross_entropy_forward<rows, vocab_local>(ctx_, *tp_, losses, section(local_plan::logits),
                                                                  section<std::int32_t>(local_plan::targets),
                                                                  section<double>(local_plan::loss_work));
    return ops::mean_loss(ctx_, flat(ctx_, losses, rows));
  }

  /// Forward and backward of one micro-batch, adding its gradients (scaled by `scale`) to
  /// grads(); returns its mean loss.
  double accumulate(ops::compute_t<T> scale) {
    if constexpr (SP) {
      // The sum over tp below adds every rank's share; rank 0 alone carries the earlier
      // micro-batches' sums, so that accumulation counts them once.
      if (tp_rank() != 0)
        for (const auto& r : replicated_) ops::zero(ctx_, flat(ctx_, section(local_plan::grads) + r.offset, r.size));
      replicated_params_.restart();
    }
    const frame_type f = root_frame(true);
    T* logits = section(local_plan::logits);
    L* losses = section<L>(local_plan::losses);
    model::forward(f, nullptr, logits);  // (batch, seq, vocab/tp)
    vocab_parallel_cross_entropy_forward_backward<rows, vocab_local>(ctx_, *tp_, losses, logits,
                                                                           section<std::int32_t>(local_plan::targets), scale,
                                                                           section<double>(local_plan::loss_work));
    model::backward(f, nullptr, logits, nullptr);  // logits hold dlogits
    if constexpr (SP) reduce_replicated(0);       // whatever backward did not report
    return ops::mean_loss(ctx_, flat(ctx_, losses, rows));
  }

  // step(fill, accept), evaluate(fill, batches) and clip_gradients(): step_skeleton.hpp.

  /// A run of the parameter block.
  struct run {
    std::size_t offset, size;
  };
  /// Runs the global norm skips on this rank (sorted): the replicated parameters, which tp
  /// rank 0 counts for every rank. data_parallel_step's ZeRO stages skip them too.
  const std::vector<run>& norm_skipped() const { return tp_rank() == 0 ? no_runs_ : replicated_; }

  /// Squared global norm of the model's gradients, each replicated parameter once
  /// (collective over the tp group).
  double grad_norm_squared() const {
    const T* g = section(local_plan::grads);
    double sq = 0;
    const auto add = [&](std::size_t b, std::size_t e) {
      sq = ops::sum_squares_continue(ctx_, sq, flat(ctx_, g + b, e - b));
    };
    std::size_t at = 0;
    for (const auto& r : norm_skipped()) {
      add(at, r.offset);
      at = r.offset + r.size;
    }
    add(at, local_plan::param_count);
    return model_parallel_sum(sq);
  }
  /// A squared-norm contribution summed over the tp group.
  double model_parallel_sum(double local) const {
    tp_->all_reduce_sum(&local, 1);
    return local;
  }

  /// AdamW on this rank's shard with this step's learning rate; advances the step count.
  double apply_optimizer()
    requires local_plan::optimizer_state_in_arena
  {
    if constexpr (mixed_precision)
      return detail::mixed_adamw_over_groups(ctx_, options_, step_, section<M>(local_plan::master),
                                             section(local_plan::params), section(local_plan::grads),
                                             section<M>(local_plan::adam_m), section<M>(local_plan::adam_v), groups_);
    else
      return detail::adamw_over_groups(ctx_, options_, step_, section(local_plan::params), section(local_plan::grads),
                                             section(local_plan::adam_m), section(local_plan::adam_v), groups_);
  }



  /// Collective over the tp group: the single-process parameter block (Plan::param_count
  /// elements, laid out as Plan::parameters()) from every rank's shard.
  void gather_parameters(std::span<T> whole) const {
    gather_shards(*tp_, std::span<const T>(params()), infos_, whole_infos_, whole);
  }
  /// Collective over the tp group: the single-process block of the f32 master weights (mixed
  /// precision without ZeRO: master() is not empty), as gather_parameters.
  void gather_master(std::span<M> whole) const {
    gather_shards(*tp_, std::span<const M>(master()), infos_, whole_infos_, whole);
  }
  /// This rank's shard from a single-process parameter block (e.g. a loaded checkpoint).
  void load_parameters(std::span<const T> whole) {
    scatter_shards(whole, whole_infos_, params(), infos_, TP, tp_rank());
  }

 private:

  // Backward reports: gradients at offsets >= from are final. Under SP, sum the replicated
  // ones among them over tp first; then pass the report on (data-parallel buckets).
  static void on_grads_final(void* self, std::size_t from) {
    auto& s = *static_cast<tensor_parallel_step*>(self);
    if constexpr (SP) s.reduce_replicated(from);
    if (s.grad_ready_) s.grad_ready_(from);
  }
  // All-reduces the replicated parameters at offsets >= from not yet reduced in this backward
  // (gradient_runs.hpp).
  void reduce_replicated(std::size_t from) {
    T* g = section(local_plan::grads);
    replicated_params_.take_final(from, [&](std::size_t at, std::size_t n) { tp_->all_reduce_sum(g + at, n); });
  }

  train_options options_;
  context_type ctx_{};
  std::unique_ptr<tp_group> tp_;
  std::unique_ptr<std::byte[], detail::aligned_free> arena_;
  std::vector<param_info> infos_, whole_infos_;
  std::vector<group> groups_;
  std::vector<run> replicated_;         // runs of replicated parameters, by offset
  std::vector<run> no_runs_;
  gradient_runs replicated_params_;     // each replicated parameter
  std::size_t step_ = 0;
  grad_ready_hook grad_ready_{};
};

}  // namespace weft
