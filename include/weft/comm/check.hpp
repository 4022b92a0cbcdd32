#pragma once
// ---- run-time input checks that end the whole job, never part of it ----
// A bad input seen by one rank (a missing shard, a config that disagrees with the world
// size) must not leave that rank exiting while the others wait forever in the next
// collective. Two forms:
// * collective_check: every rank of the group calls it at the same point; the ranks agree
//   on whether any failed, the lowest failing rank prints its message (one line) and the
//   job ends with `code` on every rank.
// * local_check: for a condition only one rank evaluates, wherever it is; on failure that
//   rank prints and ends the job at once (MPI_Abort takes the others down).
#include "weft/comm/communicator.hpp"  // communicator, reduce_op

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace weft {

/// Collective over `comm`: returns normally on every rank if `ok` holds on every rank;
/// otherwise ends the job on every rank with exit code `code`, after the lowest failing
/// rank prints `msg` (plus how many ranks failed) as one line on stderr.
template <communicator Comm>
void collective_check(Comm& comm, bool ok, std::string_view msg, int code = 1) {
  // max of (size - rank) over failing ranks: 0 when all are fine, else names the lowest.
  std::int32_t lowest = ok ? 0 : comm.size() - comm.rank();
  comm.all_reduce(std::span{&lowest, 1}, reduce_op::max);
  if (lowest == 0) return;

  // From here every rank knows; a second reduction costs nothing on the success path.
  std::int32_t failing = ok ? 0 : 1;
  comm.all_reduce(std::span{&failing, 1}, reduce_op::sum);
  if (comm.rank() == comm.size() - lowest) {
    std::string line(msg);
    if (failing > 1)
      line += " (" + std::to_string(failing) + " of " + std::to_string(comm.size()) + " ranks failed this check)";
    comm.abort(code, line);
  }
  // The printer never joins this barrier: the others wait here until its abort ends them,
  // so no rank can end the job before the message is out.
  comm.barrier();
  comm.abort(code, {});  // unreachable under MPI; a safety net for other implementations
}

/// Rank-local: if `ok` is false, prints `msg` as one line and ends the whole job with
/// `code`. Other ranks need not call it.
template <communicator Comm>
void local_check(const Comm& comm, bool ok, std::string_view msg, int code = 1) {
  if (!ok) comm.abort(code, msg);
}

}  // namespace weft
