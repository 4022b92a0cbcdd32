#pragma once
// ---- preemption: stop a job cleanly at a step boundary on SIGTERM, SIGINT or SIGUSR1 ----
// A scheduler that preempts a job (Slurm, Kubernetes, a spot instance) sends SIGTERM and waits a
// grace period before SIGKILL; Ctrl-C sends SIGINT. Either should end training at the end of the
// current step, after a checkpoint, with exit status 0 — not in the middle of a collective.
// SIGUSR1 means the same: it is the signal Open MPI's mpirun forwards to every rank at once and
// without ending the job (a SIGTERM or SIGINT to mpirun itself aborts the job instead: SIGTERM
// to the ranks after odls_base_sigkill_timeout seconds, SIGKILL after twice that, exit status 1),
// so tools/weft-mpirun turns a SIGTERM/SIGINT it receives into a SIGUSR1 to mpirun, and a Slurm
// job may ask for it ahead of the time limit (`--signal=USR1@120`). docs/running_long_jobs.md.
// The handler only sets a flag (all a signal handler may safely do). The trainer asks at the end
// of each step; in a job of many ranks it asks `agreed(world)`, an all-reduce max of the flag,
// so a rank that did not get the signal (the launcher may deliver it to one rank only, or at
// different moments) stops at the same step as the one that did. The first signal restores the
// default action of that signal: a second one ends the process at once, for a user who means it.
#include "weft/comm/communicator.hpp"  // communicator, reduce_op

#include <csignal>
#include <cstdint>
#include <span>

namespace weft {

namespace detail {
inline volatile std::sig_atomic_t preemption_signal = 0;  // the signal received, 0 while none
extern "C" inline void preemption_handler(int sig) {
  preemption_signal = sig;
  std::signal(sig, SIG_DFL);  // a second one is not caught
}
}  // namespace detail

/// The process-wide stop request set by SIGTERM/SIGINT/SIGUSR1 once `install()` has run.
struct preemption {
  /// Catches SIGTERM, SIGINT and SIGUSR1 from now on (idempotent).
  static void install() {
    std::signal(SIGTERM, detail::preemption_handler);
    std::signal(SIGINT, detail::preemption_handler);
    std::signal(SIGUSR1, detail::preemption_handler);
  }
  /// Whether this process got a stop signal (rank-local: use agreed() across ranks).
  static bool requested() noexcept { return detail::preemption_signal != 0; }
  /// The signal received (SIGTERM, SIGINT, SIGUSR1), 0 if none.
  static int signal() noexcept { return static_cast<int>(detail::preemption_signal); }
  /// Sets the request as a signal would (tests; a trainer's own stop condition).
  static void request(int sig = SIGTERM) noexcept { detail::preemption_signal = sig; }
  static void clear() noexcept { detail::preemption_signal = 0; }

  /// Collective over `comm`: true on every rank when any rank has a stop request. Call it at
  /// the same point of every step on every rank (it is one all-reduce of one integer).
  template <communicator Comm>
  static bool agreed(Comm& comm) {
    std::int32_t any = requested() ? 1 : 0;
    comm.all_reduce(std::span{&any, 1}, reduce_op::max);
    return any != 0;
  }
};

}  // namespace weft
