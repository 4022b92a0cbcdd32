#pragma once
// ---- data_shard: which rows of the global batch this rank reads ----
// With `world` data-parallel ranks of local batch B, the global batch has world * B rows;
// rank r reads rows r*B .. r*B + B - 1. Samplers derive every row from its *global* index,
// so data parallelism over `world` ranks sees exactly the batches of one process with
// batch world * B.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace weft {

/// Rank and world size of data parallelism (defaults: a single process).
struct data_shard {
  std::size_t rank = 0;
  std::size_t world = 1;

  friend constexpr bool operator==(const data_shard&, const data_shard&) = default;
};

namespace detail {
// Throws std::invalid_argument unless 0 <= rank < world.
inline void check_shard(const data_shard& s, const char* entity) {
  if (s.world == 0 || s.rank >= s.world)
    throw std::invalid_argument(std::string(entity) + ": data_shard rank " + std::to_string(s.rank) +
                                " is not below world " + std::to_string(s.world) +
                                ". Use 0 <= rank < world, world >= 1.");
}
}  // namespace detail

}  // namespace weft
