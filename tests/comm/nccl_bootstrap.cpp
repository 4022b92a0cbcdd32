// The NCCL bootstrap under mpirun, without a GPU: every rank's node placement from the host
// names (checked against the launcher's local rank), the device choice, and an ncclUniqueId
// made on rank 0 and broadcast through the MPI world (ncclGetUniqueId needs no device).
//   mpirun -np N mpi_nccl_bootstrap
#include "../mpi/mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/bootstrap.hpp>
#include <weft/comm/mpi.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

using namespace weft;

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();

  // ---- placement: one node here, so local rank = world rank ----
  const node_placement p = locate_on_nodes(world);
  WEFT_CHECK(p.nodes == 1);
  WEFT_CHECK(p.node == 0);
  WEFT_CHECK(p.local_size == world.size());
  WEFT_CHECK(p.local_rank == world.rank());
  WEFT_CHECK(p.launcher_local_rank.has_value());  // mpirun announces it
  if (p.launcher_local_rank) WEFT_CHECK(*p.launcher_local_rank == p.local_rank);

  // ---- the device: local rank modulo the devices; none here (cudaGetDeviceCount fails) ----
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) devices = 0;
  const int dev = choose_device(p.local_rank, devices);
  WEFT_CHECK(devices > 0 ? (dev >= 0 && dev < devices) : dev == -1);
  WEFT_CHECK(choose_device(5, 4) == 1 && choose_device(3, 8) == 3 && choose_device(0, 0) == -1);

  // ---- the unique id: made on rank 0, broadcast, equal everywhere ----
  std::array<std::uint8_t, NCCL_UNIQUE_ID_BYTES> id{};
  int made = 1;
  if (world.rank() == 0) {
    ncclUniqueId u;
    made = ncclGetUniqueId(&u) == ncclSuccess ? 1 : 0;
    std::memcpy(id.data(), &u, sizeof u);
  }
  const auto got = broadcast_bytes(world, id, 0);
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the bytes each rank holds
  for (auto b : got) h = (h ^ b) * 0x100000001b3ull;
  std::vector<std::int64_t> all(static_cast<std::size_t>(world.size()));
  const auto mine = static_cast<std::int64_t>(h >> 1);
  world.all_gather(std::span<const std::int64_t>(&mine, 1), std::span<std::int64_t>(all));
  for (auto x : all) WEFT_CHECK(x == all[0]);
  bool nonzero = false;
  for (auto b : got) nonzero = nonzero || b != 0;
  WEFT_CHECK(nonzero);
  if (world.rank() == 0) {
    WEFT_CHECK(made == 1);
    std::printf("nccl bootstrap: %d ranks on %d node(s), local rank from %s, device %d of %d, unique id shared\n",
                world.size(), p.nodes, p.launcher_variable.c_str(), dev, devices);
  }
  return test::finish(world, "nccl_bootstrap");
}
