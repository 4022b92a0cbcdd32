// The harness itself (mpi_check.hpp): `finish` fails a program that counted no check, so that a
// preset, a loop or a rank filter that silently ran nothing cannot pass.
//   mpirun -np N mpi_zero_checks none   counts no check: must exit 1 with one line
//   mpirun -np N mpi_zero_checks one    one passing check on the last rank only: must exit 0
//   mpirun -np N mpi_zero_checks fail   one failing check on the last rank only: must exit 1
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <string>

using namespace weft;

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string mode = argc == 2 ? argv[1] : "";
  test::require_args(world, test::one_of(mode, {"none", "one", "fail"}), "zero_checks: usage: none|one|fail", argc,
                     argv);
  const bool last = world.rank() + 1 == world.size();
  if (mode == "one" && last) WEFT_CHECK(world.size() >= 1);
  if (mode == "fail" && last) WEFT_CHECK(world.size() < 1);
  return test::finish(world, ("zero_checks " + mode).c_str());
}
