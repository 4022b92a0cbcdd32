#pragma once
// ---- data_parallel_step: data parallelism and ZeRO stages 0-3 over a communicator ----
// Each rank of the data-parallel group runs the same local training step on its rows of the
// global batch; gradients are averaged across the group. ZeRO (Rajbhandari et al. 2020):
//   zero<0>  gradients all-reduced in buckets of `bucket_bytes`, each started (non-blocking)
//            during the last micro-batch's backward as soon as its gradients are final, at
//            most buckets_in_flight (2) at once (the MPI library holds a temporary per bucket;
//            the plan counts them: memory_model's comm_buffer_bytes);
//            every rank updates every parameter (optimizer state replicated)
//   zero<1>  same reduction; each rank keeps the AdamW moments of its shard only, updates its
//            shard, and the shards are all-gathered into the parameters (sent from the
//            consumed gradient shard: no send buffer of its own)
//   zero<2>  gradients reduce-scattered (each rank gets the sum of its shard only): block by
//            block during backward (below), else after it in pieces of `bucket_bytes`
//   zero<3>  parameters sharded too: the rank's shard is the master copy, all-gathered into
//            the working parameters before each step's forward
// Shards are contiguous runs of the parameter block, as even as the count allows.
// ZeRO-3 layer by layer (issue #7): over a single-rank local step (training_step on a plan with
// windowed_params), or a tensor-parallel one (tensor_parallel_step, whose tensor_parallel_plan
// windows its shard's block stack the same way: a block is the rank's shard of one) the arena
// holds only the layers before and after the model's block stack
// (embeddings, final norm) and two windows of one block. begin_step gathers the resident layers;
// the stack's repeat<> asks for each block before it runs forward or backward
// (block_window_hook), and this step all-gathers that block from the shards into a window and
// starts gathering the block that runs next into the other (non-blocking where the communicator
// has iall_gather_v, so the transfer overlaps the current block's compute). Backward runs the
// blocks in reverse and gathers them again, as ZeRO-3 does. Over a pipeline-parallel local step
// ZeRO-3 still gathers the whole shard before forward (pipelines are out of scope, as DeepSpeed
// refuses ZeRO-2/3 with them). The window layout is the local step's window_plan (its
// tensor_parallel_plan), else its plan_type.
// ZeRO-2/3 gradients layer by layer (issue #7): over a single-rank or tensor-parallel local step
// (windowed_grads) the arena holds the gradients of the layers outside the stack and two
// windows of one block. Before each block's backward the stack's repeat<> asks for a zeroed window; when it ends,
// this rank adds what its shard already holds there (the earlier micro-batches' sums, zeroed
// at the step's start) to its part of the window, and the window is reduce-scattered into the
// shards (non-blocking where the communicator has ireduce_scatter_v, finishing while the next
// block's backward runs). The resident layers' gradients, accumulated over the micro-batches,
// are reduce-scattered once at the end. Each micro-batch's block gradients are thus summed over
// the ranks before being added to the earlier ones (as DeepSpeed's ZeRO-2 does under gradient
// accumulation), one more rounding per micro-batch than summing locally first. Under sequence
// parallelism the tp step interposes on the hook: a block's replicated gradients (norms) are
// summed over the tp group in its window before grads_done reduce-scatters it here.
// Memory (issue #7): from zero<1> on, the shard vectors below (moments, and the gradient and
// master shards) are the only copy: the local step is built on zero_local_plan_t<Plan, Zero>,
// whose arena has no master or moment sections (state_sections.hpp), and a local step that
// still holds them is rejected at compile time. Beside the shards the arena keeps the gradient
// (ZeRO-2/3) and parameter (ZeRO-3) blocks whole over a pipeline-parallel local step, and
// layer by layer (above: single-rank and tensor-parallel) the resident layers and two windows
// of each: memory_model's working_bytes. resident_bytes() is what a rank holds, and
// plan<>::memory_per_rank predicts it (tests/mpi/memory_per_rank.cpp).
// Mixed precision (precision<bf16, f32>, issue #7): the parameters, gradients and activations
// are bf16 in the local arena; the optimizer state is in the master type M (f32). zero<0> runs
// the local step's own update (its arena's f32 master and moments). From zero<1> on, this step
// holds the f32 master shard beside the f32 moment shards (initialised with the same f32
// values as the single-rank master, not from the rounded bf16 parameters), updates it with the
// mixed-precision adamw_step (ops/adamw.hpp: computed in f32, the bf16 parameter written from
// the new master with one rounding) and all-gathers the bf16 shard into every rank's
// parameters; zero<3> keeps that bf16 shard as its own vector (the send buffer of the gather;
// ZeRO's 2Ψ/Nd parameter shard), so the bytes are ZeRO's 2 + 2 + 12 per parameter, sharded
// by stage. Gradients are reduced over the communicator in bf16 (each pairwise sum computed
// in f32 and rounded once, comm/mpi.hpp); the norm, clipping and update then read them as
// the single-rank step reads its bf16 gradients.
// Dynamic loss scaling (f16 plans, train/loss_scaler.hpp): every rank scales its micro-batches'
// loss gradient by the same scale; the norm is divided by it; a non-finite gradient on any rank
// (an overflow) is the collective non-finite verdict below, so every rank skips the step and
// halves the scale together; otherwise the owned gradients are divided by it before clipping.
// Equivalence: N steps give the losses and parameters of one process running the whole
// global batch (dp · micro · grad_accum sequences), up to the order of floating-point sums.
// Skipped steps: a loss or gradient norm that is not finite on any rank, or a step the caller's
// `accept(loss, grad_norm)` rejects, skips the update on every rank together. The decision is
// collective — the loss flags are summed over the data-parallel group and then over the
// model-parallel ranks, the norm is already global — so no rank updates while another does
// not; the step count and learning rate stay where they were (training_step.hpp).
#include "weft/comm/communicator.hpp"    // communicator, reduce_op
#include "weft/model/layer.hpp"          // grad_ready_hook
#include "weft/ops/accumulate.hpp"       // accumulate (fault injection)
#include "weft/ops/adamw.hpp"            // adamw_step
#include "weft/ops/cast.hpp"             // cast (the parameters from the master)
#include "weft/ops/clip.hpp"             // clip
#include "weft/ops/copy.hpp"             // copy
#include "weft/ops/fill.hpp"             // zero
#include "weft/ops/scale.hpp"            // scale (unscaling f16 gradients)
#include "weft/ops/sum_squares.hpp"      // sum_squares_continue
#include "weft/parallel/memory_model.hpp"  // gradient_buckets_in_flight
#include "weft/train/loss_scaler.hpp"    // loss_scaler
#include "weft/exec/local_step_wrapper.hpp"  // detail::local_master_type
#include "weft/exec/step_skeleton.hpp"  // step_skeleton, step_gradients, step_metrics
#include "weft/exec/training_step.hpp"  // training_step, train_options

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace weft {

namespace detail {
// Whether a local step's arena holds the AdamW moments (false when built for ZeRO >= 1).
template <class Local>
constexpr bool holds_optimizer_state() {
  if constexpr (requires { Local::optimizer_state_in_arena; }) return Local::optimizer_state_in_arena;
  else return true;
}
// Whether a local step gathers its block stack through parameter windows (ZeRO-3, training_step).
template <class Local>
constexpr bool gathers_by_window() {
  if constexpr (requires { Local::windowed_params; }) return Local::windowed_params;
  else return false;
}
// Whether its block stack's gradients come through windows (ZeRO-2 and 3, training_step).
template <class Local>
constexpr bool reduces_by_window() {
  if constexpr (requires { Local::windowed_grads; }) return Local::windowed_grads;
  else return false;
}
// The plan whose window layout (window_begin, window_block, window_blocks) a local step has:
// its window_plan (a tensor-parallel shard's tensor_parallel_plan), else its plan_type.
template <class Local>
struct window_plan_of {
  using type = typename Local::plan_type;
};
template <class Local>
  requires requires { typename Local::window_plan; }
struct window_plan_of<Local> {
  using type = typename Local::window_plan;
};
// Elements of [begin, begin + out.size()) of a local step's parameter block as it initialises
// them, in M: its own initial_values(out, begin) where it has one (a tensor-parallel shard's
// values are the single-process run's at the shard's elements), else the model's initialisers.
template <class Local, class M>
void initial_range_of(const Local& l, std::span<M> out, std::size_t begin) {
  if constexpr (requires { l.initial_values(out, begin); }) l.initial_values(out, begin);
  else initialise_parameter_range(out, begin, l.parameter_infos(), l.options().seed);
}
// Elements of a local step's parameter block (its params() may hold fewer: the windowed ones).
template <class Local>
std::size_t parameter_block_size_of(const Local& l) {
  if constexpr (requires { l.parameter_block_size(); }) return l.parameter_block_size();
  else return l.params().size();
}
}  // namespace detail

/// Data parallelism with ZeRO stage `Zero` for `Plan` over the data-parallel group `Comm`.
/// `Local` is what one model-parallel rank computes: training_step<Plan> (the default), or a
/// tensor-/pipeline-parallel step with the same members (params, grads, tokens, targets,
/// accumulate, options, parameter_groups, step counts, apply_optimizer, set_grad_ready,
/// evaluate, grad_norm_squared, and model_parallel_sum(double) that sums a squared-norm
/// contribution over the model-parallel ranks, replicated parameters counted once).
/// A local step that runs its own micro-batches (a pipeline) has, instead of tokens, targets
/// and accumulate, `microbatches` and `forward_backward(fill, dp)`: it calls fill per
/// micro-batch itself, scales gradients by 1/(rows·microbatches·dp) and returns its mean loss.
/// A local step may also name runs of its parameter block that the global norm skips
/// (`norm_skipped()`, e.g. a pipeline's copy of a tied embedding); ZeRO-1..3 skip them too.
/// step(fill, accept), the verdict, clipping and the metrics are step_skeleton's; this class
/// supplies its hooks (data_replicas, begin_step, micro_batch_starts, finish_gradients, agree,
/// agree_accept, optimizer_grads, schedule_gradients for a pipeline; step_skeleton.hpp).
template <class Plan, class Comm, std::size_t Zero = 0, class Local = training_step<zero_local_plan_t<Plan, Zero>>>
  requires communicator<Comm>
class data_parallel_step : public step_skeleton<data_parallel_step<Plan, Comm, Zero, Local>> {
  static_assert(Zero <= 3, "weft::data_parallel_step: ZeRO stages are 0, 1, 2 and 3. Use zero<0> to zero<3>.");
  // Under ZeRO >= 1 the shards below are the only optimizer state: a local arena with moments
  // of its own would be dead weight (and one without them cannot run zero<0>'s update).
  static constexpr bool local_holds_optimizer = detail::holds_optimizer_state<Local>();
  static constexpr bool optimizer_state_once = (Zero == 0) == local_holds_optimizer;
  static_assert(optimizer_state_once, "weft::data_parallel_step: the local step's arena and the ZeRO stage disagree on who holds the optimizer state. Build the local step on zero_local_plan_t<Plan, Zero> (or on a plan whose strategy has data_parallel<..., zero<Zero>>).");

 public:
  using T = typename Plan::value_type;
  using plan_type = Plan;
  using local_step = Local;
  static constexpr std::size_t rows = Plan::rows;  ///< this rank's tokens per micro-batch
  static constexpr std::size_t zero_stage = Zero;
  /// ZeRO-3 gathering the block stack layer by layer, prefetching the next block (a single-rank
  /// or tensor-parallel local step with windowed_params; see the top of this file).
  static constexpr bool layer_by_layer = Zero == 3 && detail::gathers_by_window<Local>();
  /// ZeRO-2/3 reducing the block stack's gradients layer by layer: each block's backward writes
  /// into a window that is reduce-scattered into the shards when it ends (see the top of this file).
  static constexpr bool grads_by_layer = Zero >= 2 && detail::reduces_by_window<Local>();
  static constexpr bool windows_match_stage =
      (detail::gathers_by_window<Local>() == layer_by_layer) && (detail::reduces_by_window<Local>() == grads_by_layer);
  static_assert(windows_match_stage, "weft::data_parallel_step: the local step's plan keeps the block stack's parameters or gradients in windows (sharded_parameters, sharded_gradients) that this ZeRO stage does not fill. Build the local step on zero_local_plan_t<Plan, Zero>.");
  /// Master weights and AdamW moments: T, or the local step's master type under mixed precision.
  using M = typename detail::local_master_type<Local, T>::type;
  static constexpr bool mixed_precision = !std::is_same_v<T, M>;
  /// Whether steps scale the loss dynamically: f16 parameters, a local step whose micro-batches
  /// this step runs (not a pipeline's schedule), and train_options::loss_scale.enabled.
  static constexpr bool scalable = std::is_same_v<T, f16> && requires(Local& l) { l.accumulate(ops::compute_t<T>{}); };
  static constexpr bool scales_loss = scalable;  // the skeleton's

  /// `group` is this rank's data-parallel group (the world, or a split of it).
  data_parallel_step(Comm& group, train_options options = {}, std::size_t bucket_bytes = std::size_t{25} << 20)
      : data_parallel_step(group, local_step(options), bucket_bytes) {}

  /// Wraps a local step built by the caller (tensor- or pipeline-parallel ones need their groups).
  data_parallel_step(Comm& group, local_step&& local, std::size_t bucket_bytes = std::size_t{25} << 20)
      : group_(group), local_(std::move(local)), P(detail::parameter_block_size_of(local_)), dp_(static_cast<std::size_t>(group.size())),
        rank_(static_cast<std::size_t>(group.rank())) {
    // ---- shards: dp contiguous runs ----
    counts_.resize(dp_);
    offsets_.resize(dp_);
    for (std::size_t r = 0, acc = 0; r < dp_; ++r) {
      const std::size_t n = P / dp_ + (r < P % dp_ ? 1 : 0);
      counts_[r] = static_cast<int>(n);
      offsets_[r] = acc;
      acc += n;
    }
    shard_begin_ = offsets_[rank_];
    shard_size_ = static_cast<std::size_t>(counts_[rank_]);
    if constexpr (Zero >= 1) {
      m_.assign(shard_size_, M{0});
      v_.assign(shard_size_, M{0});
      // Decay runs of this rank's shard, from the model's parameter groups.
      for (const auto& g : local_.parameter_groups()) {
        const std::size_t b = std::max(g.offset, shard_begin_), e = std::min(g.offset + g.size, shard_begin_ + shard_size_);
        if (b < e) shard_groups_.push_back({b, e - b, g.decay});
      }
    }
    if constexpr (Zero >= 2) grad_shard_.assign(shard_size_, T{0});
    if constexpr (Zero >= 1 && mixed_precision) {
      // The f32 master shard holds the initial values themselves (as the single-rank step's
      // master does); the bf16 parameters are their rounded copy.
      if constexpr (layer_by_layer || grads_by_layer ||
                    requires(std::span<M> out, std::size_t b) { local_.initial_values(out, b); }) {
        // only the shard is computed (no temporary of the block)
        master_.resize(shard_size_);
        detail::initial_range_of(local_, std::span<M>(master_), shard_begin_);
      } else if constexpr (requires(std::vector<M>& init) { local_.initial_values(std::span<M>(init)); }) {
        std::vector<M> init(P);  // a pipeline stage's
        local_.initial_values(std::span<M>(init));
        master_.assign(init.begin() + static_cast<std::ptrdiff_t>(shard_begin_),
                       init.begin() + static_cast<std::ptrdiff_t>(shard_begin_ + shard_size_));
      } else {  // the whole model's block: only the shard is computed (no model-sized temporary)
        master_.resize(shard_size_);
        initialise_parameter_range(std::span<M>(master_), shard_begin_, local_.parameter_infos(), local_.options().seed);
      }
      if constexpr (layer_by_layer) {  // the master's rounded copy, as the local step rounds it
        param_shard_.resize(shard_size_);
        ops::cast(local_.context(), flat(local_.context(), param_shard_.data(), shard_size_),
                  flat(local_.context(), master_.data(), shard_size_));
      } else if constexpr (Zero == 3) {
        auto p = local_.params();
        param_shard_.assign(p.begin() + static_cast<std::ptrdiff_t>(shard_begin_),
                            p.begin() + static_cast<std::ptrdiff_t>(shard_begin_ + shard_size_));
      }
    } else if constexpr (layer_by_layer) {  // the block stack is not resident: the shard alone
      master_.resize(shard_size_);
      detail::initial_range_of(local_, std::span<M>(master_), shard_begin_);
    } else if constexpr (Zero == 3) {
      auto p = local_.params();
      master_.assign(p.begin() + static_cast<std::ptrdiff_t>(shard_begin_),
                     p.begin() + static_cast<std::ptrdiff_t>(shard_begin_ + shard_size_));
    }
    if constexpr (layer_by_layer || grads_by_layer) {
      block_window_hook<T> hook{};
      hook.context = this;
      if constexpr (layer_by_layer) hook.params_fn = &data_parallel_step::on_window;
      if constexpr (grads_by_layer) {
        hook.grads_fn = &data_parallel_step::on_grad_window;
        hook.grads_done = &data_parallel_step::on_grad_window_done;
      }
      local_.set_block_window(hook);
    }
    // ---- buckets over the parameter block, reduced last-first as backward finishes them ----
    const std::size_t per = std::max<std::size_t>(1, bucket_bytes / sizeof(T));
    piece_ = per;
    if constexpr (Zero <= 1) {
      for (std::size_t end = P; end > 0;) {
        const std::size_t begin = end > per ? end - per : 0;
        buckets_.push_back({begin, end});
        end = begin;
      }
      requests_.resize(buckets_.size());
      local_.set_grad_ready({&data_parallel_step::on_grads_final, this});
    }
  }

  data_parallel_step(const data_parallel_step&) = delete;
  data_parallel_step& operator=(const data_parallel_step&) = delete;

  local_step& local() { return local_; }
  const local_step& local() const { return local_; }
  std::size_t shard_begin() const { return shard_begin_; }
  std::size_t shard_size() const { return shard_size_; }
  std::size_t buckets() const { return buckets_.size(); }
  /// This rank's shard of the AdamW moments and of the master parameters (ZeRO-3; under mixed
  /// precision ZeRO-1 to 3): offsets [shard_begin(), shard_begin() + shard_size()) of
  /// local().params(). Empty below the stage that shards them (zero<0> keeps the moments in
  /// the local step's arena).
  std::span<M> moments_m() { return m_; }
  std::span<M> moments_v() { return v_; }
  std::span<M> master_shard() { return master_; }
  std::span<const M> moments_m() const { return m_; }
  std::span<const M> moments_v() const { return v_; }
  std::span<const M> master_shard() const { return master_; }
  /// Bytes this rank holds for training: the local step's arena and the shard vectors (moments,
  /// master shard in M; gradient shard and, mixed ZeRO-3, parameter shard in T), by capacity.
  /// Compare with plan<>::memory_per_rank.
  std::size_t resident_bytes() const {
    const std::size_t wide = m_.capacity() + v_.capacity() + master_.capacity();
    const std::size_t narrow = grad_shard_.capacity() + param_shard_.capacity();
    return local_.resident_bytes() + wide * sizeof(M) + narrow * sizeof(T);
  }
  /// Buckets whose reduction started before backward ended, in the last step.
  std::size_t buckets_overlapped() const { return overlapped_; }
  /// ZeRO-3 layer by layer, since construction: blocks gathered into a window (on demand or
  /// ahead), and blocks found already gathered ahead when a layer asked for them.
  std::size_t window_gathers() const { return window_gathers_; }
  std::size_t window_prefetch_hits() const { return window_hits_; }
  /// ZeRO-2/3 layer by layer, since construction: block gradient windows reduce-scattered into
  /// the shards (one per block and micro-batch).
  std::size_t window_reductions() const { return grad_window_reductions_; }
  /// The whole parameter block, current (what one process running the whole batch would hold):
  /// local().params() below ZeRO-3; collective over the group under ZeRO-3 (the shards
  /// all-gathered; layer by layer the arena does not hold the block stack).
  std::vector<T> parameters() {
    if constexpr (Zero == 3) {
      std::vector<T> out(P);
      group_.all_gather_v(std::span<const T>(shard_values(), shard_size_), std::span<T>(out), counts_);
      return out;
    } else if constexpr (requires { local_.copy_params_to_host(); }) {
      return local_.copy_params_to_host();
    } else {
      const auto p = local_.params();
      return std::vector<T>(p.begin(), p.end());
    }
  }
  std::size_t step_count() const { return local_.step_count(); }

  // step(fill, accept), skipped_steps() and loss_scale_state() are the skeleton's
  // (step_skeleton.hpp): the same verdict, skipped count and loss scale on every rank.

  // ---- the skeleton's hooks (step_skeleton.hpp); step() is the skeleton's ----
  // A step: `fill(tokens, targets)` writes this rank's rows of each micro-batch; `accept(loss,
  // grad_norm)` is asked, on every rank, before the update of a finite step, and the step
  // updates only if it holds on every rank.
  const train_options& options() const { return local_.options(); }
  auto context() const { return local_.context(); }
  std::span<T> grads() { return local_.grads(); }
  auto tokens()
    requires requires(Local& l) { l.tokens(); }
  {
    return local_.tokens();
  }
  auto targets()
    requires requires(Local& l) { l.targets(); }
  {
    return local_.targets();
  }
  void upload_batch()
    requires requires(Local& l) { l.upload_batch(); }
  {
    local_.upload_batch();
  }
  template <class Scale>
  double accumulate(Scale scale)
    requires requires(Local& l) { l.accumulate(scale); }
  {
    return local_.accumulate(scale);
  }
  std::size_t data_replicas() const { return dp_; }
  void begin_step() {
    gather_parameters();
    // Layer by layer, each micro-batch's block gradients are reduce-scattered into the shard as
    // their backward ends, the shard's earlier sum added to this rank's part (grad_window_done).
    if constexpr (grads_by_layer) ops::zero(local_.context(), flat(local_.context(), grad_shard_.data(), shard_size_));
  }
  void micro_batch_starts(std::size_t i, std::size_t k) {
    reducing_ = (i + 1 == k);  // reduce during the last backward only (earlier ones accumulate)
    next_bucket_ = 0;
    overlapped_ = 0;
  }
  /// A local step that runs its own micro-batches (a pipeline): its gradients are final when
  /// its forward_backward returns.
  template <class Fill>
    requires requires(Local& l, Fill& f, std::size_t n) { l.forward_backward(f, n); }
  step_gradients schedule_gradients(Fill& fill, double fault) {
    auto g = local_.grads();
    ops::zero(local_.context(), flat(local_.context(), g));
    const std::size_t k = Local::microbatches;
    next_bucket_ = 0;
    overlapped_ = 0;
    const double loss_sum = local_.forward_backward(fill, dp_) * static_cast<double>(k) * fault;
    if (fault != 1.0)  // tests only: the schedule scaled its gradients itself; g += (fault - 1) g
      ops::accumulate(local_.context(), flat(local_.context(), g), flat(local_.context(), g),
                      static_cast<T>(fault - 1.0));
    return {loss_sum / static_cast<double>(k), k};
  }
  void finish_gradients() {
    reducing_ = false;
    // A model whose block stack did not ask for its windows would have read the resident
    // layers in their place: say so rather than train on wrong parameters or gradients.
    if constexpr (layer_by_layer) require_windows_used(window_calls_, "parameters");
    if constexpr (grads_by_layer) require_windows_used(grad_window_calls_, "gradient window");
    finish_reduction();
  }
  /// Squared global L2 norm (the same on every rank). Sharded gradients sum their squares over
  /// the group.
  double grad_norm_squared() {
    double sq = 0;
    if constexpr (Zero >= 1) {
      auto g = owned_grads();
      // g covers [shard_begin_, shard_begin_ + shard_size_) of the parameter block.
      auto add = [&](std::size_t b, std::size_t e) {
        sq = ops::sum_squares_continue(local_.context(), sq,
                                       flat(local_.context(), g.data() + (b - shard_begin_), e - b));
      };
      std::size_t from = shard_begin_;
      const std::size_t end = shard_begin_ + shard_size_;
      if constexpr (requires { local_.norm_skipped(); })  // runs counted on another rank (sorted)
        for (const auto& r : local_.norm_skipped()) {
          add(from, std::clamp(r.offset, from, end));
          from = std::clamp(r.offset + r.size, from, end);
        }
      add(from, end);
      group_.all_reduce(std::span<double>(&sq, 1), reduce_op::sum);
      sq = local_.model_parallel_sum(sq);
    } else {
      sq = local_.grad_norm_squared();  // all gradients are here; the local step knows its replicas
    }
    return sq;
  }
  /// {loss, this rank's non-finite flag}, summed over the group: a NaN loss anywhere makes the
  /// sum NaN, the flag says so explicitly. Then over the model-parallel ranks (no-op alone).
  void agree(step_metrics& m) {
    double red[2] = {m.loss, m.nonfinite ? 1.0 : 0.0};
    group_.all_reduce(std::span<double>(red, 2), reduce_op::sum);
    m.loss = red[0] / static_cast<double>(dp_);
    m.nonfinite = local_.model_parallel_sum(red[1]) != 0;  // the same on every rank
  }
  bool agree_accept(bool ok) {
    double reject = ok ? 0.0 : 1.0;
    group_.all_reduce(std::span<double>(&reject, 1), reduce_op::sum);
    return local_.model_parallel_sum(reject) == 0;
  }
  /// The gradients this rank updates with: all of them (zero 0), or its shard.
  std::span<T> optimizer_grads() { return owned_grads(); }
  double apply_optimizer() { return update(); }

  /// Makes local().params() the current parameters on every rank (a no-op below ZeRO-3).
  /// Layer by layer: the layers before and after the block stack; the stack's blocks are
  /// gathered when they run (and any window gathered before is dropped).
  void gather_parameters() {
    if constexpr (layer_by_layer) {
      using LP = typename detail::window_plan_of<Local>::type;
      constexpr std::size_t cut = LP::window_begin, hole = LP::window_blocks * LP::window_block;
      drop_windows();
      const auto p = local_.params();
      gather_range(0, cut, p.data(), false);
      gather_range(cut + hole, P, p.data() + cut, false);
    } else if constexpr (Zero == 3) {
      group_.all_gather_v(std::span<const T>(shard_values(), shard_size_), local_.params(), counts_);
    }
  }

  /// Mixed precision: rewrites the working parameters (T) from the master weights, each the
  /// master rounded once, as the update leaves them (after a checkpoint restored the master).
  /// zero<0>: from the local step's master; from zero<1> on, collective over the group: each rank
  /// rounds its master shard and the shards are all-gathered into every rank's parameters.
  void params_from_master()
    requires mixed_precision
  {
    if constexpr (Zero == 0) {
      const auto master = local_.master();
      auto p = local_.params();
      ops::cast(local_.context(), flat(local_.context(), p.data(), p.size()),
                flat(local_.context(), master.data(), p.size()));
    } else if constexpr (Zero == 3) {
      ops::cast(local_.context(), flat(local_.context(), param_shard_.data(), shard_size_),
                flat(local_.context(), master_.data(), shard_size_));
      gather_parameters();
    } else {
      // As update() publishes a shard: sent from the gradient shard (an all-gather may not read
      // the buffer it writes); the gradients are dead between steps.
      auto p = local_.params();
      const auto send = owned_grads();
      ops::cast(local_.context(), flat(local_.context(), send.data(), shard_size_),
                flat(local_.context(), master_.data(), shard_size_));
      ops::copy(local_.context(), flat(local_.context(), p.data() + shard_begin_, shard_size_),
                flat(local_.context(), send.data(), shard_size_));
      group_.all_gather_v(std::span<const T>(send), p, counts_);
    }
  }

  /// Mean loss over the group of `batches` micro-batches per rank.
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    gather_parameters();
    double loss = local_.evaluate(fill, batches);
    group_.all_reduce(std::span<double>(&loss, 1), reduce_op::sum);
    return loss / static_cast<double>(dp_);
  }

 private:
  struct range {
    std::size_t begin, end;
  };

  // Each step's blocks asked for their windows (`calls` of them since the last step).
  static void require_windows_used(std::size_t& calls, const char* what) {
    if (calls == 0)
      throw std::logic_error(std::string("weft::data_parallel_step: ZeRO holds the block stack layer by layer, but no "
                                         "block asked for its ") + what +
                             ". The model's repeat<N, Block> must be the one plan<> found (a child of the "
                             "top-level sequential).");
    calls = 0;
  }

  // ---- ZeRO-3 layer by layer: two one-block windows ----
  // The shard the gathers send: the master (T = M) or, mixed, its rounded copy.
  const T* shard_values() const {
    if constexpr (mixed_precision) return param_shard_.data();
    else return master_.data();
  }
  struct window_slot {
    std::size_t offset = npos_param;  // the block it holds (or is receiving), npos: none
    bool in_flight = false, ahead = false;
    typename Comm::request request{};
    std::vector<int> counts;  // each rank's part of the block (alive while a gather is in flight)
  };
  static constexpr bool nonblocking_gather =
      requires(Comm& c, std::span<const T> in, std::span<T> out, std::span<const int> n) { c.iall_gather_v(in, out, n); };
  static constexpr bool nonblocking_reduce_scatter =
      requires(Comm& c, std::span<const T> in, std::span<T> out, std::span<const int> n) { c.ireduce_scatter_v(in, out, n); };
  // Every rank's part of [a, e) of the parameter block, from the shards, into dst (e - a
  // elements); started non-blocking into `slot` when given and the communicator can.
  void gather_range(std::size_t a, std::size_t e, T* dst, bool ahead, window_slot* slot = nullptr) {
    std::vector<int>& cnt = slot ? slot->counts : piece_counts_;
    counts_within(a, e, cnt);
    const std::size_t lo = std::clamp(shard_begin_, a, e), n = static_cast<std::size_t>(cnt[rank_]);
    const std::span<const T> in(n > 0 ? shard_values() + (lo - shard_begin_) : shard_values(), n);
    const std::span<T> out(dst, e - a);
    if constexpr (nonblocking_gather) {
      if (slot && ahead) {
        slot->request = group_.iall_gather_v(in, out, std::span<const int>(cnt));
        slot->in_flight = true;
        return;
      }
    }
    group_.all_gather_v(in, out, std::span<const int>(cnt));
  }
  void settle(window_slot& w) {
    if (w.in_flight) w.request.wait();
    w.in_flight = false;
  }
  void drop_windows() {
    for (auto& w : windows_) {
      settle(w);
      w.offset = npos_param;
      w.ahead = false;
    }
  }
  static T* on_window(void* self, std::size_t offset, std::size_t count, std::size_t next) {
    return static_cast<data_parallel_step*>(self)->window_for(offset, count, next);
  }
  // The window holding block [offset, offset + count), gathered now unless it was gathered
  // ahead; then block `next` started into the other window (the block that ran before this
  // one is finished with it).
  T* window_for(std::size_t offset, std::size_t count, std::size_t next) {
    ++window_calls_;
    T* base = local_.param_windows().data();
    const auto holding = [&](std::size_t o) -> int {
      for (int j = 0; j < 2; ++j)
        if (windows_[j].offset == o) return j;
      return -1;
    };
    int j = holding(offset);
    if (j >= 0) {
      settle(windows_[j]);
      if (windows_[j].ahead) ++window_hits_;
      windows_[j].ahead = false;
    } else {
      j = 1 - current_window_;
      settle(windows_[j]);
      gather_range(offset, offset + count, base + static_cast<std::size_t>(j) * count, false);
      windows_[j].offset = offset;
      windows_[j].ahead = false;
      ++window_gathers_;
    }
    current_window_ = j;
    if (next != npos_param && holding(next) < 0) {
      window_slot& w = windows_[1 - j];
      settle(w);
      gather_range(next, next + count, base + static_cast<std::size_t>(1 - j) * count, true, &w);
      w.offset = next;
      w.ahead = true;
      ++window_gathers_;
    }
    return base + static_cast<std::size_t>(j) * count;
  }

  // Backward reports: gradients at offsets >= from are final. Start every bucket inside.
  static void on_grads_final(void* self, std::size_t from) {
    auto& s = *static_cast<data_parallel_step*>(self);
    if (!s.reducing_) return;
    while (s.next_bucket_ < s.buckets_.size() && s.buckets_[s.next_bucket_].begin >= from) {
      s.start_bucket(s.next_bucket_++);
      ++s.overlapped_;
    }
  }
  void start_bucket(std::size_t b) {
    // At most buckets_in_flight reductions at once: an MPI library holds a temporary of each
    // in-flight bucket's size (Open MPI's non-blocking all-reduce does), so unbounded the whole
    // gradient block would be held twice. Waiting for an earlier bucket changes no sum.
    if (b >= buckets_in_flight) requests_[b - buckets_in_flight].wait();
    const auto g = local_.grads().subspan(buckets_[b].begin, buckets_[b].end - buckets_[b].begin);
    requests_[b] = group_.iall_reduce(g, reduce_op::sum);
  }

  void finish_reduction() {
    if constexpr (Zero <= 1) {
      while (next_bucket_ < buckets_.size()) start_bucket(next_bucket_++);  // whatever backward did not start
      for (auto& r : requests_) r.wait();
    } else if constexpr (grads_by_layer) {
      for (auto& w : grad_slots_) settle(w);  // the stack's last blocks
      // The layers before and after the stack: their gradients are whole in the arena.
      using LP = typename detail::window_plan_of<Local>::type;
      constexpr std::size_t cut = LP::window_begin, hole = LP::window_blocks * LP::window_block;
      const auto g = local_.grads();
      reduce_scatter_range(0, cut, g.data(), false);
      reduce_scatter_range(cut + hole, P, g.data() + cut, false);
    } else {
      reduce_scatter_range(0, P, local_.grads().data(), false);
    }
  }

  // Each rank's shard part of [a, e) of the gradient block summed over the group into
  // grad_shard_, from this rank's src (e - a elements), in pieces of bucket_bytes so that the
  // library's temporaries are a piece, not the whole range. `add_own`: this rank's part first
  // adds what grad_shard_ holds there (earlier micro-batches' sums), so the result is the total.
  // With `slot` and a communicator that can, [a, e) is one non-blocking reduce-scatter (a
  // block's window while the next block's backward runs).
  void reduce_scatter_range(std::size_t a, std::size_t e, T* src, bool add_own, window_slot* slot = nullptr) {
    if (add_own) {
      const std::size_t lo = std::clamp(shard_begin_, a, e), hi = std::clamp(shard_begin_ + shard_size_, a, e);
      if (lo < hi)
        ops::accumulate(local_.context(), flat(local_.context(), src + (lo - a), hi - lo),
                        flat(local_.context(), grad_shard_.data() + (lo - shard_begin_), hi - lo));
    }
    if constexpr (nonblocking_reduce_scatter) {
      if (slot) {
        std::vector<int>& cnt = slot->counts;
        counts_within(a, e, cnt);
        const std::size_t lo = std::clamp(shard_begin_, a, e), n = static_cast<std::size_t>(cnt[rank_]);
        slot->request = group_.ireduce_scatter_v(std::span<const T>(src, e - a),
                                                 std::span<T>(grad_shard_.data() + (n > 0 ? lo - shard_begin_ : 0), n),
                                                 std::span<const int>(cnt));
        slot->in_flight = true;
        return;
      }
    }
    for (std::size_t p = a; p < e; p += piece_) {
      const std::size_t q = std::min(e, p + piece_);
      counts_within(p, q, piece_counts_);
      const std::size_t lo = std::clamp(shard_begin_, p, q), n = static_cast<std::size_t>(piece_counts_[rank_]);
      group_.reduce_scatter_v(std::span<const T>(src + (p - a), q - p),
                              std::span<T>(grad_shard_.data() + (n > 0 ? lo - shard_begin_ : 0), n),
                              std::span<const int>(piece_counts_));
    }
  }
  // Each rank's part of [a, e): its shard clipped to the range.
  void counts_within(std::size_t a, std::size_t e, std::vector<int>& cnt) const {
    cnt.resize(dp_);
    for (std::size_t r = 0; r < dp_; ++r)
      cnt[r] = static_cast<int>(std::clamp(offsets_[r] + counts_[r], a, e) - std::clamp(offsets_[r], a, e));
  }

  // ---- ZeRO-2/3 layer by layer: two one-block gradient windows ----
  static T* on_grad_window(void* self, std::size_t offset, std::size_t count) {
    return static_cast<data_parallel_step*>(self)->grad_window_for(offset, count);
  }
  static void on_grad_window_done(void* self, std::size_t offset, std::size_t count) {
    static_cast<data_parallel_step*>(self)->grad_window_done(offset, count);
  }
  // A zeroed window for block [offset, offset + count): the one not holding the block whose
  // reduction may still be in flight (that one finishes while this block's backward runs).
  T* grad_window_for(std::size_t offset, std::size_t count) {
    ++grad_window_calls_;
    const int j = 1 - current_grad_window_;
    settle(grad_slots_[j]);
    T* w = local_.grad_windows().data() + static_cast<std::size_t>(j) * count;
    ops::zero(local_.context(), flat(local_.context(), w, count));
    grad_slots_[j].offset = offset;
    current_grad_window_ = j;
    return w;
  }
  // The block's backward has ended: the block before it (the other window) has finished
  // reducing, so its part of the shard is final; this block's window, with the shard's earlier
  // sum added to this rank's part, is reduce-scattered into the shard.
  void grad_window_done(std::size_t offset, std::size_t count) {
    const int j = current_grad_window_;
    settle(grad_slots_[1 - j]);
    T* w = local_.grad_windows().data() + static_cast<std::size_t>(j) * count;
    reduce_scatter_range(offset, offset + count, w, true, &grad_slots_[j]);
    ++grad_window_reductions_;
  }

  // The gradients this rank updates with: all of them (zero 0), or its shard.
  std::span<T> owned_grads() {
    if constexpr (Zero >= 2) return std::span<T>(grad_shard_);
    else if constexpr (Zero == 1) return local_.grads().subspan(shard_begin_, shard_size_);
    else return local_.grads();
  }

  double update() {
    if constexpr (layer_by_layer) drop_windows();  // the shards change: what the windows hold is stale
    if constexpr (Zero == 0) {
      return local_.apply_optimizer();  // identical on every rank
    } else {
      const auto& o = local_.options().optimizer;
      const double lr = local_.options().schedule.at(local_.step_count(), o.lr);
      local_.set_step_count(local_.step_count() + 1);
      const int t = static_cast<int>(local_.step_count());
      // Pointers indexed by the offset in the whole parameter block (shard vectors shifted back).
      const auto shift = static_cast<std::ptrdiff_t>(shard_begin_);
      T* grads = Zero >= 2 ? grad_shard_.data() - shift : local_.grads().data();
      if constexpr (mixed_precision) {
        // f32 master and moments updated from the bf16 gradients; the bf16 parameters of the
        // shard written from the new master (one rounding): into the arena (ZeRO-1/2, then
        // gathered below) or into the parameter shard (ZeRO-3, gathered before the next forward).
        T* copy = Zero == 3 ? param_shard_.data() - shift : local_.params().data();
        for (const auto& g : shard_groups_) {
          const std::size_t at = g.offset - shard_begin_;
          ops::adamw_step(local_.context(), flat(local_.context(), master_.data() + at, g.size),
                          flat(local_.context(), copy + g.offset, g.size),
                          flat(local_.context(), grads + g.offset, g.size),
                          flat(local_.context(), m_.data() + at, g.size),
                          flat(local_.context(), v_.data() + at, g.size), lr, o.beta1, o.beta2,
                          o.eps, g.decay ? o.weight_decay : 0.0, t);
        }
      } else {
        T* params = Zero == 3 ? master_.data() - shift : local_.params().data();
        for (const auto& g : shard_groups_) {
          const std::size_t at = g.offset - shard_begin_;
          ops::adamw_step(local_.context(), flat(local_.context(), params + g.offset, g.size),
                          flat(local_.context(), grads + g.offset, g.size),
                          flat(local_.context(), m_.data() + at, g.size),
                          flat(local_.context(), v_.data() + at, g.size), lr, o.beta1, o.beta2,
                          o.eps, g.decay ? o.weight_decay : 0.0, t);
        }
      }
      if constexpr (Zero <= 2) {
        // Every rank's updated shard into everyone's parameters. The send buffer is the
        // gradient shard just consumed (no buffer of its own): an MPI all-gather may not
        // read from the buffer it writes.
        auto p = local_.params();
        const auto send = owned_grads();
        ops::copy(local_.context(), flat(local_.context(), send.data(), shard_size_),
                  flat(local_.context(), p.data() + shard_begin_, shard_size_));
        group_.all_gather_v(std::span<const T>(send), p, counts_);
      }
      return lr;
    }
  }

  Comm& group_;
  local_step local_;
  std::size_t P;  // elements of this rank's parameter block
  std::size_t dp_, rank_;
  std::vector<int> counts_;
  std::vector<std::size_t> offsets_;
  std::size_t shard_begin_ = 0, shard_size_ = 0;
  std::vector<M> m_, v_, master_;        // shard-sized, in M: the only copy of the optimizer state ZeRO shards
  std::vector<T> grad_shard_, param_shard_;  // shard-sized, in T: ZeRO-2/3's gradients, mixed ZeRO-3's parameters
  std::vector<typename local_step::group> shard_groups_;
  std::vector<range> buckets_;
  std::vector<typename Comm::request> requests_;
  // The plan counts an MPI temporary per in-flight bucket (memory_model's comm_buffer_bytes).
  static constexpr std::size_t buckets_in_flight = gradient_buckets_in_flight;
  std::size_t piece_ = 1;          // elements of one reduce-scatter piece (ZeRO-2/3)
  std::vector<int> piece_counts_;  // each rank's share of the current piece
  std::size_t next_bucket_ = 0, overlapped_ = 0;
  bool reducing_ = false;
  window_slot windows_[2];  // ZeRO-3 layer by layer
  int current_window_ = 0;
  std::size_t window_calls_ = 0, window_gathers_ = 0, window_hits_ = 0;
  window_slot grad_slots_[2];  // ZeRO-2/3 layer by layer: the block written, the block reducing
  int current_grad_window_ = 1;
  std::size_t grad_window_calls_ = 0, grad_window_reductions_ = 0;
};

}  // namespace weft
