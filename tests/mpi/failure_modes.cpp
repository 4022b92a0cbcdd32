// Ways a run can go wrong on one rank; each must end every rank quickly with a non-zero
// status and (where weft is involved) one line naming the problem. Run as
//   mpirun -np N mpi_failure_modes <mode>
// by tests/mpi/expect_failure.cmake, which checks exit status, message and wall time.
// In every mode the ranks that did nothing wrong are blocked in a collective, so a job
// that does not end them hangs (and the check's time limit catches it).
#include "weft/comm/check.hpp"  // collective_check, local_check
#include "weft/comm/mpi.hpp"    // mpi_communicator, mpi::world

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using namespace weft;

namespace {

// What the innocent ranks do: wait in a world collective for the culprit.
void wait_for_everyone(mpi_communicator& world) {
  std::int32_t x[1] = {1};
  world.all_reduce(x, reduce_op::sum);
  std::fprintf(stderr, "rank %d: the collective completed, which this mode must prevent\n", world.rank());
}

int run(int argc, char** argv, std::string_view mode) {
  auto world = mpi::world(argc, argv, {.shutdown_timeout = std::chrono::seconds(2)});
  const int me = world.rank(), culprit = 1 % world.size();

  if (mode == "bad_input") {  // one rank cannot read its input; all reach the check
    // example-begin collective-check
    const bool ok = me != culprit;
    collective_check(world, ok, "failure_modes: bad input: shard " + std::to_string(me) + " is missing", 3);
    // example-end collective-check
  } else if (mode == "all_bad") {  // every rank fails the same check: still one line
    collective_check(world, false, "failure_modes: bad input everywhere", 3);
  } else if (mode == "bad_input_in_row") {  // a check over a sub-group ends the whole job
    auto row = world.split(me / 2, me);
    if (me / 2 == 0) collective_check(row, me != culprit, "failure_modes: bad input in row 0", 3);
  } else if (mode == "local") {  // only the culprit knows; the others are elsewhere
    if (me == culprit) local_check(world, false, "failure_modes: rank-local check failed", 4);
  } else if (mode == "size_mismatch") {  // a weft argument check on one rank
    std::vector<float> in(4), out(me == culprit ? 5 : 4 * world.size());
    world.all_gather(in, out);
  } else if (mode == "short_message") {  // a receive gets fewer elements than it asked for
    if (me == 0) {
      const float three[3] = {1, 2, 3};
      world.send(three, culprit, 9);
    } else if (me == culprit) {
      float four[4];
      world.recv(four, 0, 9);
    }
  } else if (mode == "exit_early") {  // std::exit without MPI_Finalize
    if (me == culprit) std::exit(3);
  } else if (mode == "return_early") {  // leaves main normally: the world's destructor runs
    if (me == culprit) return 0;
  } else if (mode == "exception") {  // escapes main: std::terminate
    if (me == culprit) throw std::runtime_error("failure_modes: uncaught exception");
  } else if (mode == "exception_unwinds") {  // caught in main after unwinding the world
    if (me == culprit) throw std::runtime_error("failure_modes: exception through the world");
  } else {
    world.abort(2, "failure_modes: unknown mode");
  }
  wait_for_everyone(world);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "exception_unwinds") {
    try {
      return run(argc, argv, mode);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "caught after the world was gone: %s\n", e.what());
      return 0;
    }
  }
  return run(argc, argv, mode);
}
