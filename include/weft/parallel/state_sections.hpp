#pragma once
// ---- state_sections: the model-state sections of one local arena ----
// Every local step lays out its arena with the same four model-state sections in front —
// parameters | gradients | master weights | AdamW first moment | second moment — followed by its
// own activation sections (plan<>'s single rank, tensor_parallel_plan<>'s shard, pipeline_step's
// stage). How many elements each state section has is decided here, once, for all three:
//   * parameters and gradients: the rank's whole parameter block (data_parallel_step reduces
//     the gradients in place; ZeRO-2 reduce-scatters from it, ZeRO-3 gathers into the parameters)
//   * master weights: the block again under mixed precision, else nothing
//   * the moments: the block again
// — unless the optimizer state is sharded (ZeRO ≥ 1): then data_parallel_step owns the
// moments (and, for ZeRO-3, the master shard) as shard-sized vectors and the arena has no
// master or moment section at all: the shard is the only copy (issue #7).
#include <cstddef>
#include <type_traits>

namespace weft {

/// Plan option: the local arena holds no optimizer state (master weights, AdamW moments)
/// because data_parallel_step keeps it in shards. Implied by a strategy with
/// data_parallel<..., zero<Z>>, Z >= 1; zero_local_plan_t adds it to a plan without one.
struct sharded_optimizer_state {
  using weft_sharded_optimizer_tag = void;
};

/// Plan option: ZeRO-3 — the local arena holds the parameters of the layers before and after
/// the model's block stack, and two windows of one block each that data_parallel_step gathers
/// the blocks into, one at a time, prefetching the next (block_window_hook, model/layer.hpp).
/// Implied by data_parallel<..., zero<3>>; zero_local_plan_t<Plan, 3> adds it.
struct sharded_parameters {
  using weft_sharded_parameters_tag = void;
};

/// Plan option: ZeRO-2 — the local arena holds the gradients of the layers before and after the
/// model's block stack, and two windows of one block each that the stack's backward writes
/// into, block by block; data_parallel_step reduce-scatters each into the ranks' gradient
/// shards when its backward ends (block_window_hook, model/layer.hpp). Implied by
/// data_parallel<..., zero<2>> and by ZeRO-3; zero_local_plan_t<Plan, 2> adds it.
struct sharded_gradients {
  using weft_sharded_gradients_tag = void;
};

namespace detail {
template <class T> struct is_sharded_gradients : std::bool_constant<requires { typename T::weft_sharded_gradients_tag; }> {};
template <class T> struct is_sharded_parameters : std::bool_constant<requires { typename T::weft_sharded_parameters_tag; }> {};
template <class T> struct is_sharded_optimizer_state : std::bool_constant<requires { typename T::weft_sharded_optimizer_tag; }> {};
}  // namespace detail

/// Elements of each model-state section of a local arena (the moments: each of m and v).
struct state_sections {
  std::size_t params = 0;
  std::size_t grads = 0;
  std::size_t master = 0;
  std::size_t moments = 0;
};

/// The state sections of a rank whose parameter block has `param_count` elements; `mixed`:
/// a master copy in a wider type; `optimizer_in_arena`: false when ZeRO shards the optimizer.
constexpr state_sections local_state_sections(std::size_t param_count, bool mixed, bool optimizer_in_arena) noexcept {
  return {param_count, param_count, optimizer_in_arena && mixed ? param_count : 0,
          optimizer_in_arena ? param_count : 0};
}

}  // namespace weft
