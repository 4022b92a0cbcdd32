#pragma once
// ---- training_step: one compiled training step of a plan on the host backend ----
// Owns the plan's arena (allocated once, at construction); `step` runs grad-accumulation
// micro-batches of forward, fused softmax-cross-entropy and backward, then global-norm clipping
// and AdamW. Nothing is allocated per step. Deterministic given the seed: parameters are
// initialised per name (independent of layout), and the host ops reduce in a fixed order.
// A step whose loss or gradient norm is not finite (NaN, inf) does not update anything: no
// optimizer step, no step count, no learning-rate advance; the next step retries with the next
// batch (step_metrics::skipped). An optional predicate `accept(loss, grad_norm)` (a spike_guard,
// train/stability.hpp) may reject a finite step the same way.
#include "weft/exec/arena_frame.hpp"    // arena_frame
#include "weft/exec/arena_sections.hpp" // arena_sections
#include "weft/exec/context.hpp"        // host_context
#include "weft/exec/memory.hpp"         // context_buffer, copy_to_context, copy_from_context
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
#include "weft/data/splitmix64.hpp"     // splitmix64
#include "weft/exec/step_skeleton.hpp"  // step_skeleton, train_options, step_metrics, update_always

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <concepts>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace weft {

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
    ops::adamw_step(ctx, flat(ctx, params + g.offset, g.size), flat(ctx, grads + g.offset, g.size),
                    flat(ctx, m + g.offset, g.size), flat(ctx, v + g.offset, g.size), lr, o.beta1,
                    o.beta2, o.eps, g.decay ? o.weight_decay : 0.0, static_cast<int>(step));
  return lr;
}
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
                    flat(ctx, v + g.offset, g.size), lr, o.beta1, o.beta2, o.eps,
                    g.decay ? o.weight_decay : 0.0, static_cast<int>(step));
  return lr;
}
struct aligned_free {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
};
}  // namespace detail

/// Fills `params` (a model's parameter block) from each parameter's initialiser.
/// Each parameter has its own generator (seeded by its name), so parameters are independent:
/// a block of more than 16M elements is filled by up to 16 threads, one parameter at a time each,
/// with the same values as one thread (a 1.3B model: seconds instead of a minute).
template <class T>
void initialise_parameters(std::span<T> params, const std::vector<param_info>& infos, std::uint64_t seed) {
  auto one = [&](const param_info& p) {
    T* dst = params.data() + p.offset;
    if (!p.random_init) {
      std::fill_n(dst, p.size, static_cast<T>(p.init_constant));
      return;
    }
    splitmix64 g{detail::param_seed(seed, p.name)};
    for (std::size_t i = 0; i < p.size; ++i) dst[i] = static_cast<T>(p.init_stddev * detail::normal01(g));
  };
  const unsigned threads = std::min(16u, std::thread::hardware_concurrency());
  if (params.size() < (std::size_t{1} << 24) || threads < 2 || infos.size() < 2) {
    for (const auto& p : infos) one(p);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < infos.size();) one(infos[i]);
    });
  for (auto& t : pool) t.join();
}

/// Elements [begin, begin + out.size()) of the parameter block as initialise_parameters gives
/// them, computed in `Via` and converted to the element type of `out` (Via = f32 into bf16:
/// the rounded copy of the f32 master, as ops::cast makes it; Via = void: computed in the
/// element type itself). No temporary: each parameter's generator skips to the range's first
/// element, so a rank initialises its shard alone.
template <class Via = void, class Out>
void initialise_parameter_range(std::span<Out> out, std::size_t begin, const std::vector<param_info>& infos,
                                std::uint64_t seed) {
  using V = std::conditional_t<std::is_void_v<Via>, Out, Via>;
  const std::size_t end = begin + out.size();
  for (const auto& p : infos) {
    const std::size_t lo = std::max(p.offset, begin), hi = std::min(p.offset + p.size, end);
    if (lo >= hi) continue;
    Out* dst = out.data() + (lo - begin);
    if (!p.random_init) {
      std::fill_n(dst, hi - lo, static_cast<Out>(static_cast<V>(p.init_constant)));
      continue;
    }
    splitmix64 g{detail::param_seed(seed, p.name)};
    g.discard(2 * (lo - p.offset));  // each value draws two
    for (std::size_t i = 0; i < hi - lo; ++i)
      dst[i] = static_cast<Out>(static_cast<V>(p.init_stddev * detail::normal01(g)));
  }
}

/// The training step of `Plan`, its ops run by an execution context: the host (default), or a
/// device backend's (training_step<Plan, cuda::cuda_context>, backend/cuda/ops.cuh). Where the
/// context's memory is not the host's, the arena lives there and tokens()/targets() are host
/// buffers copied to it before each micro-batch; params()/grads() then point into that memory
/// (copy_params_to_host reads them).
template <class Plan, class Ctx = host_context>
class training_step
    : public step_skeleton<training_step<Plan, Ctx>>,
      public detail::arena_sections<training_step<Plan, Ctx>, Plan, typename Plan::value_type, typename Plan::master_type> {
  friend class step_skeleton<training_step>;
  using sections =
      detail::arena_sections<training_step<Plan, Ctx>, Plan, typename Plan::value_type, typename Plan::master_type>;

 public:
  using plan_type = Plan;
  using model = typename Plan::model;
  using T = typename Plan::value_type;
  /// Master weights and AdamW moments: T, or f32 under precision<bf16, f32>.
  using M = typename Plan::master_type;
  /// Per-token losses: float when T is narrower.
  using L = typename Plan::loss_type;
  static constexpr bool mixed_precision = Plan::mixed_precision;
  /// False under ZeRO >= 1 (data_parallel_step holds the optimizer state in shards).
  static constexpr bool optimizer_state_in_arena = Plan::optimizer_state_in_arena;
  static constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows, V = Plan::vocab_size;
  using context_type = Ctx;  ///< where its ops run
  using frame_type = frame<T, B, S, model, context_type>;
  /// Whether the host reads the arena directly (else tokens and parameters are copied).
  static constexpr bool host_arena = host_execution_context<Ctx>;

  training_step(training_step&&) noexcept = default;
  explicit training_step(train_options options = {}, Ctx ctx = {})
      : options_(options), ctx_(ctx), arena_(ctx_, Plan::bytes_per_rank), infos_(Plan::parameters()) {
    if (options_.grad_accum == 0) throw std::invalid_argument("weft::training_step: grad_accum is 0. Use at least 1 micro-batch per step.");
    // Decay and no-decay runs of the parameter block, merged where adjacent.
    for (const auto& p : infos_) {
      if (!groups_.empty() && groups_.back().decay == p.decay && groups_.back().offset + groups_.back().size == p.offset)
        groups_.back().size += p.size;
      else
        groups_.push_back({p.offset, p.size, p.decay});
    }
    if constexpr (!host_arena) {
      staged_tokens_.resize(rows);
      staged_targets_.resize(rows);
      initialise_through_host();
    } else if constexpr (mixed_precision && Plan::optimizer_state_in_arena) {
      // The master weights are initialised; the T parameters are their rounded copy.
      initialise_parameters(master(), infos_, options_.seed);
      ops::cast(ctx_, flat(ctx_, section(Plan::params), Plan::param_count),
                flat(ctx_, section<M>(Plan::master), Plan::param_count));
    } else if constexpr (mixed_precision || windowed_params) {
      // No master section (ZeRO keeps the optimizer state in shards): the same rounded values,
      // computed in M and rounded element by element (no model-sized temporary); under ZeRO-3
      // only the resident layers (the block stack comes through the windows).
      initialise_resident(params());
    } else {
      initialise_parameters(params(), infos_, options_.seed);
    }
  }

  // ---- the arena's sections ----
  template <class U = T>
  U* section(typename Plan::section_id s) const { return reinterpret_cast<U*>(arena_.get() + Plan::offsets[s]); }
  // params(), grads(), parameter_block_size(), windowed_params, windowed_grads,
  // param_windows(), grad_windows(), adam_m(), adam_v(), master(): arena_sections.hpp.
  using sections::windowed_params, sections::windowed_grads, sections::params, sections::master;
  /// The window hook of every frame of this step: the functions and `context` from the caller
  /// (parameters under windowed_params, gradients under windowed_grads, and only then); the hole
  /// (the block stack's offset and size) from the plan.
  void set_block_window(block_window_hook<T> hook)
    requires(windowed_params || windowed_grads)
  {
    window_ = sections::planned_window(hook, "training_step");
  }
  /// The micro-batch's token ids and targets, written by the host (a host copy when the arena is
  /// device memory: upload_batch() moves it there, as step() and evaluate() do).
  std::span<std::int32_t, rows> tokens() const {
    if constexpr (host_arena) return std::span<std::int32_t, rows>{section<std::int32_t>(Plan::tokens), rows};
    else return std::span<std::int32_t, rows>{const_cast<std::int32_t*>(staged_tokens_.data()), rows};
  }
  std::span<std::int32_t, rows> targets() const {
    if constexpr (host_arena) return std::span<std::int32_t, rows>{section<std::int32_t>(Plan::targets), rows};
    else return std::span<std::int32_t, rows>{const_cast<std::int32_t*>(staged_targets_.data()), rows};
  }
  /// Moves tokens()/targets() into the arena (nothing to do when the host owns it).
  void upload_batch() const {
    if constexpr (!host_arena) {
      copy_to_context(ctx_, section<std::int32_t>(Plan::tokens), staged_tokens_.data(), rows * sizeof(std::int32_t));
      copy_to_context(ctx_, section<std::int32_t>(Plan::targets), staged_targets_.data(), rows * sizeof(std::int32_t));
    }
  }
  /// The parameters, copied to a host vector (a checkpoint's or a comparison's view).
  std::vector<T> copy_params_to_host() const {
    std::vector<T> out(Plan::state.params);
    copy_from_context(ctx_, out.data(), section(Plan::params), out.size() * sizeof(T));
    return out;
  }
  std::span<T> logits() const { return {section(Plan::logits), Plan::logits_count}; }
  const std::vector<param_info>& parameter_infos() const { return infos_; }
  /// Bytes of the arena this step allocated (Plan::bytes_per_rank).
  static constexpr std::size_t resident_bytes() { return Plan::bytes_per_rank; }
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
  /// The token id whose embedding row gets no gradient from its lookups (torch's nn.Embedding
  /// padding_idx; load_hf_weights sets a config's pad_token_id), or -1 for none (the default).
  void set_padding_token(std::int64_t id) {
    if (id < -1 || id >= static_cast<std::int64_t>(V))
      throw std::invalid_argument("weft::training_step: padding token " + std::to_string(id) + " is outside the vocabulary of " +
                                  std::to_string(V) + ". Give a token id below it, or -1 for none.");
    padding_token_ = id;
  }
  std::int64_t padding_token() const { return padding_token_; }

  /// The model's frame over this arena (grads: whether backward may write gradients).
  frame_type root_frame(bool with_grads = true) const {
    frame_type f = arena_frame<frame_type, Plan>(arena_.get(), ctx_, with_grads);
    if (with_grads) f.grad_ready = grad_ready_;
    f.padding_token = padding_token_;
    if constexpr (windowed_params || windowed_grads)
      if (!window_)
        throw std::logic_error("weft::training_step: this plan keeps the block stack's parameters or gradients in "
                               "ZeRO shards (windowed_params, windowed_grads), but no window hook is set. Run it "
                               "inside data_parallel_step<..., zero<2>> or zero<3>, which gathers and reduces them.");
    f.window = window_;
    return f;
  }

  /// Logits for the token ids in tokens() (in logits(), (batch, seq, vocab)).
  void forward() { model::forward(root_frame(false), nullptr, section(Plan::logits)); }

  /// Mean loss of the micro-batch in tokens()/targets(), forward only.
  double loss() {
    forward();
    const auto losses = view<rows>(section<L>(Plan::losses));
    ops::softmax_cross_entropy_forward<rows, V>(ctx_, losses, view<rows, V>(section(Plan::logits)),
                                                view<rows>(section<std::int32_t>(Plan::targets)));
    return ops::mean_loss(ctx_, losses);
  }

  /// Forward and backward of one micro-batch, adding its gradients (scaled by `scale`) to grads();
  /// returns its mean loss.
  double accumulate(ops::compute_t<T> scale) {
    const frame_type f = root_frame(true);
    T* logits = section(Plan::logits);
    const auto losses = view<rows>(section<L>(Plan::losses));
    model::forward(f, nullptr, logits);  // (batch, seq, vocab)
    ops::softmax_cross_entropy_forward_backward<rows, V>(ctx_, losses, view<rows, V>(logits),
                                                         view<rows>(section<std::int32_t>(Plan::targets)), scale);
    model::backward(f, nullptr, logits, nullptr);  // logits now hold dlogits
    return ops::mean_loss(ctx_, losses);
  }

  // step(fill, accept), evaluate(fill, batches) and clip_gradients(): step_skeleton.hpp.

  /// Sum of squared gradients of this rank's parameters (model-parallel steps count replicas once).
  double grad_norm_squared() const {
    return ops::sum_squares(ctx_, flat(ctx_, section(Plan::grads), Plan::state.grads));
  }
  /// A squared-norm contribution summed over the model-parallel ranks: one rank here.
  double model_parallel_sum(double local) const { return local; }

  /// AdamW on every parameter group with this step's learning rate; advances the step count.
  double apply_optimizer()
    requires Plan::optimizer_state_in_arena
  {
    if constexpr (mixed_precision) {
      // The f32 master and moments are updated in f32 from the T gradients; the T parameters
      // are written from the new master in the same pass (one rounding).
      return detail::mixed_adamw_over_groups(ctx_, options_, step_, section<M>(Plan::master), section(Plan::params),
                                             section(Plan::grads), section<M>(Plan::adam_m), section<M>(Plan::adam_v),
                                             groups_);
    } else {
      return detail::adamw_over_groups(ctx_, options_, step_, section(Plan::params), section(Plan::grads),
                                       section(Plan::adam_m), section(Plan::adam_v), groups_);
    }
  }



 private:
  // A device arena: the initial values are computed on the host (the same values, per name, as
  // a host arena gets) and copied in; the T parameters are the master's rounded copy.
  void initialise_through_host() {
    if constexpr (mixed_precision || windowed_params) {
      if constexpr (mixed_precision && !windowed_params && Plan::optimizer_state_in_arena) {
        // One pass on the host: the master values; the parameters are their rounded copy, made
        // on the device by the same cast a step uses (bit for bit the host's rounding).
        std::vector<M> master_values(Plan::param_count);
        initialise_parameters(std::span<M>(master_values), infos_, options_.seed);
        copy_to_context(ctx_, section<M>(Plan::master), master_values.data(), master_values.size() * sizeof(M));
        ops::cast(ctx_, flat(ctx_, section(Plan::params), Plan::param_count),
                  flat(ctx_, static_cast<const M*>(section<M>(Plan::master)), Plan::param_count));
        return;
      }
      std::vector<T> rounded(Plan::state.params);
      initialise_resident(std::span<T>(rounded));
      copy_to_context(ctx_, section(Plan::params), rounded.data(), rounded.size() * sizeof(T));
      if constexpr (Plan::optimizer_state_in_arena) {
        std::vector<M> master_values(Plan::param_count);
        initialise_parameters(std::span<M>(master_values), infos_, options_.seed);
        copy_to_context(ctx_, section<M>(Plan::master), master_values.data(), master_values.size() * sizeof(M));
      }
    } else {
      std::vector<T> values(Plan::param_count);
      initialise_parameters(std::span<T>(values), infos_, options_.seed);
      copy_to_context(ctx_, section(Plan::params), values.data(), values.size() * sizeof(T));
    }
  }

  // The resident parameters' initial values (rounded from M under mixed precision): the whole
  // block, or the layers before and after the block stack (windowed).
  void initialise_resident(std::span<T> out) const {
    using Via = std::conditional_t<mixed_precision, M, void>;
    const std::size_t hole = Plan::window_blocks * Plan::window_block, cut = Plan::window_begin;
    if constexpr (!windowed_params) {
      initialise_parameter_range<Via>(out, 0, infos_, options_.seed);
    } else {
      initialise_parameter_range<Via>(out.first(cut), 0, infos_, options_.seed);
      initialise_parameter_range<Via>(out.subspan(cut), cut + hole, infos_, options_.seed);
    }
  }

  train_options options_;
  context_type ctx_{};

  /// A dense view of extents E... of the arena at `p`, in the context's memory (ops/views.hpp).
  template <std::size_t... E, class P>
  static auto view(P* p) noexcept {
    return packed_view<context_space_t<context_type>, E...>(p);
  }
  context_buffer<Ctx> arena_;
  std::vector<std::int32_t> staged_tokens_, staged_targets_;  // host copies (device arenas only)
  std::vector<param_info> infos_;
  std::vector<group> groups_;
  std::size_t step_ = 0;
  std::int64_t padding_token_ = -1;  // set_padding_token
  grad_ready_hook grad_ready_{};
  block_window_hook<T> window_{};
};

}  // namespace weft
