#pragma once
// ---- placement: offsets of consecutive aligned blocks, computed at compile time ----
// The one algorithm behind arenas and the static memory plan: given blocks of (bytes,
// alignment), place each at the next offset that satisfies both its own alignment and the
// arena's, in order. Being a constexpr function on std::array, it serves types
// (arena_layout) and plans built from values alike.
#include <array>
#include <cstddef>

namespace weft {

/// A block to place: its size in bytes and its required alignment (a power of two).
struct block_request {
  std::size_t bytes = 0;
  std::size_t alignment = 1;
};

/// Where the blocks went: `offsets[k]` of block k, and the total `bytes` (rounded up to
/// the arena alignment, so that arenas can be laid end to end).
template <std::size_t N>
struct block_placement {
  std::array<std::size_t, N> offsets{};
  std::size_t bytes = 0;
};

/// `n` rounded up to a multiple of `alignment` (a power of two).
constexpr std::size_t align_up(std::size_t n, std::size_t alignment) noexcept {
  return (n + alignment - 1) & ~(alignment - 1);
}

/// True for 1, 2, 4, 8, ...
constexpr bool is_power_of_two(std::size_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

/// Places `blocks` in order; every offset is a multiple of `alignment` and of the block's
/// own alignment (both powers of two).
template <std::size_t N>
constexpr block_placement<N> place_blocks(const std::array<block_request, N>& blocks, std::size_t alignment = 1) {
  block_placement<N> p;
  std::size_t cursor = 0;
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t a = blocks[k].alignment > alignment ? blocks[k].alignment : alignment;
    p.offsets[k] = align_up(cursor, a);
    cursor = p.offsets[k] + blocks[k].bytes;
  }
  p.bytes = align_up(cursor, alignment);
  return p;
}

}  // namespace weft
