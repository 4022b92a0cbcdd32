#pragma once
// ---- local_step_wrapper: the base of a strategy part's wrapper around a local step ----
// A strategy part may wrap the local step distributed_step builds (its `local_step` hook,
// parallel/strategy.hpp): expert_parallel's expert_parallel_local is one. The wrapper is itself a
// local step for data_parallel_step, so it has the local step's whole interface; this base
// forwards every member to the wrapped step, and a wrapper declares only what it changes (name
// hiding: data_parallel_step calls the wrapper's type). What a wrapper typically changes:
//   accumulate(scale)               one micro-batch's forward and backward (returns its loss)
//   forward_backward(fill, n)       a pipeline's step (only when Local has `microbatches`)
//   evaluate(fill, batches)         mean loss, forward only
//   set_grad_ready(hook)            who hears "gradients from offset `from` on are final"
//   grad_norm_squared(), model_parallel_sum(x), norm_skipped()   the global norm's parts
// docs/parallelism.md ("Writing a strategy part") has a worked example, and
// tests/mpi/custom_part.cpp trains one under mpirun.
#include "weft/model/layer.hpp"  // grad_ready_hook, param_info

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

namespace detail {
// The type of the optimizer state (master weights, moments) of a local step: its M under mixed
// precision (training_step<precision<bf16, f32>>: f32), else its parameter type T.
template <class Local, class T>
struct local_master_type {
  using type = T;
};
template <class Local, class T>
  requires requires { typename Local::M; requires Local::mixed_precision; }
struct local_master_type<Local, T> {
  using type = typename Local::M;
};
}  // namespace detail

/// Forwards the local-step interface to a wrapped `Local` (see the top of the file).
template <class Local>
class local_step_wrapper {
 public:
  /// The wrapped step runs its own micro-batches (a pipeline: forward_backward(fill, replicas)).
  static constexpr bool own_schedule = requires { Local::microbatches; };
  using local_type = Local;
  using plan_type = typename Local::plan_type;
  using context_type = std::remove_cvref_t<decltype(std::declval<const Local&>().context())>;
  using group = typename Local::group;
  static constexpr std::size_t B = Local::B, S = Local::S, rows = Local::rows;
  /// A pipeline's micro-batches per step (1 for the steps that take them one at a time).
  static constexpr std::size_t microbatches = [] {
    if constexpr (own_schedule) return std::size_t{Local::microbatches};
    else return std::size_t{1};
  }();
  /// False under ZeRO >= 1, as the wrapped step's (data_parallel_step holds the optimizer state).
  static constexpr bool optimizer_state_in_arena = Local::optimizer_state_in_arena;
  /// The parameters' type and the master weights' (mixed precision), as the wrapped step's.
  using T = typename Local::T;
  using M = typename detail::local_master_type<Local, T>::type;
  static constexpr bool mixed_precision = !std::is_same_v<T, M>;

  explicit local_step_wrapper(Local&& local) : local_(std::move(local)) {}
  local_step_wrapper(local_step_wrapper&&) noexcept = default;

  /// The wrapped step.
  Local& local() { return local_; }
  const Local& local() const { return local_; }

  // ---- what data_parallel_step and the checkpoint engine use, forwarded ----
  auto params() const { return local_.params(); }
  auto grads() const { return local_.grads(); }
  auto tokens() const { return local_.tokens(); }
  auto targets() const { return local_.targets(); }
  void upload_batch() const
    requires requires(const Local& l) { l.upload_batch(); }
  {
    local_.upload_batch();
  }
  const std::vector<param_info>& parameter_infos() const { return local_.parameter_infos(); }
  const auto& parameter_groups() const { return local_.parameter_groups(); }
  const auto& options() const { return local_.options(); }
  auto& options() { return local_.options(); }
  const context_type& context() const { return local_.context(); }
  std::size_t step_count() const { return local_.step_count(); }
  void set_step_count(std::size_t s) { local_.set_step_count(s); }
  std::size_t resident_bytes() const { return local_.resident_bytes(); }
  double apply_optimizer()
    requires optimizer_state_in_arena
  {
    return local_.apply_optimizer();
  }
  std::size_t tp_rank() const
    requires requires(const Local& l) { l.tp_rank(); }
  {
    return local_.tp_rank();
  }
  auto adam_m() const
    requires requires(const Local& l) { l.adam_m(); }
  {
    return local_.adam_m();
  }
  auto adam_v() const
    requires requires(const Local& l) { l.adam_v(); }
  {
    return local_.adam_v();
  }
  auto master() const
    requires requires(const Local& l) { l.master(); }
  {
    return local_.master();
  }

  // ---- what a wrapper usually changes ----
  void set_grad_ready(grad_ready_hook hook) { local_.set_grad_ready(hook); }
  template <class Scale>
  double accumulate(Scale scale) {
    return local_.accumulate(scale);
  }
  template <class Fill>
    requires own_schedule
  double forward_backward(Fill&& fill, std::size_t replicas) {
    return local_.forward_backward(fill, replicas);
  }
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    return local_.evaluate(fill, batches);
  }
  decltype(auto) norm_skipped() const
    requires requires(const Local& l) { l.norm_skipped(); }
  {
    return local_.norm_skipped();
  }
  double grad_norm_squared() { return local_.grad_norm_squared(); }
  double model_parallel_sum(double part) { return local_.model_parallel_sum(part); }

 protected:
  Local local_;
};

}  // namespace weft
