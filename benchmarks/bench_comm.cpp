// bench_comm: bus bandwidth of all_reduce, reduce_scatter and all_gather through weft's
// mpi_communicator next to the raw MPI calls on the same buffers, in the same run.
//
//   mpirun -np 4 bench_comm [--dtype f32|f64] [--min-bytes 1K] [--max-bytes 64M] [--budget 64M]
//
// --budget: bytes moved per timed loop (iterations = budget / size, 3..1000); raise it on
// a quiet machine for steadier numbers, lower it on a busy one.
//
// Definitions follow NCCL-tests: `size` is the full buffer (all_reduce: the buffer;
// reduce_scatter: the input of size() blocks; all_gather: the output of size() blocks),
// algbw = size / time, busbw = algbw * 2(n-1)/n for all_reduce and * (n-1)/n for
// reduce_scatter and all_gather. Time is the slowest rank's, per call, best of a few
// rounds in which raw and weft alternate so that drift hits both alike.
// weft/raw is the ratio of bus bandwidths: 1.00 means no overhead.
#include "weft/comm/check.hpp"  // collective_check
#include "weft/comm/mpi.hpp"    // mpi_communicator, mpi::world, reduce_op

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace weft;

namespace {

struct options {
  std::string dtype = "f32";
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t budget = std::size_t{64} << 20;
};

// "64M", "1K", "4096"
std::size_t parse_bytes(std::string_view text) {
  std::size_t scale = 1;
  if (!text.empty() && (text.back() == 'K' || text.back() == 'M' || text.back() == 'G')) {
    scale = text.back() == 'K' ? (1u << 10) : text.back() == 'M' ? (1u << 20) : (1u << 30);
    text.remove_suffix(1);
  }
  return std::strtoull(std::string(text).c_str(), nullptr, 10) * scale;
}

// "64 MiB"; sizes rounded to whole blocks per rank show a decimal: "4.0 MiB"
std::string show_bytes(std::size_t bytes) {
  const auto [scale, unit] = bytes >= (1u << 20) ? std::pair{std::size_t{1} << 20, "MiB"}
                             : bytes >= (1u << 10) ? std::pair{std::size_t{1} << 10, "KiB"}
                                                   : std::pair{std::size_t{1}, "B"};
  char text[32];
  if (bytes % scale == 0) std::snprintf(text, sizeof text, "%zu %s", bytes / scale, unit);
  else std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / scale, unit);
  return text;
}

// Seconds per call of `call`, the slowest rank's, best of `rounds` timed loops.
template <class Call>
double seconds_per_call(MPI_Comm comm, int iters, Call&& call) {
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) call();
  double elapsed = (MPI_Wtime() - t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
  return elapsed;
}

struct result {
  double raw = std::numeric_limits<double>::max(), weft = std::numeric_limits<double>::max();
};

template <class Raw, class Weft>
result compare(MPI_Comm comm, std::size_t bytes, std::size_t budget, Raw&& raw, Weft&& weft) {
  // many calls for small sizes, a few for large ones
  const int iters = static_cast<int>(std::clamp<std::size_t>(budget / bytes, 3, 1000));
  seconds_per_call(comm, 2, raw);  // warm-up: connections, page faults
  seconds_per_call(comm, 2, weft);
  result best;
  for (int round = 0; round < 3; ++round) {
    best.raw = std::min(best.raw, seconds_per_call(comm, iters, raw));
    best.weft = std::min(best.weft, seconds_per_call(comm, iters, weft));
  }
  return best;
}

void print_row(const char* op, std::size_t bytes, std::size_t count, double factor, result r) {
  const double raw_bus = static_cast<double>(bytes) / r.raw * factor / 1e9;    // GB/s
  const double weft_bus = static_cast<double>(bytes) / r.weft * factor / 1e9;  // GB/s
  std::printf("%-15s %9s %10zu %11.1f %11.1f %10.3f %10.3f %9.2f\n", op, show_bytes(bytes).c_str(), count,
              r.raw * 1e6, r.weft * 1e6, raw_bus, weft_bus, weft_bus / raw_bus);
  std::fflush(stdout);
}

template <class T>
void run(mpi_communicator& world, const options& opt) {
  const int n = world.size();
  const bool print = world.rank() == 0;
  const MPI_Comm comm = world.native();
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  const double all_reduce_factor = 2.0 * (n - 1) / n, scatter_gather_factor = static_cast<double>(n - 1) / n;

  if (print) {
    std::printf("# bench_comm: %d ranks, %s; size = full buffer; busbw = algbw x 2(n-1)/n (all_reduce), "
                "x (n-1)/n (reduce_scatter, all_gather)\n", n, opt.dtype.c_str());
    std::printf("# %-13s %9s %10s %11s %11s %10s %10s %9s\n", "op", "size", "count", "raw us", "weft us",
                "raw GB/s", "weft GB/s", "weft/raw");
  }
  for (std::size_t bytes = opt.min_bytes; bytes <= opt.max_bytes; bytes *= 2) {
    const std::size_t block = std::max<std::size_t>(bytes / sizeof(T) / n, 1);  // per-rank elements
    const std::size_t count = block * n;                                        // full buffer
    const std::size_t full = count * sizeof(T);
    std::vector<T> whole(count, T(0)), part(block, T(0));  // (n, block) and (block)
    const int c = static_cast<int>(count), b = static_cast<int>(block);

    auto ar = compare(
        comm, full, opt.budget, [&] { MPI_Allreduce(MPI_IN_PLACE, whole.data(), c, type, MPI_SUM, comm); },
        [&] { world.all_reduce(whole, reduce_op::sum); });
    if (print) print_row("all_reduce", full, count, all_reduce_factor, ar);

    auto rs = compare(
        comm, full, opt.budget, [&] { MPI_Reduce_scatter_block(whole.data(), part.data(), b, type, MPI_SUM, comm); },
        [&] { world.reduce_scatter(whole, part); });
    if (print) print_row("reduce_scatter", full, count, scatter_gather_factor, rs);

    auto ag = compare(
        comm, full, opt.budget, [&] { MPI_Allgather(part.data(), b, type, whole.data(), b, type, comm); },
        [&] { world.all_gather(part, whole); });
    if (print) print_row("all_gather", full, count, scatter_gather_factor, ag);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  options opt;
  std::string error;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (flag == "--dtype") opt.dtype = value;
    else if (flag == "--min-bytes") opt.min_bytes = parse_bytes(value);
    else if (flag == "--max-bytes") opt.max_bytes = parse_bytes(value);
    else if (flag == "--budget") opt.budget = parse_bytes(value);
    else error = "bench_comm: unknown flag " + std::string(flag) + ".";
  }
  if (opt.min_bytes == 0 || opt.min_bytes > opt.max_bytes || opt.budget == 0)
    error = "bench_comm: need 0 < --min-bytes <= --max-bytes and --budget > 0.";
  if (opt.dtype != "f32" && opt.dtype != "f64") error = "bench_comm: --dtype must be f32 or f64.";
  // every rank parses the same arguments: one line, from rank 0
  collective_check(world, error.empty(),
                   error + " Usage: bench_comm [--dtype f32|f64] [--min-bytes N[K|M|G]] "
                           "[--max-bytes N[K|M|G]] [--budget N[K|M|G]]", 2);
  if (opt.dtype == "f32") run<float>(world, opt);
  else run<double>(world, opt);
  return 0;
}
