#pragma once
// ---- training_step: one compiled training step of a plan on the host backend ----
// Owns the plan's arena (allocated once, at construction); `step` runs grad-accumulation
// micro-batches of forward, fused softmax-cross-entropy and backward, then global-norm clipping
// and AdamW. Nothing is allocated per step. Deterministic given the seed: parameters are
// initialised per name (independent of layout), and the host ops reduce in a fixed order.
#include "weft/exec/context.hpp"        // host_context
#include "weft/model/layer.hpp"          // frame, param_info
#include "weft/ops/adamw.hpp"            // adamw_step
#include "weft/ops/cast.hpp"             // cast
#include "weft/ops/clip.hpp"             // clip
#include "weft/ops/cross_entropy.hpp"    // softmax_cross_entropy_*
#include "weft/ops/fill.hpp"             // zero
#include "weft/ops/mean_loss.hpp"        // mean_loss
#include "weft/ops/sum_squares.hpp"      // sum_squares
#include "weft/parallel/plan.hpp"        // plan
#include "weft/train/optimizer.hpp"      // adamw, lr_schedule
#include "weft/train/splitmix64.hpp"     // splitmix64

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
#include <string_view>
#include <vector>

namespace weft {

/// Run-time settings of training (values, not types).
struct train_options {
  adamw optimizer{};
  lr_schedule schedule{};
  float grad_clip = 1.0f;       ///< global gradient-norm clip; <= 0 disables
  std::size_t grad_accum = 1;   ///< micro-batches per optimizer step
  std::uint64_t seed = 1337;    ///< parameter initialisation
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
};

namespace detail {
// Seed of one parameter: from the global seed and its name, so the same parameter gets the same
// values whatever the layout, sharding or model it sits in.
inline std::uint64_t param_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ seed;  // FNV-1a, then mixed
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return splitmix64::mix64(h);
}
// Standard normal by Box-Muller from splitmix64 (portable across standard libraries).
inline double normal01(splitmix64& g) {
  const double u1 = (static_cast<double>(g.next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(g.next() >> 11) * 0x1.0p-53;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}
// AdamW over runs {offset, size, decay} of a parameter block, with the learning rate of `step`
// (0-based, advanced here); returns that rate.
template <execution_context Ctx, class T, class Groups>
double adamw_over_groups(const Ctx& ctx, const train_options& options, std::size_t& step, T* params, T* grads, T* m,
                         T* v, const Groups& groups) {
  const auto& o = options.optimizer;
  const double lr = options.schedule.at(step, o.lr);
  ++step;
  for (const auto& g : groups)
    ops::adamw_step(ctx, params + g.offset, grads + g.offset, m + g.offset, v + g.offset, g.size, static_cast<float>(lr),
                    o.beta1, o.beta2, o.eps, g.decay ? o.weight_decay : 0.0f, static_cast<int>(step));
  return lr;
}
struct aligned_free {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
};
}  // namespace detail

/// Fills `params` (a model's parameter block) from each parameter's initialiser.
template <class T>
void initialise_parameters(std::span<T> params, const std::vector<param_info>& infos, std::uint64_t seed) {
  for (const auto& p : infos) {
    T* dst = params.data() + p.offset;
    if (!p.random_init) {
      std::fill_n(dst, p.size, static_cast<T>(p.init_constant));
      continue;
    }
    splitmix64 g{detail::param_seed(seed, p.name)};
    for (std::size_t i = 0; i < p.size; ++i) dst[i] = static_cast<T>(p.init_stddev * detail::normal01(g));
  }
}

/// The training step of `Plan` on the host.
template <class Plan>
class training_step {
 public:
  using plan_type = Plan;
  using model = typename Plan::model;
  using T = typename Plan::value_type;
  /// Master weights and AdamW moments: T, or f32 under precision<bf16, f32>.
  using M = typename Plan::master_type;
  /// Per-token losses: float when T is narrower.
  using L = typename Plan::loss_type;
  static constexpr bool mixed_precision = Plan::mixed_precision;
  static constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows, V = Plan::vocab_size;
  using context_type = host_context;  ///< where its ops run
  using frame_type = frame<T, B, S, model, context_type>;

  training_step(training_step&&) noexcept = default;
  explicit training_step(train_options options = {})
      : options_(options),
        arena_(static_cast<std::byte*>(::operator new[](Plan::bytes_per_rank, std::align_val_t{64}))),
        infos_(Plan::parameters()) {
    if (options_.grad_accum == 0) throw std::invalid_argument("weft::training_step: grad_accum is 0. Use at least 1 micro-batch per step.");
    std::memset(arena_.get(), 0, Plan::bytes_per_rank);  // touch every page now, not during the first step
    // Decay and no-decay runs of the parameter block, merged where adjacent.
    for (const auto& p : infos_) {
      if (!groups_.empty() && groups_.back().decay == p.decay && groups_.back().offset + groups_.back().size == p.offset)
        groups_.back().size += p.size;
      else
        groups_.push_back({p.offset, p.size, p.decay});
    }
    if constexpr (mixed_precision) {
      // The master weights are initialised; the T parameters are their rounded copy.
      initialise_parameters(master(), infos_, options_.seed);
      ops::cast(ctx_, section(Plan::params), section<M>(Plan::master), Plan::param_count);
    } else {
      initialise_parameters(params(), infos_, options_.seed);
    }
  }

  // ---- the arena's sections ----
  template <class U = T>
  U* section(typename Plan::section_id s) const { return reinterpret_cast<U*>(arena_.get() + Plan::offsets[s]); }
  std::span<T> params() const { return {section(Plan::params), Plan::param_count}; }
  std::span<T> grads() const { return {section(Plan::grads), Plan::param_count}; }
  std::span<M> adam_m() const { return {section<M>(Plan::adam_m), Plan::param_count}; }
  std::span<M> adam_v() const { return {section<M>(Plan::adam_v), Plan::param_count}; }
  /// The optimizer's copy of the parameters (mixed precision only; empty otherwise).
  std::span<M> master() const { return {section<M>(Plan::master), mixed_precision ? Plan::param_count : 0}; }
  std::span<std::int32_t, rows> tokens() const { return std::span<std::int32_t, rows>{section<std::int32_t>(Plan::tokens), rows}; }
  std::span<std::int32_t, rows> targets() const { return std::span<std::int32_t, rows>{section<std::int32_t>(Plan::targets), rows}; }
  std::span<T> logits() const { return {section(Plan::logits), Plan::logits_count}; }
  const std::vector<param_info>& parameter_infos() const { return infos_; }
  const train_options& options() const { return options_; }
  const context_type& context() const { return ctx_; }
  train_options& options() { return options_; }
  std::size_t step_count() const { return step_; }
  /// Called during backward as gradients become final (see grad_ready_hook); {} to stop.
  void set_grad_ready(grad_ready_hook hook) { grad_ready_ = hook; }
  /// The contiguous runs of parameters with and without weight decay.
  struct group {
    std::size_t offset, size;
    bool decay;
  };
  const std::vector<group>& parameter_groups() const { return groups_; }
  void set_step_count(std::size_t s) { step_ = s; }

  /// The model's frame over this arena (grads: whether backward may write gradients).
  frame_type root_frame(bool with_grads = true) const {
    frame_type f;
    f.params = section(Plan::params);
    f.grads = with_grads ? section(Plan::grads) : nullptr;
    f.kept = section(Plan::kept);
    f.scratch = section(Plan::scratch);
    f.root_params = f.params;
    f.root_grads = f.grads;
    f.tokens = section<std::int32_t>(Plan::tokens);
    if (with_grads) f.grad_ready = grad_ready_;
    f.ctx = ctx_;
    return f;
  }

  /// Logits for the token ids in tokens() (in logits(), (batch, seq, vocab)).
  void forward() { model::forward(root_frame(false), nullptr, section(Plan::logits)); }

  /// Mean loss of the micro-batch in tokens()/targets(), forward only.
  double loss() {
    forward();
    L* losses = section<L>(Plan::losses);
    ops::softmax_cross_entropy_forward<rows, V>(ctx_, losses, section(Plan::logits), section<std::int32_t>(Plan::targets));
    return ops::mean_loss(ctx_, losses, rows);
  }

  /// Forward and backward of one micro-batch, adding its gradients (scaled by `scale`) to grads();
  /// returns its mean loss.
  double accumulate(ops::compute_t<T> scale) {
    const frame_type f = root_frame(true);
    T* logits = section(Plan::logits);
    L* losses = section<L>(Plan::losses);
    model::forward(f, nullptr, logits);                                       // (batch, seq, vocab)
    ops::softmax_cross_entropy_forward_backward<rows, V>(ctx_, losses, logits, section<std::int32_t>(Plan::targets), scale);
    model::backward(f, nullptr, logits, nullptr);                             // logits now hold dlogits
    return ops::mean_loss(ctx_, losses, rows);
  }

  /// One optimizer step. `fill(tokens, targets)` writes each micro-batch's (batch, seq) ids.
  template <class Fill>
  step_metrics step(Fill&& fill) {
    const auto t0 = std::chrono::steady_clock::now();
    ops::zero(ctx_, section(Plan::grads), Plan::param_count);
    const std::size_t k = options_.grad_accum;
    const auto scale = static_cast<ops::compute_t<T>>(1.0 / static_cast<double>(rows * k));
    double loss_sum = 0;
    for (std::size_t i = 0; i < k; ++i) {
      fill(tokens(), targets());
      loss_sum += accumulate(scale);
    }
    step_metrics m;
    m.loss = loss_sum / static_cast<double>(k);
    m.grad_norm = clip_gradients();
    m.lr = apply_optimizer();
    m.step = step_;
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.tokens_per_second = static_cast<double>(rows * k) / m.seconds;
    m.gflops = static_cast<double>(Plan::flops_per_token) * m.tokens_per_second * 1e-9;
    return m;
  }

  /// Sum of squared gradients of this rank's parameters (model-parallel steps count replicas once).
  double grad_norm_squared() const { return ops::sum_squares(ctx_, section(Plan::grads), Plan::param_count); }
  /// A squared-norm contribution summed over the model-parallel ranks: one rank here.
  double model_parallel_sum(double local) const { return local; }

  /// Global L2 norm of grads(); scales them down to grad_clip when above it. Returns the norm before.
  double clip_gradients() {
    const double norm = std::sqrt(grad_norm_squared());
    ops::clip(ctx_, section(Plan::grads), Plan::param_count, norm, options_.grad_clip);
    return norm;
  }

  /// AdamW on every parameter group with this step's learning rate; advances the step count.
  double apply_optimizer() {
    if constexpr (mixed_precision) {
      // The f32 master and moments are updated in f32 from the T gradients; the T parameters
      // are written from the new master in the same pass (one rounding).
      const auto& o = options_.optimizer;
      const double lr = options_.schedule.at(step_, o.lr);
      ++step_;
      M* master_w = section<M>(Plan::master);
      T* params_w = section(Plan::params);
      const T* grads_w = section(Plan::grads);
      M* m = section<M>(Plan::adam_m);
      M* v = section<M>(Plan::adam_v);
      for (const auto& g : groups_)
        ops::adamw_step(ctx_, master_w + g.offset, params_w + g.offset, grads_w + g.offset, m + g.offset,
                        v + g.offset, g.size, static_cast<float>(lr), o.beta1, o.beta2, o.eps,
                        g.decay ? o.weight_decay : 0.0f, static_cast<int>(step_));
      return lr;
    } else {
      return detail::adamw_over_groups(ctx_, options_, step_, section(Plan::params), section(Plan::grads),
                                       section(Plan::adam_m), section(Plan::adam_v), groups_);
    }
  }

  /// Mean validation loss over `batches` micro-batches from `fill`.
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    double sum = 0;
    for (std::size_t i = 0; i < batches; ++i) {
      fill(tokens(), targets());
      sum += loss();
    }
    return batches ? sum / static_cast<double>(batches) : 0.0;
  }

 private:
  train_options options_;
  context_type ctx_{};
  std::unique_ptr<std::byte[], detail::aligned_free> arena_;
  std::vector<param_info> infos_;
  std::vector<group> groups_;
  std::size_t step_ = 0;
  grad_ready_hook grad_ready_{};
};

}  // namespace weft
