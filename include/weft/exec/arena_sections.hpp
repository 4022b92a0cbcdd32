#pragma once
// ---- the model-state sections of a local step's arena, one set of accessors ----
// training_step (plan<>) and tensor_parallel_step (tensor_parallel_plan<>) lay out the same
// sections (state_sections.hpp): parameters, gradients, the f32 master, the AdamW moments and,
// under ZeRO-2/3 layer by layer, the two one-block parameter and gradient windows. This base
// gives both the same accessors over `Derived::section<U>(id)`, and checks the window hook
// data_parallel_step hands them against the plan.
#include "weft/model/layer.hpp"  // block_window_hook

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace weft::detail {

template <class Derived, class Plan, class T, class M>
class arena_sections {
 public:
  /// The parameters the arena holds: the whole block, or under ZeRO-3 layer by layer
  /// (windowed_params) the layers before and after the block stack, back to back
  /// (Plan::resident_param_count).
  std::span<T> params() const { return {section_of<T>(Plan::params), Plan::state.params}; }
  /// The gradients the arena holds: the whole block, or under ZeRO-2/3 layer by layer
  /// (windowed_grads) the layers before and after the block stack (Plan::resident_grad_count).
  std::span<T> grads() const { return {section_of<T>(Plan::grads), Plan::state.grads}; }
  /// Elements of the model's (or this rank's shard's) parameter block: the offsets of
  /// parameter_infos() and of data_parallel_step's shards; params() and grads() may hold fewer.
  static constexpr std::size_t parameter_block_size() { return Plan::param_count; }
  /// ZeRO-3: the block stack's parameters are not resident; they come one block at a time
  /// through a window that data_parallel_step fills (set_block_window, block_window_hook).
  static constexpr bool windowed_params = Plan::windowed_params;
  /// ZeRO-2 and 3: nor are its gradients; each block's backward writes into a window that
  /// data_parallel_step hands out and reduce-scatters into the gradient shards.
  static constexpr bool windowed_grads = Plan::windowed_grads;
  /// The two one-block parameter windows (windowed_params only; empty otherwise).
  std::span<T> param_windows() const { return {section_of<T>(Plan::windows), Plan::section_elements[Plan::windows]}; }
  /// The two one-block gradient windows (windowed_grads only; empty otherwise).
  std::span<T> grad_windows() const {
    return {section_of<T>(Plan::grad_windows), Plan::section_elements[Plan::grad_windows]};
  }
  /// The AdamW moments, in M (only when the arena holds them: not under ZeRO >= 1, whose
  /// moments are data_parallel_step's shards).
  std::span<M> adam_m() const
    requires Plan::optimizer_state_in_arena
  {
    return {section_of<M>(Plan::adam_m), Plan::state.moments};
  }
  std::span<M> adam_v() const
    requires Plan::optimizer_state_in_arena
  {
    return {section_of<M>(Plan::adam_v), Plan::state.moments};
  }
  /// The optimizer's f32 copy of the parameters (mixed precision without ZeRO only; empty
  /// otherwise).
  std::span<M> master() const { return {section_of<M>(Plan::master), Plan::state.master}; }

 protected:
  /// `hook` with the plan's hole (the block stack's offset and size), after checking that its
  /// functions match the plan: parameters under windowed_params, gradients under
  /// windowed_grads, and only then.
  static block_window_hook<T> planned_window(block_window_hook<T> hook, const char* step) {
    if ((hook.params_fn != nullptr) != windowed_params || (hook.grads_fn != nullptr) != windowed_grads ||
        (hook.grads_fn != nullptr) != (hook.grads_done != nullptr))
      throw std::logic_error(std::string("weft::") + step +
                             "::set_block_window: the hook's parameter and gradient functions must match the plan's "
                             "windowed_params and windowed_grads.");
    hook.begin = Plan::window_begin;
    hook.size = Plan::window_blocks * Plan::window_block;
    return hook;
  }

 private:
  template <class U>
  U* section_of(typename Plan::section_id s) const {
    return static_cast<const Derived*>(this)->template section<U>(s);
  }
};

}  // namespace weft::detail
