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
//
// ZeRO-2/3 layer by layer (under data_parallel_step with zero<2> / zero<3>: a plan asking for
// windows, tensor_parallel_plan::windowed_grads / windowed_params): as training_step, the arena
// holds the parameters (ZeRO-3) and gradients (ZeRO-2/3) of the layers outside the shard's block
// stack, back to back, and two one-block windows of each, which the data-parallel step fills and
// reduce-scatters through the block_window_hook it sets (set_block_window); only the resident
// layers are initialised (initial_values(out, begin) gives the dp master shards any range of the
// shard block without a temporary). Under SP the step wraps that hook: when a block's backward
// ends, its replicated gradients are summed over tp in the window before the dp step's
// grads_done reduce-scatters it; the later "final" report skips them, and the per-micro-batch
// zeroing on tp ranks != 0 touches only the resident ones. Under ZeRO-3 the whole-block paths
// (gather_parameters(whole), load_parameters) throw: gather data_parallel_step::parameters()
// with gather_parameters(block, whole); checkpoints go through the dp step's master shards.
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
#include "weft/exec/arena_sections.hpp"         // arena_sections
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
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

/// Fills elements [begin, begin + out.size()) of this rank's shard block (laid out as `local`)
/// with exactly the values the single-process run gives the same elements (initialise_parameters
/// per name, from `seed`), computed in `Via` and converted to the element type of `out` (Via =
/// f32 into bf16: the rounded copy of the f32 master; void: the element type itself), without a
/// temporary: each parameter's generator skips to the shard's next element (two draws per value).
template <class Via = void, class Out>
void initialise_shard_range(std::span<Out> out, std::size_t begin, const std::vector<param_info>& local,
                            const std::vector<param_info>& whole, std::size_t tp, std::size_t rank, std::uint64_t seed) {
  using V = std::conditional_t<std::is_void_v<Via>, Out, Via>;
  const std::size_t end = begin + out.size();
  for (const auto& p : local) {
    const std::size_t lo = std::max(p.offset, begin), hi = std::min(p.offset + p.size, end);
    if (lo >= hi) continue;
    const param_info& w = detail::whole_param(whole, p.name);
    if (!w.random_init) {
      std::fill_n(out.data() + (lo - begin), hi - lo, static_cast<Out>(static_cast<V>(w.init_constant)));
      continue;
    }
    const std::uint64_t stream = detail::param_seed(seed, w.name);
    splitmix64 g{stream};
    std::size_t next = 0, i = 0;  // next: the whole parameter's element the generator is at
    for_each_shard_index(w, p.tp_role == role::replicated ? 1 : tp, rank, [&](std::size_t k) {
      const std::size_t at = p.offset + i++;
      if (at < lo || at >= hi) return;
      if (k < next) g = splitmix64{stream}, next = 0;  // (the shard maps go forward; kept general)
      g.discard(2 * (k - next));
      out[at - begin] = static_cast<Out>(static_cast<V>(w.init_stddev * detail::normal01(g)));
      next = k + 1;
    });
  }
}

/// Fills this rank's whole shard block `local_block` (initialise_shard_range from its start).
template <class T>
void initialise_shards(std::span<T> local_block, const std::vector<param_info>& local,
                       const std::vector<param_info>& whole, std::size_t tp, std::size_t rank, std::uint64_t seed) {
  initialise_shard_range(local_block, 0, local, whole, tp, rank, seed);
}


/// The training step of one of `TP` tensor-parallel ranks for the single-process plan `Plan`
/// (`SP`: with sequence parallelism). TP and SP default to the plan's strategy<>.
template <class Plan, std::size_t TP = detail::strategy_tp<Plan>(), bool SP = detail::strategy_sp<Plan>()>
class tensor_parallel_step
    : public step_skeleton<tensor_parallel_step<Plan, TP, SP>>,
      public detail::arena_sections<tensor_parallel_step<Plan, TP, SP>, tensor_parallel_plan<Plan, TP, SP>,
                                    typename Plan::value_type, typename tensor_parallel_plan<Plan, TP, SP>::master_type> {
  using sections = detail::arena_sections<tensor_parallel_step<Plan, TP, SP>, tensor_parallel_plan<Plan, TP, SP>,
                                          typename Plan::value_type,
                                          typename tensor_parallel_plan<Plan, TP, SP>::master_type>;

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
    if constexpr (windowed_grads) {
      // The replicated runs of one block of the stack, relative to its start (every block alike):
      // under SP they are summed over tp in each block's gradient window (on_grad_window_done).
      for (const auto& p : infos_)
        if (p.tp_role == role::replicated && p.offset >= hole_begin && p.offset < hole_begin + local_plan::window_block) {
          const std::size_t at = p.offset - hole_begin;
          if (!block_replicated_.empty() && block_replicated_.back().offset + block_replicated_.back().size == at)
            block_replicated_.back().size += p.size;
          else
            block_replicated_.push_back({at, p.size});
        }
    }
    if constexpr (mixed_precision && optimizer_state_in_arena) {
      // The f32 master shard is initialised; the T parameters are its rounded copy.
      initial_values(master());
      ops::cast(ctx_, flat(ctx_, section(local_plan::params), local_plan::param_count),
                flat(ctx_, section<M>(local_plan::master), local_plan::param_count));
    } else {
      // No master section (ZeRO's shards hold it, mixed precision: the same rounded values,
      // computed in M and rounded element by element): the resident layers only, no temporary
      // (under ZeRO-3 layer by layer the block stack comes through the windows).
      initialise_resident(params());
    }
  }

  tensor_parallel_step(tensor_parallel_step&&) noexcept = default;

  // ---- the arena's sections ----
  template <class U = T>
  U* section(typename local_plan::section_id s) const {
    return reinterpret_cast<U*>(arena_.get() + local_plan::offsets[s]);
  }
  // params(), grads() (the resident ones: the whole shard block, or under ZeRO-2/3 layer by layer
  // the layers outside the block stack), parameter_block_size() (this rank's shard block: the
  // offsets of parameter_infos(), norm_skipped() and data_parallel_step's shards),
  // windowed_params, windowed_grads, param_windows(), grad_windows(), adam_m(), adam_v(),
  // master(): arena_sections.hpp, as training_step's.
  using sections::windowed_params, sections::windowed_grads, sections::params, sections::master;
  /// The plan whose window layout (window_begin, window_block, window_blocks) this step has.
  using window_plan = local_plan;
  /// The window hook of every frame of this step, as training_step::set_block_window. Under
  /// sequence parallelism the step interposes on the gradient calls: a block's replicated
  /// parameters (norms) are summed over the tp group in its window before the caller's
  /// grads_done reduce-scatters it.
  void set_block_window(block_window_hook<T> hook)
    requires(windowed_params || windowed_grads)
  {
    window_ = sections::planned_window(hook, "tensor_parallel_step");
  }
  /// Writes the initial values of this rank's shard in M into `out` (params().size() elements):
  /// the single-process run's values of the same elements. A mixed-precision master starts from
  /// them (data_parallel_step's ZeRO master shards too); the T parameters are their rounding.
  void initial_values(std::span<M> out) const {
    initialise_shards(out, infos_, whole_infos_, TP, tp_rank(), options_.seed);
  }
  /// The same values of elements [begin, begin + out.size()) of the shard block only (no
  /// temporary of the block: data_parallel_step's ZeRO master shards start from them).
  void initial_values(std::span<M> out, std::size_t begin) const {
    initialise_shard_range(out, begin, infos_, whole_infos_, TP, tp_rank(), options_.seed);
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
    if constexpr (windowed_params || windowed_grads) {
      if (!window_)
        throw std::logic_error("weft::tensor_parallel_step: this plan keeps the block stack's parameters or gradients "
                               "in ZeRO shards (windowed_params, windowed_grads), but no window hook is set. Run it "
                               "inside data_parallel_step<..., zero<2>> or zero<3>, which gathers and reduces them.");
      f.window = window_;
      if constexpr (SP && windowed_grads) {  // this step's gradient calls around the caller's
        f.window.context = this;
        if constexpr (windowed_params) f.window.params_fn = &tensor_parallel_step::on_param_window;
        f.window.grads_fn = &tensor_parallel_step::on_grad_window;
        f.window.grads_done = &tensor_parallel_step::on_grad_window_done;
      }
    }
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
      // Layer by layer only the resident runs: a block's window is zeroed for each micro-batch.
      if (tp_rank() != 0)
        for (const auto& r : replicated_)
          for_resident_grads(r.offset, r.size, [&](T* g, std::size_t n) { ops::zero(ctx_, flat(ctx_, g, n)); });
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
  double grad_norm_squared() const
    requires(!windowed_grads)  // the block stack's gradients are data_parallel_step's shards
  {
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
  /// Under ZeRO-3 layer by layer (windowed_params) the arena does not hold the block stack: a
  /// clear error; gather the shard block with data_parallel_step::parameters() and pass it to
  /// gather_parameters(block, whole).
  void gather_parameters(std::span<T> whole) const {
    if constexpr (windowed_params)
      throw std::logic_error("weft::tensor_parallel_step::gather_parameters: under ZeRO-3 layer by layer the arena "
                             "holds only the layers outside the block stack. Pass data_parallel_step::parameters() "
                             "(the shard block) to gather_parameters(block, whole).");
    else
      gather_shards(*tp_, std::span<const T>(params()), infos_, whole_infos_, whole);
  }
  /// Collective over the tp group: the single-process block from every rank's shard block
  /// `block` (parameter_block_size() elements, e.g. data_parallel_step::parameters()).
  void gather_parameters(std::span<const T> block, std::span<T> whole) const {
    if (block.size() != local_plan::param_count)
      throw std::invalid_argument("weft::tensor_parallel_step::gather_parameters: the shard block has " +
                                  std::to_string(block.size()) + " elements, not " +
                                  std::to_string(local_plan::param_count) + ".");
    gather_shards(*tp_, block, infos_, whole_infos_, whole);
  }
  /// Collective over the tp group: the single-process block of the f32 master weights (mixed
  /// precision without ZeRO: master() is not empty), as gather_parameters.
  void gather_master(std::span<M> whole) const {
    gather_shards(*tp_, std::span<const M>(master()), infos_, whole_infos_, whole);
  }
  /// This rank's shard from a single-process parameter block (e.g. a loaded checkpoint).
  /// Under ZeRO-3 layer by layer the parameters are data_parallel_step's master shards (the
  /// distributed checkpoint loads them there): a clear error.
  void load_parameters(std::span<const T> whole) {
    if constexpr (windowed_params)
      throw std::logic_error("weft::tensor_parallel_step::load_parameters: under ZeRO-3 layer by layer the arena does "
                             "not hold the block stack; the parameters are data_parallel_step's master shards (load "
                             "a checkpoint through load_checkpoint).");
    else
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
  // Layer by layer the runs inside the block stack are taken (marked done) but not reduced here:
  // each block's were summed in its window before it was reduce-scattered (on_grad_window_done).
  void reduce_replicated(std::size_t from) {
    replicated_params_.take_final(from, [&](std::size_t at, std::size_t n) {
      for_resident_grads(at, n, [&](T* g, std::size_t k) { tp_->all_reduce_sum(g, k); });
    });
  }
  // f(pointer, count) for the parts of run [at, at + n) of the gradient block the arena holds,
  // at their resident addresses (past the block stack's hole: earlier); nothing for the part
  // inside the hole when the gradients come through windows.
  template <class F>
  void for_resident_grads(std::size_t at, std::size_t n, F&& f) const {
    T* g = section(local_plan::grads);
    if constexpr (!windowed_grads) {
      f(g + at, n);
    } else {
      const std::size_t e = at + n, hole_end = hole_begin + hole_size;
      if (at < hole_begin) f(g + at, std::min(e, hole_begin) - at);
      if (e > hole_end) {
        const std::size_t b = std::max(at, hole_end);
        f(g + (b - hole_size), e - b);
      }
    }
  }

  // ---- ZeRO layer by layer under SP: the caller's window hook, with the tp sum of each block's
  // replicated gradients in its window before the caller reduce-scatters it ----
  static T* on_param_window(void* self, std::size_t offset, std::size_t count, std::size_t next) {
    const auto& s = *static_cast<tensor_parallel_step*>(self);
    return s.window_.params_fn(s.window_.context, offset, count, next);
  }
  static T* on_grad_window(void* self, std::size_t offset, std::size_t count) {
    auto& s = *static_cast<tensor_parallel_step*>(self);
    s.grad_window_ = s.window_.grads_fn(s.window_.context, offset, count);
    s.grad_window_offset_ = offset;
    return s.grad_window_;
  }
  static void on_grad_window_done(void* self, std::size_t offset, std::size_t count) {
    auto& s = *static_cast<tensor_parallel_step*>(self);
    if (offset != s.grad_window_offset_ || s.grad_window_ == nullptr)
      throw std::logic_error("weft::tensor_parallel_step: a block's gradient window was handed back out of order.");
    for (const auto& r : s.block_replicated_) s.tp_->all_reduce_sum(s.grad_window_ + r.offset, r.size);
    s.grad_window_ = nullptr;
    s.window_.grads_done(s.window_.context, offset, count);
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
  // ZeRO layer by layer: the block stack's hole in the resident blocks, the caller's hook, and
  // (SP) each block's replicated runs and the gradient window being written.
  static constexpr std::size_t hole_begin = local_plan::window_begin;
  static constexpr std::size_t hole_size = local_plan::window_blocks * local_plan::window_block;
  block_window_hook<T> window_{};
  std::vector<run> block_replicated_;
  T* grad_window_ = nullptr;
  std::size_t grad_window_offset_ = 0;

  // The resident parameters' initial values (rounded from M under mixed precision): the whole
  // shard block, or the layers before and after the block stack (windowed_params).
  void initialise_resident(std::span<T> out) const {
    using Via = std::conditional_t<mixed_precision, M, void>;
    if constexpr (!windowed_params) {
      initialise_shard_range<Via>(out, 0, infos_, whole_infos_, TP, tp_rank(), options_.seed);
    } else {
      initialise_shard_range<Via>(out.first(hole_begin), 0, infos_, whole_infos_, TP, tp_rank(), options_.seed);
      initialise_shard_range<Via>(out.subspan(hole_begin), hole_begin + hole_size, infos_, whole_infos_, TP, tp_rank(),
                                  options_.seed);
    }
  }
};

}  // namespace weft
