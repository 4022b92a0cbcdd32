// Non-blocking point-to-point around a ring: several messages of several types in flight
// at once, completion by wait() and by polling test(), a request that completes on
// destruction, and a hand-made ring all-reduce checked against the closed form.
// Run with mpirun -np 2, 3, 4.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include "weft/comm/mpi.hpp"  // mpi_communicator, mpi::world

#include <cstdint>
#include <utility>
#include <vector>

using namespace weft;

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const int me = world.rank(), n = world.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;

  // an idle request is complete
  mpi_communicator::request idle;
  WEFT_CHECK(idle.test());
  idle.wait();

  // ---- many tags in flight: receives posted in reverse tag order, sends in tag order ----
  constexpr int tags = 8;
  constexpr std::size_t len = 50000;  // past the eager limit for the larger types
  std::vector<std::vector<float>> out(tags, std::vector<float>(len)), in(tags, std::vector<float>(len, -1.f));
  std::vector<mpi_communicator::request> receives, sends;
  for (int t = tags - 1; t >= 0; --t) receives.push_back(world.irecv(in[t], left, t));
  for (int t = 0; t < tags; ++t) {
    for (std::size_t j = 0; j < len; ++j) out[t][j] = static_cast<float>(me * 1000 + t * 10 + static_cast<int>(j % 10));
    sends.push_back(world.isend(out[t], right, t));
  }
  // complete half by polling test(), half by wait()
  for (int k = 0; k < tags; ++k) {
    if (k % 2 == 0) {
      while (!receives[k].test()) {
      }
      WEFT_CHECK(receives[k].test());  // stays complete
    } else {
      receives[k].wait();
    }
  }
  for (auto& s : sends) s.wait();
  for (int t = 0; t < tags; ++t)
    for (std::size_t j = 0; j < len; j += 997)
      WEFT_CHECK(in[t][j] == static_cast<float>(left * 1000 + t * 10 + static_cast<int>(j % 10)));

  // ---- mixed types on one pair of peers, matched by tag ----
  std::int64_t big_out[3] = {std::int64_t{1} << 45, me, -me}, big_in[3] = {};
  std::uint8_t bytes_out[5] = {1, 2, 3, 4, static_cast<std::uint8_t>(me)}, bytes_in[5] = {};
  {
    auto rb = world.irecv(bytes_in, left, 21);
    auto ri = world.irecv(big_in, left, 20);
    auto si = world.isend(big_out, right, 20);
    auto sb = world.isend(bytes_out, right, 21);
    // moved requests keep their operation; the moved-from ones are idle
    auto moved = std::move(ri);
    WEFT_CHECK(ri.test());
    moved.wait();
    rb.wait();
  }  // si and sb complete on destruction
  WEFT_CHECK(big_in[0] == (std::int64_t{1} << 45) && big_in[1] == left && big_in[2] == -left);
  WEFT_CHECK(bytes_in[0] == 1 && bytes_in[3] == 4 && bytes_in[4] == left);

  // ---- a request completes before its scope ends (so the buffer may be used after) ----
  double received[1] = {-1};
  {
    auto r = world.irecv(received, left, 30);
    double value[1] = {0.5 + me};
    world.send(value, right, 30);
  }
  WEFT_CHECK(received[0] == 0.5 + left);

  // ---- ring all-reduce by hand: n-1 steps pass the running sum to the right ----
  std::int32_t acc = me + 1, passing = me + 1;
  for (int step = 0; step < n - 1; ++step) {
    std::int32_t incoming[1] = {0};
    std::int32_t outgoing[1] = {passing};
    auto r = world.irecv(incoming, left, 40 + step);
    auto s = world.isend(outgoing, right, 40 + step);
    r.wait();
    s.wait();
    passing = incoming[0];
    acc += passing;
  }
  WEFT_CHECK(acc == n * (n + 1) / 2);

  return test::finish(world, "mpi_ring");
}
