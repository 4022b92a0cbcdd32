#pragma once
// ---- time of a collective: alpha-beta on the link a mesh axis lands on ----
// Ranks follow Megatron-LM's order (strategy.hpp): tensor-parallel index fastest, then
// data-parallel, then pipeline; consecutive ranks fill a node, nodes fill an island. A group
// of n ranks along an axis of stride `stride` keeps k = min(n, gpus_per_node / stride) of
// its members in one node. Its collectives use:
//   * NVLink (intra_bandwidth, intra_latency) when the group is inside a node;
//   * InfiniBand when it spans nodes: its k members per node drive k NICs in parallel
//     (NCCL's channels), so the ring's bus bandwidth is min(k · inter_bandwidth, intra);
//   * the island link when it spans islands (island_bandwidth per member, likewise).
// The alpha-beta model (Hockney; Thakur, Rabenseifner & Gropp 2005; NCCL's ring and double
// binary tree):
//   ring all-reduce        2(n − 1)·α + 2(n − 1)/n · S/β
//   tree all-reduce        2·⌈log2 n⌉·α + 2·S/β
//   ring reduce-scatter /
//   all-gather             (n − 1)·α + (n − 1)/n · S/β
//   point-to-point         α + S/β
// S is the buffer in bytes (ring_*_bytes of comm_volume.hpp give the (n − 1)/n volumes), β
// the link bandwidth times `collective_efficiency` (what NCCL reaches of the wire: fitted
// once, docs/planner.md). An all-reduce takes the faster of ring and tree.
#include "weft/parallel/comm_volume.hpp"  // ring_all_reduce_bytes, ring_reduce_scatter_bytes
#include "weft/planner/cluster.hpp"       // cluster

#include <cstddef>
#include <cstdint>

namespace weft::planner {

/// What NCCL (or MPI) reaches of a link's bandwidth in large collectives.
inline constexpr double collective_efficiency = 0.80;

/// The kind of link a group's collectives cross.
enum class link_kind : unsigned char { none, intra_node, inter_node, inter_island };

constexpr const char* link_name(link_kind k) noexcept {
  return k == link_kind::none ? "none" : k == link_kind::intra_node ? "intra-node" : k == link_kind::inter_node ? "inter-node" : "inter-island";
}

/// A group's link: kind, per-member bandwidth (after collective_efficiency) and latency.
struct link_spec {
  link_kind kind = link_kind::none;
  double bandwidth = 1;  ///< bytes/s, effective
  double latency = 0;    ///< seconds per step
};

/// The link used by a group of `n` ranks along a mesh axis of stride `stride` (ranks between
/// consecutive members) on cluster `c`.
constexpr link_spec axis_link(const cluster& c, std::size_t n, std::size_t stride) noexcept {
  if (n <= 1) return {};
  const std::size_t gpn = c.gpus_per_node;
  const std::size_t span = n * stride;  // ranks from the first member to past the last
  const std::size_t per_node = stride >= gpn ? 1 : (gpn / stride < n ? gpn / stride : n);
  const double e = collective_efficiency;
  if (span <= gpn) return {link_kind::intra_node, c.intra_bandwidth * e, c.intra_latency};
  const double parallel = static_cast<double>(per_node);
  if (c.islands > 1 && span > c.nodes_per_island() * gpn) {
    const double bw = c.island_bandwidth * parallel < c.intra_bandwidth ? c.island_bandwidth * parallel : c.intra_bandwidth;
    return {link_kind::inter_island, bw * e, c.island_latency};
  }
  const double bw = c.inter_bandwidth * parallel < c.intra_bandwidth ? c.inter_bandwidth * parallel : c.intra_bandwidth;
  return {link_kind::inter_node, bw * e, c.inter_latency};
}

namespace detail {
constexpr double ceil_log2(std::size_t n) noexcept {
  double r = 0;
  for (std::size_t v = 1; v < n; v *= 2) r += 1;
  return r;
}
}  // namespace detail

/// Seconds of an all-reduce of `bytes` over `n` ranks on link `l` (ring or tree, the faster).
constexpr double all_reduce_seconds(double bytes, std::size_t n, const link_spec& l) noexcept {
  if (n <= 1 || bytes <= 0) return 0;
  const double nn = static_cast<double>(n);
  const double ring = 2 * (nn - 1) * l.latency + 2 * (nn - 1) / nn * bytes / l.bandwidth;
  const double tree = 2 * detail::ceil_log2(n) * l.latency + 2 * bytes / l.bandwidth;
  return ring < tree ? ring : tree;
}
/// Seconds of a ring reduce-scatter (or all-gather) of a `bytes` buffer over `n` ranks.
constexpr double reduce_scatter_seconds(double bytes, std::size_t n, const link_spec& l) noexcept {
  if (n <= 1 || bytes <= 0) return 0;
  const double nn = static_cast<double>(n);
  return (nn - 1) * l.latency + (nn - 1) / nn * bytes / l.bandwidth;
}
constexpr double all_gather_seconds(double bytes, std::size_t n, const link_spec& l) noexcept {
  return reduce_scatter_seconds(bytes, n, l);
}
/// Seconds of an all-to-all in which each of `n` ranks holds `bytes` for all of them: it keeps
/// 1/n and sends (n − 1)/n, one message per peer (pairwise exchange, as NCCL and MPI run it).
constexpr double all_to_all_seconds(double bytes, std::size_t n, const link_spec& l) noexcept {
  if (n <= 1 || bytes <= 0) return 0;
  const double nn = static_cast<double>(n);
  return (nn - 1) * l.latency + (nn - 1) / nn * bytes / l.bandwidth;
}
/// Seconds of one message of `bytes` on link `l`.
constexpr double p2p_seconds(double bytes, const link_spec& l) noexcept {
  return bytes <= 0 || l.kind == link_kind::none ? 0 : l.latency + bytes / l.bandwidth;
}

/// Ring bytes one rank sends for the data-parallel collectives of `psi` parameters under
/// ZeRO stage `zero` (comm_volume::data_parallel_bytes, as values; per step, M micro-batches).
constexpr std::uint64_t data_parallel_bytes(std::uint64_t psi, std::size_t n, std::size_t zero, std::size_t microbatches,
                                            std::size_t grad_bytes, std::size_t param_bytes) noexcept {
  switch (zero) {
    case 0: return ring_all_reduce_bytes(psi, n, grad_bytes);
    case 1: return ring_reduce_scatter_bytes(psi, n, grad_bytes) + ring_all_gather_bytes(psi, n, param_bytes);
    case 2: return microbatches * ring_reduce_scatter_bytes(psi, n, grad_bytes) + ring_all_gather_bytes(psi, n, param_bytes);
    default:
      return microbatches * (ring_reduce_scatter_bytes(psi, n, grad_bytes) + 2 * ring_all_gather_bytes(psi, n, param_bytes));
  }
}

}  // namespace weft::planner
