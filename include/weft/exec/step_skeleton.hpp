#pragma once
// ---- step_skeleton: what every local training step does the same way ----
// The local steps (training_step, tensor_parallel_step, pipeline_step) differ only in how one
// micro-batch's gradients are formed (through the whole model, or a tensor-parallel shard with
// its collectives: `accumulate(scale)`, `loss()`) or, for a pipeline, in how a whole step's are
// (its schedule: `schedule_gradients(fill, fault)`), and in their grad_norm_squared()
// (collective where the model is split) and apply_optimizer(). The skeleton writes the rest
// once: step() with the micro-batch loop, the fault hook's call count, the global norm, the
// non-finite and `accept` verdict (a skipped step updates nothing and is not counted),
// clipping, the optimizer, the metrics; clip_gradients(); and evaluate() for the steps whose
// micro-batch is one forward (a pipeline has its own).
// Dynamic loss scaling (f16 plans, train/loss_scaler.hpp): the micro-batches' loss gradient is
// multiplied by the scale; the norm is divided by it; a non-finite step (an overflow) halves
// it and updates nothing; a finite one divides the gradients by it before clipping.
// data_parallel_step wraps any of them and is a skeleton step too: it supplies the optional
// hooks below, which a local step leaves out —
//   data_replicas()            ranks that share the step's batch (each micro-batch's gradient
//                              scale and the tokens/s count them; 1 without)
//   begin_step()               before the gradients (ZeRO-3 gathers the parameters)
//   micro_batch_starts(i, k)   before micro-batch i of k (data parallelism reduces during the last)
//   finish_gradients()         after them (the rest of the reduction)
//   agree(metrics)             the loss and the non-finite verdict made the same on every rank
//   agree_accept(ok)           `accept`'s answer, the same on every rank
//   optimizer_grads()          the gradients the update reads, unscaled and clipped (a ZeRO shard)
//   scales_loss                whether dynamic loss scaling applies (default: f16 gradients)
#include "weft/core/dtype.hpp"        // f16
#include "weft/ops/clip.hpp"          // clip
#include "weft/ops/fill.hpp"          // zero
#include "weft/ops/host_element.hpp"  // compute_t
#include "weft/ops/scale.hpp"         // scale (unscaling f16 gradients)
#include "weft/train/loss_scaler.hpp" // loss_scaling, loss_scaler
#include "weft/train/optimizer.hpp"   // adamw, lr_schedule

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace weft {

/// Run-time settings of training (values, not types).
struct train_options {
  adamw optimizer{};
  lr_schedule schedule{};
  float grad_clip = 1.0f;       ///< global gradient-norm clip; <= 0 disables
  std::size_t grad_accum = 1;   ///< micro-batches per optimizer step
  std::uint64_t seed = 1337;    ///< parameter initialisation
  /// Fault injection, for tests of the stability guards: called at the start of each step with
  /// the number of steps this rank ran before it (skipped ones included); the result multiplies
  /// this rank's loss and gradients. 1 (or no hook) is a normal step; NaN makes the step
  /// non-finite, a large factor makes a spike.
  std::function<double(std::size_t call)> fault{};
  /// Dynamic loss scaling of f16 plans (ignored by other element types): loss_scaler.hpp.
  loss_scaling loss_scale{};
};

/// What one step reports.
struct step_metrics {
  std::size_t step = 0;       ///< optimizer steps done after this one
  double loss = 0;            ///< mean cross-entropy over the step's tokens (nats)
  double grad_norm = 0;       ///< global norm before clipping
  double lr = 0;
  double seconds = 0;
  double tokens_per_second = 0;
  double gflops = 0;          ///< achieved, PaLM's FLOP count
  /// The optimizer did not update: the loss or gradient norm was not finite (on any rank), or
  /// the step's `accept` predicate rejected it. Parameters, moments and the step count are as
  /// before the step; `lr` is the rate the next update will use; gradients are not clipped.
  bool skipped = false;
  bool nonfinite = false;        ///< skipped because the loss or the gradient norm is NaN or inf
  std::size_t skipped_total = 0; ///< skipped steps of this step object so far, this one included
  /// The loss scale this step's backward ran with (1 without dynamic loss scaling). A
  /// non-finite step halves it for the next one (loss_scaler.hpp).
  double loss_scale = 1;
};

/// The default `accept` of a step: every finite step updates.
struct update_always {
  constexpr bool operator()(double, double) const noexcept { return true; }
};

/// What a step's own part returns to the skeleton: the mean loss and the micro-batches run.
struct step_gradients {
  double loss = 0;
  std::size_t micro_batches = 0;
};

/// The shared part of the local steps (see the top of the file); `Derived` is the step.
template <class Derived>
class step_skeleton {
  // A batch source rather than a fill callable: it has next(tokens, targets) and is not callable.
  template <class Fill>
  static constexpr bool reads_source = requires(Fill& f, Derived& d) { f.next(d.tokens(), d.targets()); } &&
                                       !requires(Fill& f, Derived& d) { f(d.tokens(), d.targets()); };

 public:
  /// One optimizer step. `fill(tokens, targets)` writes each micro-batch's (batch, seq) ids (the
  /// same on every rank of a tensor-parallel group; on a pipeline's first and last stage);
  /// `accept(loss, grad_norm)` is asked before the update of a finite step (a spike_guard).
  /// `fill` may also be a batch source (anything with next(tokens, targets): a batch_sampler,
  /// a sharded_sampler), read once per micro-batch.
  template <class Fill, class Accept = update_always>
    requires std::predicate<Accept&, double, double>
  step_metrics step(Fill&& fill, Accept&& accept = {}) {
    if constexpr (reads_source<Fill>) {
      auto f = [&fill](auto tokens, auto targets) { fill.next(tokens, targets); };
      return run_step(f, accept);
    } else {
      return run_step(fill, accept);
    }
  }

  /// Mean validation loss over `batches` micro-batches from `fill`, forward only.
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    Derived& d = self();
    double sum = 0;
    for (std::size_t i = 0; i < batches; ++i) {
      if constexpr (reads_source<Fill>) fill.next(d.tokens(), d.targets());
      else fill(d.tokens(), d.targets());
      if constexpr (requires { d.upload_batch(); }) d.upload_batch();  // an arena in device memory
      sum += d.loss();
    }
    return batches ? sum / static_cast<double>(batches) : 0.0;
  }

  /// Steps skipped (non-finite, or rejected by their `accept`) by step() so far.
  std::size_t skipped_steps() const { return skipped_; }

  /// The dynamic loss scaler (active for f16 plans with train_options::loss_scale.enabled).
  const loss_scaler& loss_scale_state() const {
    init_scaler();
    return scaler_;
  }
  /// Restores the loss scale and its count of good steps (a checkpoint's; ignored when the
  /// scaler is inactive).
  void restore_loss_scale(double scale, std::size_t good_steps) {
    init_scaler();
    if (scaler_.active()) scaler_.restore(scale, good_steps);
  }

  /// Global L2 norm of the gradients; scales them down to grad_clip when above it. Returns the
  /// norm before (collective where the step's grad_norm_squared is).
  double clip_gradients() {
    Derived& d = self();
    const double norm = std::sqrt(d.grad_norm_squared());
    auto g = update_grads_of(d);
    ops::clip(d.context(), flat(d.context(), g), norm, d.options().grad_clip);
    return norm;
  }

 protected:
  /// One optimizer step: the step's gradients, the verdict, clipping, the update, the metrics.
  template <class Fill, class Accept>
  step_metrics run_step(Fill& fill, Accept& accept) {
    Derived& d = self();
    const auto t0 = std::chrono::steady_clock::now();
    const double fault = d.options().fault ? d.options().fault(calls_) : 1.0;
    ++calls_;
    init_scaler();
    constexpr bool scheduled = requires { d.schedule_gradients(fill, fault); };
    const double loss_scale = scheduled ? 1.0 : scaler_.scale();  // 1 unless f16 with scaling on (no pipelines)
    if constexpr (requires { d.begin_step(); }) d.begin_step();
    step_gradients sg;
    if constexpr (scheduled) sg = d.schedule_gradients(fill, fault);
    else sg = accumulate_micro_batches(fill, fault, loss_scale);
    if constexpr (requires { d.finish_gradients(); }) d.finish_gradients();
    step_metrics m;
    m.loss = sg.loss;  // the forward's loss: never scaled
    m.loss_scale = loss_scale;
    m.grad_norm = std::sqrt(d.grad_norm_squared()) / loss_scale;
    m.nonfinite = !std::isfinite(m.loss) || !std::isfinite(m.grad_norm);
    if constexpr (requires { d.agree(m); }) d.agree(m);  // the same loss and verdict on every rank
    m.skipped = m.nonfinite;
    if (m.nonfinite) scaler_.update(/*overflow=*/true);
    if constexpr (!std::is_same_v<std::remove_cvref_t<Accept>, update_always>) {
      if (!m.skipped) {  // every rank asks (a guard keeps the same history everywhere)
        bool ok = accept(m.loss, m.grad_norm);
        if constexpr (requires { d.agree_accept(ok); }) ok = d.agree_accept(ok);
        m.skipped = !ok;
      }
    }
    if (m.skipped) {
      ++skipped_;
      m.lr = d.options().schedule.at(d.step_count(), d.options().optimizer.lr);
    } else {
      auto g = update_grads_of(d);
      if constexpr (scalable<Derived>) ops::scale(d.context(), flat(d.context(), g), 1.0 / loss_scale);  // unscale
      ops::clip(d.context(), flat(d.context(), g), m.grad_norm, d.options().grad_clip);
      m.lr = d.apply_optimizer();
      scaler_.update(/*overflow=*/false);
    }
    m.skipped_total = skipped_;
    m.step = d.step_count();
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.tokens_per_second = static_cast<double>(Derived::rows * sg.micro_batches * replicas_of(d)) / m.seconds;
    m.gflops = static_cast<double>(Derived::plan_type::flops_per_token) * m.tokens_per_second * 1e-9;
    return m;
  }

  /// The gradients of grad_accum micro-batches, each scaled by fault · loss_scale / (rows ·
  /// grad_accum · data_replicas) (so that they sum, over the replicas, to the gradient of the
  /// mean loss, times `fault` and the loss scale), and their mean loss (times `fault`, not the
  /// loss scale).
  template <class Fill>
  step_gradients accumulate_micro_batches(Fill& fill, double fault, double loss_scale = 1.0) {
    Derived& d = self();
    auto g = d.grads();
    ops::zero(d.context(), flat(d.context(), g));
    using T = typename decltype(g)::value_type;
    const std::size_t k = d.options().grad_accum;
    const auto scale =
        static_cast<ops::compute_t<T>>(fault * loss_scale / static_cast<double>(Derived::rows * k * replicas_of(d)));
    double loss_sum = 0;
    for (std::size_t i = 0; i < k; ++i) {
      fill(d.tokens(), d.targets());
      if constexpr (requires { d.upload_batch(); }) d.upload_batch();  // an arena in device memory
      if constexpr (requires { d.micro_batch_starts(i, k); }) d.micro_batch_starts(i, k);
      loss_sum += d.accumulate(scale);
    }
    return {loss_sum / static_cast<double>(k) * fault, k};
  }

 private:
  // Whether the step scales its loss: its own say (scales_loss), else whether its gradients are
  // f16, the only element type that scales.
  template <class D>
  static consteval bool scales_loss_of() {
    if constexpr (requires { D::scales_loss; }) return D::scales_loss;
    else return requires(D& d) { requires std::same_as<typename decltype(d.grads())::value_type, f16>; };
  }
  template <class D>
  static constexpr bool scalable = scales_loss_of<D>();
  // The gradients the update reads (the step's hook, else all of them). Not named like the hook:
  // nvcc would find this one through the derived step and try to deduce it recursively.
  static auto update_grads_of(Derived& d) {
    if constexpr (requires { d.optimizer_grads(); }) return d.optimizer_grads();
    else return d.grads();
  }
  // Ranks sharing the step's batch.
  static std::size_t replicas_of(Derived& d) {
    if constexpr (requires { d.data_replicas(); }) return d.data_replicas();
    else return 1;
  }
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  // Made on first use: the derived step's options are not there yet when the base is built.
  void init_scaler() const {
    if (!scaler_ready_) scaler_ = loss_scaler(self().options().loss_scale, scalable<Derived>);
    scaler_ready_ = true;
  }
  std::size_t calls_ = 0, skipped_ = 0;  // step() calls and skipped steps (not checkpointed)
  mutable loss_scaler scaler_{};         // checkpointed (io/checkpoint.hpp)
  mutable bool scaler_ready_ = false;
};

}  // namespace weft
