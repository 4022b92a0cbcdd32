#pragma once
// ---- norm statistics: a norm layer's row statistics, in the precision's statistics type ----
// A norm layer keeps per-row statistics for its backward (layernorm: mean and 1/std; rmsnorm and
// qk_norm: 1/rms). The plan's precision decides their type, ops::stat_t<T>: f32 when the
// activations are bf16 or f16 (a rounded 1/std would scale a whole row's error; Megatron and
// Apex keep them in f32 too), the activation type itself for f32 and f64. They live at the
// start of the layer's kept block. A layer's kept_count<B, S> counts elements of the plan's
// type, which the layer does not know, so a norm reserves the widest case: two 16-bit slots per
// f32 statistic, plus one for the alignment of the first, rounded up to 64 elements so that what
// follows stays aligned (norm_stat_slots). In f32 and f64 plans the statistics take the first n
// slots and the rest is unused: about n elements per n statistics, against the width·rows of
// every activation a layer keeps.
#include "weft/ops/host_element.hpp"  // stat_t

#include <cstddef>
#include <cstdint>

namespace weft {

/// The granule of a norm layer's kept block, in elements: the block is rounded up to it, so
/// the activations a layer keeps after a norm start as aligned as the norm's own block (64
/// elements: 128 bytes in bf16, 256 in f32). A matrix product's operands must be 16-byte
/// aligned on a GPU (cuBLASLt refuses, or runs slower, otherwise), and a block of 2n + 1
/// elements would leave every later activation at an odd element.
inline constexpr std::size_t norm_stat_granule = 64;

/// Kept elements a norm layer reserves for `n` statistics, whatever the plan's element type:
/// 2n + 1, rounded up to norm_stat_granule.
template <std::size_t n>
inline constexpr std::size_t norm_stat_slots = (2 * n + 1 + norm_stat_granule - 1) / norm_stat_granule * norm_stat_granule;

/// The statistics (ops::stat_t<T>) at the start of a norm layer's kept block `kept`: the block
/// itself when they are of its type, else its first address aligned for them.
template <class T>
ops::stat_t<T>* norm_stats(T* kept) {
  using S = ops::stat_t<T>;
  if constexpr (sizeof(S) <= sizeof(T)) {
    return reinterpret_cast<S*>(kept);
  } else {
    static_assert(sizeof(S) <= 2 * sizeof(T) && alignof(S) <= 2 * alignof(T),
                  "weft::norm_stats: two kept slots per statistic, plus one for alignment, hold a statistic of at most twice the element's size.");
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(kept);
    return reinterpret_cast<S*>((a + alignof(S) - 1) & ~std::uintptr_t{alignof(S) - 1});
  }
}
template <class T>
const ops::stat_t<T>* norm_stats(const T* kept) {
  return norm_stats(const_cast<T*>(kept));
}

}  // namespace weft
