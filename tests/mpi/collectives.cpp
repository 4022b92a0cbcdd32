// Collectives and blocking point-to-point of mpi_communicator, for every element type and
// for sizes from empty to past the eager limit. Run with mpirun -np 2, 3, 4. Each rank
// computes the expected result from the inputs of all ranks, which it can reproduce.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include "weft/comm/mpi.hpp"  // mpi_communicator, mpi::world

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

using namespace weft;

static_assert(communicator<mpi_communicator>);

namespace {

// Small integers: exact in every type, and sums over up to 8 ranks fit in uint8_t.
template <class T>
T summand(int rank, std::size_t j) { return static_cast<T>((rank + 1) * static_cast<int>(j % 5 + 1)); }
template <class T>
T maxand(int rank, std::size_t j) { return static_cast<T>((rank * 37 + static_cast<int>(j % 101) * 11) % 101); }

template <class T>
void test_all_reduce(mpi_communicator& comm, std::size_t n) {
  const int me = comm.rank(), size = comm.size();
  std::vector<T> x(n);
  for (std::size_t j = 0; j < n; ++j) x[j] = summand<T>(me, j);
  comm.all_reduce(x, reduce_op::sum);
  for (std::size_t j = 0; j < n; ++j) {
    int expected = 0;
    for (int r = 0; r < size; ++r) expected += (r + 1) * static_cast<int>(j % 5 + 1);
    WEFT_CHECK(x[j] == static_cast<T>(expected));
  }

  for (std::size_t j = 0; j < n; ++j) x[j] = maxand<T>(me, j);
  comm.all_reduce(x, reduce_op::max);
  for (std::size_t j = 0; j < n; ++j) {
    T expected = maxand<T>(0, j);
    for (int r = 1; r < size; ++r) expected = std::max(expected, maxand<T>(r, j));
    WEFT_CHECK(x[j] == expected);
  }
}

template <class T>
void test_reduce_scatter(mpi_communicator& comm, std::size_t block) {
  const int me = comm.rank(), size = comm.size();
  // in: (size, block); block b on rank r holds summand(r, b + j)
  std::vector<T> in(block * size), out(block, T(99));
  for (int b = 0; b < size; ++b)
    for (std::size_t j = 0; j < block; ++j) in[b * block + j] = summand<T>(me, b + j);
  comm.reduce_scatter(in, out);
  for (std::size_t j = 0; j < block; ++j) {
    int expected = 0;
    for (int r = 0; r < size; ++r) expected += (r + 1) * static_cast<int>((me + j) % 5 + 1);
    WEFT_CHECK(out[j] == static_cast<T>(expected));
  }
}

template <class T>
void test_all_gather(mpi_communicator& comm, std::size_t block) {
  const int me = comm.rank(), size = comm.size();
  std::vector<T> in(block), out(block * size, T(0));  // out: (size, block)
  for (std::size_t j = 0; j < block; ++j) in[j] = maxand<T>(me, j);
  comm.all_gather(in, out);
  for (int r = 0; r < size; ++r)
    for (std::size_t j = 0; j < block; ++j) WEFT_CHECK(out[r * block + j] == maxand<T>(r, j));
}

template <class T>
void test_broadcast(mpi_communicator& comm, std::size_t n) {
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<T> x(n, T(1));
    if (comm.rank() == root)
      for (std::size_t j = 0; j < n; ++j) x[j] = maxand<T>(root + 3, j);
    comm.broadcast(x, root);
    for (std::size_t j = 0; j < n; ++j) WEFT_CHECK(x[j] == maxand<T>(root + 3, j));
  }
}

// Pairs (0,1), (2,3), ...: the lower rank sends first, the higher receives first.
template <class T>
void test_send_recv(mpi_communicator& comm, std::size_t n) {
  const int me = comm.rank(), partner = me ^ 1;
  if (partner >= comm.size()) return;
  std::vector<T> out(n), in(n, T(0));
  for (std::size_t j = 0; j < n; ++j) out[j] = maxand<T>(me, j);
  if (me < partner) {
    comm.send(out, partner, 7);
    comm.recv(in, partner, 8);
  } else {
    comm.recv(in, partner, 7);
    comm.send(out, partner, 8);
  }
  for (std::size_t j = 0; j < n; ++j) WEFT_CHECK(in[j] == maxand<T>(partner, j));
}

template <class T>
void test_type(mpi_communicator& comm) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{300000}}) {
    test_all_reduce<T>(comm, n);
    test_reduce_scatter<T>(comm, n);
    test_all_gather<T>(comm, n);
    test_broadcast<T>(comm, n);
    test_send_recv<T>(comm, n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  WEFT_CHECK(world.size() >= 1);
  WEFT_CHECK(world.rank() >= 0 && world.rank() < world.size());

  test_type<float>(world);
  test_type<double>(world);
  test_type<std::int32_t>(world);
  test_type<std::int64_t>(world);
  test_type<std::uint8_t>(world);
  test_type<bf16>(world);  // its bits as MPI_UINT16_T, summed by a user-defined MPI_Op (small integers are exact)
  test_type<f16>(world);   // likewise

  // A bf16 sum is computed in float and rounded once, to nearest even: on 2 ranks
  // (1 + 2^-7) + 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 and goes to the even 1 + 2^-6;
  // 1 + 2^-8 goes to 1. On more ranks every rank adds 2^-8 and the sum is a chain of roundings.
  if (world.size() == 2) {
    bf16 pair[2] = {bf16(world.rank() == 0 ? 1.0f + 0x1p-7f : 0x1p-8f), bf16(world.rank() == 0 ? 1.0f : 0x1p-8f)};
    world.all_reduce(pair, reduce_op::sum);
    WEFT_CHECK(static_cast<float>(pair[0]) == 1.0f + 0x1p-6f);
    WEFT_CHECK(static_cast<float>(pair[1]) == 1.0f);
  }
  // max keeps a NaN from any rank (as std::max over floats would not guarantee)
  bf16 nan_max[1] = {world.rank() == world.size() - 1 ? bf16(std::numeric_limits<float>::quiet_NaN()) : bf16(3.0f)};
  world.all_reduce(nan_max, reduce_op::max);
  WEFT_CHECK(static_cast<float>(nan_max[0]) != static_cast<float>(nan_max[0]));

  // Values beyond 2^31 survive the int64 path (no narrowing to int on the way).
  std::int64_t big[1] = {(std::int64_t{1} << 40) + world.rank()};
  world.all_reduce(big, reduce_op::max);
  WEFT_CHECK(big[0] == (std::int64_t{1} << 40) + world.size() - 1);

  // sum over uint8_t wraps modulo 256, as documented
  std::uint8_t wrap[1] = {200};
  world.all_reduce(wrap, reduce_op::sum);
  WEFT_CHECK(wrap[0] == static_cast<std::uint8_t>(200 * world.size()));

  world.barrier();
  // a second world() shares the session instead of starting MPI twice
  auto again = mpi::world(argc, argv);
  WEFT_CHECK(again.size() == world.size() && again.rank() == world.rank());
  return test::finish(world, "mpi_collectives");
}
