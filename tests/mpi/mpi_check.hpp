#pragma once
// A minimal CHECK for tests under mpirun: each failure prints one line naming the rank,
// and `finish` agrees on the total so that every rank exits with the same status (a failure
// when any check failed, and when no check ran at all).
// (Catch2 under mpirun would print N interleaved reports.)
#include "weft/comm/check.hpp"  // collective_check
#include "weft/comm/mpi.hpp"    // mpi_communicator, mpi::world

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <span>

namespace weft::test {

inline int failures = 0;
inline int checks = 0;
inline int world_rank = -1;

inline void check(bool ok, const char* expr, const char* file, int line) {
  ++checks;
  if (ok) return;
  ++failures;
  if (failures <= 20)  // a broken collective fails thousands of checks; show the first few
    std::fprintf(stderr, "rank %d: %s:%d: CHECK failed: %s\n", world_rank, file, line, expr);
}

/// Collective: returns the exit status of the test program: 0 iff no rank failed a check and
/// the ranks together counted at least one (a program that checked nothing tested nothing: it
/// fails with one line, so that a preset or a loop that silently ran zero times cannot pass).
inline int finish(mpi_communicator& world, const char* name) {
  std::int64_t totals[2] = {failures, checks};
  world.all_reduce(std::span{totals}, reduce_op::sum);
  if (totals[1] == 0) {
    if (world.rank() == 0)
      std::fprintf(stderr, "%s (np=%d): no check ran on any rank: nothing was tested\n", name, world.size());
    return 1;
  }
  if (world.rank() == 0)
    std::printf("%s (np=%d): %lld of %lld checks failed\n", name, world.size(),
                static_cast<long long>(totals[0]), static_cast<long long>(totals[1]));
  return totals[0] == 0 ? 0 : 1;
}

/// Collective: a harness refuses arguments it does not know (one line, status 2 on every rank)
/// rather than falling back to a default that would test something else.
inline void require_args(mpi_communicator& world, bool ok, const std::string& usage, int argc, char** argv) {
  std::string got;
  for (int i = 1; i < argc; ++i) got += std::string(i > 1 ? " " : "") + argv[i];
  collective_check(world, ok, usage + "; got '" + got + "'", 2);
}

/// Whether `s` is one of `options`.
inline bool one_of(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

/// A non-negative decimal integer argument, or -1.
inline long number_arg(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (end != s && *end == '\0' && v >= 0) ? v : -1;
}

}  // namespace weft::test

#define WEFT_CHECK(...) ::weft::test::check(static_cast<bool>(__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
