#pragma once
// ---- bootstrap: where a rank sits on the machines, and an opaque id shared from one rank ----
// What a device communicator (NCCL) needs from the host world before it exists:
//   * each rank's place on its node (local rank, ranks per node, node index), computed from the
//     host names through the host communicator itself, and checked against what the launcher
//     says (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, MPICH/PMI's);
//   * the device a rank uses: its local rank modulo the devices it sees;
//   * an opaque id (ncclUniqueId: 128 bytes) made on one rank and broadcast to all.
// Plain C++ over any `communicator` (MPI under mpirun or srun, or a world of one); no CUDA here.
#include "weft/comm/communicator.hpp"  // communicator

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace weft {

/// A rank's place on the machines of a job.
struct node_placement {
  int local_rank = 0;  ///< rank among the ranks on the same node, in world-rank order
  int local_size = 1;  ///< ranks on this node
  int node = 0;        ///< index of this node, in order of the lowest world rank on each
  int nodes = 1;       ///< nodes in the job
  /// The local rank the launcher announced (environment), if any.
  std::optional<int> launcher_local_rank;
  /// Which variable announced it ("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", ...), or empty.
  std::string launcher_variable;
};

namespace detail {
// FNV-1a of the host name: equal on one node, different across nodes (a collision would merge
// two nodes; 64 bits make that negligible for any real job).
inline std::int64_t host_key() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return 0;
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char* p = name.data(); *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  return static_cast<std::int64_t>(h & 0x7fffffffffffffffull);
}
}  // namespace detail

/// The local rank the launcher announces in the environment: Open MPI, Slurm (srun), MPICH/Hydra
/// and PMIx, in that order; nothing when run without a launcher.
inline std::optional<int> launcher_local_rank(std::string* variable = nullptr) {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                        "PMIX_LOCAL_RANK"}) {
    if (const char* s = std::getenv(v); s && *s) {
      char* end = nullptr;
      const long r = std::strtol(s, &end, 10);
      if (*end == '\0' && r >= 0) {
        if (variable) *variable = v;
        return static_cast<int>(r);
      }
    }
  }
  return std::nullopt;
}

/// Collective over `world`: every rank's node placement, from the host names (one all_gather of
/// an int64 per rank), with the launcher's local rank beside it.
template <communicator C>
node_placement locate_on_nodes(C& world) {
  const int n = world.size(), me = world.rank();
  const std::int64_t mine = detail::host_key();
  std::vector<std::int64_t> keys(static_cast<std::size_t>(n));
  world.all_gather(std::span<const std::int64_t>(&mine, 1), std::span<std::int64_t>(keys));
  node_placement p;
  p.local_rank = 0;
  p.local_size = 0;
  // Nodes are numbered by their lowest world rank; a key seen for the first time opens a node.
  std::vector<std::int64_t> seen;
  for (int r = 0; r < n; ++r) {
    const auto k = keys[static_cast<std::size_t>(r)];
    bool known = false;
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == k) known = true;
    if (!known) seen.push_back(k);
    if (k == mine) {
      if (r < me) ++p.local_rank;
      ++p.local_size;
    }
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i] == mine) p.node = static_cast<int>(i);
  p.nodes = static_cast<int>(seen.size());
  p.launcher_local_rank = launcher_local_rank(&p.launcher_variable);
  return p;
}

/// The device a rank drives: its local rank modulo the devices it sees. Returns -1 when there is
/// none (the caller says so in one line); with more ranks than devices on a node, ranks share.
constexpr int choose_device(int local_rank, int device_count) noexcept {
  return device_count <= 0 ? -1 : local_rank % device_count;
}

/// Collective over `world`: the `N` bytes `root` holds (e.g. an ncclUniqueId), on every rank.
template <std::size_t N, communicator C>
std::array<std::uint8_t, N> broadcast_bytes(C& world, const std::array<std::uint8_t, N>& on_root, int root = 0) {
  std::array<std::uint8_t, N> bytes = on_root;  // only root's content matters
  world.broadcast(std::span<std::uint8_t>(bytes), root);
  return bytes;
}

}  // namespace weft
