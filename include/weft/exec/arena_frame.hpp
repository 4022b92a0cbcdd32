#pragma once
// ---- arena_frame: the model's root frame over a local arena ----
// Every local arena a plan lays out (plan<>'s single rank, tensor_parallel_plan<>'s shard) has
// the sections a model's forward and backward run on: parameters, gradients, kept activations,
// the workspace and the token ids. The root frame points at them; the executor then adds what
// is its own (a gradient hook, a tensor-parallel group).
#include <cstddef>
#include <cstdint>

namespace weft {

/// The root frame over `arena` (laid out by `Plan`, whose section ids are Plan::params, grads,
/// kept, scratch and tokens); `with_grads`: whether backward may write gradients.
template <class Frame, class Plan>
Frame arena_frame(std::byte* arena, const typename Frame::context_type& ctx, bool with_grads) {
  using T = typename Frame::value_type;
  const auto at = [arena](auto s) { return arena + Plan::offsets[s]; };
  Frame f;
  f.params = reinterpret_cast<T*>(at(Plan::params));
  f.grads = with_grads ? reinterpret_cast<T*>(at(Plan::grads)) : nullptr;
  f.kept = reinterpret_cast<T*>(at(Plan::kept));
  f.scratch = reinterpret_cast<T*>(at(Plan::scratch));
  f.root_params = f.params;
  f.root_grads = f.grads;
  f.tokens = reinterpret_cast<const std::int32_t*>(at(Plan::tokens));
  f.ctx = ctx;
  return f;
}

}  // namespace weft
