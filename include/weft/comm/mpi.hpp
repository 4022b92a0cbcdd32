#pragma once
// ---- mpi_communicator: the communicator concept over Boost.MPI, host buffers ----
// Needs the `weft::mpi` CMake target (Boost::mpi, Boost::serialization, MPI::MPI_CXX).
//
// What goes where, and why:
// * Boost.MPI owns the environment (init/finalize) and the communicator handles (split,
//   freeing). Data moves through MPI calls on the raw MPI_Comm with native datatypes
//   (MPI_FLOAT ... MPI_UINT8_T), never through Boost serialisation: Boost.MPI 1.74 has no
//   reduce_scatter; its in-place all_reduce binds a `const T&` to MPI_IN_PLACE and its
//   array send/recv bind `*values` even for empty arrays (UB, flagged by
//   -fsanitize=undefined); a sum over uint8_t goes through a user-defined MPI_Op; and each
//   of its requests allocates. The raw calls are the very ones a hand-written MPI program
//   makes (bench_comm measures weft against them).
// * Errors end the job, never hang it: MPI_ERRORS_ARE_FATAL on the world (Boost sets
//   MPI_ERRORS_RETURN, whose exceptions could leave one rank unwinding while the others
//   wait), weft's own argument checks call `abort` (one line, MPI_Abort), and the world
//   refuses to block forever in MPI_Finalize when a rank left early (see world_options).
#include "weft/comm/communicator.hpp"  // communicator, comm_scalar, reduce_op, detail::print_error_line

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <span>
#include <vector>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace weft {
namespace mpi {

/// How `mpi::world` sets up and shuts down the job.
struct world_options {
  /// A rank whose world goes out of scope (the end of main) waits at most this long for
  /// every other rank to get there too, then ends the job with a message. This turns "a
  /// rank returned from main early while the others wait in a collective" from a hang into
  /// an error. Ranks that legitimately finish far apart need a longer value; <= 0 waits
  /// forever (plain MPI_Finalize behaviour).
  std::chrono::duration<double> shutdown_timeout = std::chrono::seconds(60);
};

}  // namespace mpi

namespace detail {

// ---- native MPI datatypes of the comm_scalar types ----
template <comm_scalar T>
inline MPI_Datatype mpi_datatype() {
  if constexpr (std::same_as<T, float>) return MPI_FLOAT;
  else if constexpr (std::same_as<T, double>) return MPI_DOUBLE;
  else if constexpr (std::same_as<T, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::same_as<T, std::int64_t>) return MPI_INT64_T;
  else if constexpr (half_float<T>) return MPI_UINT16_T;  // its bits; reduced by half_op below
  else return MPI_UINT8_T;
}

// ---- bf16 / f16 reductions: MPI has no 16-bit float types, so their bits travel as
// MPI_UINT16_T and a user-defined MPI_Op adds (or takes the max of) each pair in float,
// rounding once ----
template <half_float H, bool Max>
inline void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    b[i] = H(Max ? (x > y || x != x ? x : y) : x + y);  // max keeps a NaN
  }
}
// Created on first use (after MPI_Init) and kept for the life of the process.
template <half_float H>
inline MPI_Op half_op(reduce_op op) {
  static const MPI_Op sum = [] {
    MPI_Op o = MPI_OP_NULL;
    MPI_Op_create(&half_reduce<H, false>, /*commute=*/1, &o);
    return o;
  }();
  static const MPI_Op max = [] {
    MPI_Op o = MPI_OP_NULL;
    MPI_Op_create(&half_reduce<H, true>, /*commute=*/1, &o);
    return o;
  }();
  return op == reduce_op::sum ? sum : max;
}

template <comm_scalar T>
inline MPI_Op mpi_op(reduce_op op) {
  if constexpr (half_float<T>) return half_op<T>(op);
  else return op == reduce_op::sum ? MPI_SUM : MPI_MAX;
}

// Prints one line (world rank) and ends every rank of the job with `code`.
[[noreturn]] inline void mpi_abort(int code, std::string_view msg) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {  // no job to end: this process is all there is
    detail::print_error_line(0, 1, msg);
    std::exit(code);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  detail::print_error_line(rank, size, msg);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; keeps [[noreturn]] honest if it ever did
}

// While a world lives, an exception that escapes main (std::terminate) ends the job with
// one line instead of a signal on one rank and a backtrace.
[[noreturn]] inline void mpi_terminate_handler() {
  std::string what = "std::terminate was called";
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = std::string("uncaught exception: ") + x.what();
    } catch (...) {
      what = "uncaught exception of a type not derived from std::exception";
    }
  }
  mpi_abort(1, "weft::mpi::world: " + what + "; ending the job.");
}

// A failed MPI call ends the job. Under weft's world MPI_ERRORS_ARE_FATAL already does
// that inside MPI; this covers a communicator wrapped from code that set MPI_ERRORS_RETURN.
inline void mpi_check(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  mpi_abort(1, std::string("weft::mpi_communicator::") + op + ": MPI error: " + std::string(text, length));
}

// A receive must get exactly the count it asked for (MPI itself only rejects longer messages).
inline void check_received(const char* op, const MPI_Status& status, MPI_Datatype type, int expected) {
  if (expected < 0) return;  // a send
  int got = 0;
  MPI_Get_count(&status, type, &got);
  if (got != expected)
    mpi_abort(1, std::string("weft::mpi_communicator::") + op + ": got " +
                     (got == MPI_UNDEFINED ? std::string("a partial element") : std::to_string(got) + " elements") +
                     " from rank " + std::to_string(status.MPI_SOURCE) + " (tag " + std::to_string(status.MPI_TAG) +
                     ") but expected " + std::to_string(expected) + ". Send and receive the same type and count.");
}

// ---- the process's MPI session: environment, error policy, guarded shutdown ----
class mpi_session {
 public:
  mpi_session(int& argc, char**& argv, const mpi::world_options& options)
      // funneled: OpenMP threads compute, only the main thread calls MPI
      : env_(argc, argv, boost::mpi::threading::funneled, /*abort_on_exception=*/true),
        timeout_(options.shutdown_timeout) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);  // inherited by splits
    MPI_Comm_dup(MPI_COMM_WORLD, &shutdown_);  // private: cannot meet a user collective
    previous_terminate_ = std::set_terminate(&mpi_terminate_handler);
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;

  ~mpi_session() {
    if (std::uncaught_exceptions() > 0)
      mpi_abort(1, "weft::mpi::world: an exception left the scope of the MPI world on this rank; "
                   "ending the job so that the other ranks do not wait for it.");
    std::set_terminate(previous_terminate_);
    arrive_or_abort();
    MPI_Comm_free(&shutdown_);
  }  // env_ calls MPI_Finalize, which now cannot block: every rank has arrived

 private:
  // A barrier with a deadline: MPI_Finalize would wait forever for a rank that is itself
  // stuck in a collective waiting for us.
  void arrive_or_abort() {
    MPI_Request arrival;
    MPI_Ibarrier(shutdown_, &arrival);
    if (timeout_.count() <= 0) {
      MPI_Wait(&arrival, MPI_STATUS_IGNORE);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (int done = 0;;) {
      MPI_Test(&arrival, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline)
        mpi_abort(1, "weft::mpi::world: this rank reached the end of the program, but not every "
                     "rank did within " + seconds_text() +
                     " s (a rank returned early or is stuck); ending the job. If ranks "
                     "legitimately finish far apart, raise world_options::shutdown_timeout.");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  std::string seconds_text() const {
    char text[32];
    std::snprintf(text, sizeof text, "%g", timeout_.count());
    return text;
  }

  boost::mpi::environment env_;
  std::chrono::duration<double> timeout_;
  MPI_Comm shutdown_ = MPI_COMM_NULL;
  std::terminate_handler previous_terminate_ = nullptr;
};

// The session of this process while a world is alive: a second `world()` shares it.
inline std::weak_ptr<mpi_session> live_session;

}  // namespace detail

class mpi_communicator;
namespace mpi {
mpi_communicator world(int& argc, char**& argv, world_options options = {});
}

/// A group of MPI processes (host buffers). Copies are cheap handles to the same group.
/// Satisfies `communicator`. Get the world from `mpi::world(argc, argv)`.
class mpi_communicator {
 public:
  /// Non-blocking operation handle (move-only, owns one MPI_Request). Destroying an
  /// incomplete request waits for it, so a buffer is never freed under a transfer in flight.
  class request {
   public:
    request() = default;
    request(request&& other) noexcept
        : req_(std::exchange(other.req_, MPI_REQUEST_NULL)), type_(other.type_), expected_(other.expected_),
          displs_(std::move(other.displs_)) {}
    request& operator=(request&& other) noexcept {
      if (this != &other) {
        wait();
        req_ = std::exchange(other.req_, MPI_REQUEST_NULL);
        type_ = other.type_;
        expected_ = other.expected_;
        displs_ = std::move(other.displs_);
      }
      return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { wait(); }

    void wait() {
      if (req_ == MPI_REQUEST_NULL) return;
      MPI_Status status;
      detail::mpi_check(MPI_Wait(&req_, &status), "request::wait");  // sets req_ to MPI_REQUEST_NULL
      detail::check_received("irecv", status, type_, expected_);
    }
    /// True once the operation has completed.
    bool test() {
      if (req_ == MPI_REQUEST_NULL) return true;
      int done = 0;
      MPI_Status status;
      detail::mpi_check(MPI_Test(&req_, &done, &status), "request::test");
      if (done) detail::check_received("irecv", status, type_, expected_);
      return done != 0;
    }

   private:
    friend class mpi_communicator;
    request(MPI_Request r, MPI_Datatype type, int expected) : req_(r), type_(type), expected_(expected) {}

    MPI_Request req_ = MPI_REQUEST_NULL;  // MPI_REQUEST_NULL: complete (or never started)
    MPI_Datatype type_ = MPI_BYTE;
    int expected_ = -1;  // elements a receive expects; -1 for a send
    std::vector<int> displs_;  // an iall_gather_v's displacements, an ireduce_scatter_v's counts: alive until it completes (moving keeps the buffer)
  };

  /// Wraps a communicator whose MPI environment the caller manages.
  explicit mpi_communicator(boost::mpi::communicator comm) : comm_(std::move(comm)) {}

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  /// The raw handle, e.g. to bootstrap NCCL or to call MPI directly.
  MPI_Comm native() const { return MPI_Comm(comm_); }

  // ---- collectives ----

  template <comm_output R>
  void all_reduce(R&& buffer, reduce_op op) {
    using T = comm_element_t<R>;
    const auto inout = detail::as_span(buffer);
    if (inout.empty()) return;  // every rank passes the same count, so every rank skips
    detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, inout.data(), count("all_reduce", inout.size()),
                                    detail::mpi_datatype<T>(), detail::mpi_op<T>(op), native()),
                      "all_reduce");
  }

  /// in: (size * n), out: (n): out = the sum over ranks of block `rank()` of in.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter(In&& in_buffer, Out&& out_buffer) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_blocks("reduce_scatter", "input", in.size(), out.size());
    if (out.empty()) return;
    detail::mpi_check(MPI_Reduce_scatter_block(in.data(), out.data(), count("reduce_scatter", out.size()),
                                               detail::mpi_datatype<T>(), detail::mpi_op<T>(reduce_op::sum), native()),
                      "reduce_scatter");
  }

  /// in: (n), out: (size * n), block r from rank r.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather(In&& in_buffer, Out&& out_buffer) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_blocks("all_gather", "output", out.size(), in.size());
    if (in.empty()) return;
    const int n = count("all_gather", in.size());
    detail::mpi_check(MPI_Allgather(in.data(), n, detail::mpi_datatype<T>(), out.data(), n,
                                    detail::mpi_datatype<T>(), native()),
                      "all_gather");
  }

  /// Non-blocking all_reduce in place (MPI_Iallreduce): overlaps gradient reduction with
  /// backward. The buffer must stay alive and untouched until the request completes.
  template <comm_output R>
  request iall_reduce(R&& buffer, reduce_op op) {
    using T = comm_element_t<R>;
    const auto inout = detail::as_span(buffer);
    MPI_Request r = MPI_REQUEST_NULL;
    if (inout.empty()) return request(r, detail::mpi_datatype<T>(), -1);
    detail::mpi_check(MPI_Iallreduce(MPI_IN_PLACE, inout.data(), count("iall_reduce", inout.size()),
                                     detail::mpi_datatype<T>(), detail::mpi_op<T>(op), native(), &r),
                      "iall_reduce");
    return request(r, detail::mpi_datatype<T>(), -1);
  }

  /// Uneven reduce_scatter: in holds sum(counts) elements; out receives the sum over ranks of
  /// block rank() (counts[rank()] elements). Blocks lie back to back in rank order.
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void reduce_scatter_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    check_counts("reduce_scatter_v", counts, in.size(), out.size());
    detail::mpi_check(MPI_Reduce_scatter(in.data(), out.data(), counts.data(), detail::mpi_datatype<T>(),
                                         detail::mpi_op<T>(reduce_op::sum), native()),
                      "reduce_scatter_v");
  }

  /// Non-blocking reduce_scatter_v (MPI_Ireduce_scatter): ZeRO-2/3 reduce a block's gradients
  /// while the next block's backward runs. `in` and `out` must stay alive and untouched until
  /// the request completes (the counts are copied into the request).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  request ireduce_scatter_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    check_counts("ireduce_scatter_v", counts, in.size(), out.size());
    std::vector<int> own(counts.begin(), counts.end());
    MPI_Request r = MPI_REQUEST_NULL;
    detail::mpi_check(MPI_Ireduce_scatter(in.data(), out.data(), own.data(), detail::mpi_datatype<T>(),
                                          detail::mpi_op<T>(reduce_op::sum), native(), &r),
                      "ireduce_scatter_v");
    request q(r, detail::mpi_datatype<T>(), -1);
    q.displs_ = std::move(own);  // moving a vector keeps its buffer
    return q;
  }

  /// Where each rank's block of an uneven gather starts: the running sum of `counts`.
  static std::vector<int> displacements(std::span<const int> counts) {
    std::vector<int> displs(counts.size());
    for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
    return displs;
  }

  /// Uneven all_gather: in holds counts[rank()] elements; out receives every rank's block, back
  /// to back in rank order (sum(counts) elements).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_gather_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    check_counts("all_gather_v", counts, out.size(), in.size());
    std::vector<int> displs = displacements(counts);
    detail::mpi_check(MPI_Allgatherv(in.data(), counts[static_cast<std::size_t>(rank())], detail::mpi_datatype<T>(),
                                     out.data(), counts.data(), displs.data(), detail::mpi_datatype<T>(), native()),
                      "all_gather_v");
  }

  /// Non-blocking all_gather_v (MPI_Iallgatherv): ZeRO-3 gathers the next block while the
  /// current one computes. `in`, `out` and `counts` must stay alive and untouched until the
  /// request completes (the displacements are the request's own).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  request iall_gather_v(In&& in_buffer, Out&& out_buffer, std::span<const int> counts) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    check_counts("iall_gather_v", counts, out.size(), in.size());
    std::vector<int> displs = displacements(counts);
    MPI_Request r = MPI_REQUEST_NULL;
    detail::mpi_check(MPI_Iallgatherv(in.data(), counts[static_cast<std::size_t>(rank())], detail::mpi_datatype<T>(),
                                      out.data(), counts.data(), displs.data(), detail::mpi_datatype<T>(), native(), &r),
                      "iall_gather_v");
    request q(r, detail::mpi_datatype<T>(), -1);
    q.displs_ = std::move(displs);
    return q;
  }

  /// in: (size * n), out: (size * n): block q of in goes to rank q, block p of out comes from
  /// rank p (MPI_Alltoall). Expert parallelism sends routing counts with it (comm/all_to_all.hpp).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all(In&& in_buffer, Out&& out_buffer) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    require_blocks("all_to_all", "output", out.size(), in.size() / static_cast<std::size_t>(size()));
    require_blocks("all_to_all", "input", in.size(), out.size() / static_cast<std::size_t>(size()));
    if (in.empty()) return;
    const int n = count("all_to_all", in.size() / static_cast<std::size_t>(size()));
    detail::mpi_check(MPI_Alltoall(in.data(), n, detail::mpi_datatype<T>(), out.data(), n, detail::mpi_datatype<T>(),
                                   native()),
                      "all_to_all");
  }

  /// Uneven all_to_all (MPI_Alltoallv): send_counts[q] elements of in go to rank q and
  /// recv_counts[p] elements of out come from rank p, blocks back to back in rank order. The
  /// buffers may be longer than the sums (a capacity sized for the worst case); the counts of
  /// every pair must agree (what p sends to q is what q receives from p).
  template <comm_input In, comm_output Out>
    requires comm_same_element<In, Out>
  void all_to_all_v(In&& in_buffer, std::span<const int> send_counts, Out&& out_buffer,
                    std::span<const int> recv_counts) {
    using T = comm_element_t<Out>;
    const auto in = detail::as_span(in_buffer);
    const auto out = detail::as_span(out_buffer);
    const auto n = static_cast<std::size_t>(size());
    std::vector<int> sd(n), rd(n);
    std::size_t st = 0, rt = 0;
    if (send_counts.size() == n && recv_counts.size() == n)
      for (std::size_t q = 0; q < n; ++q) {
        sd[q] = count("all_to_all_v", st);
        rd[q] = count("all_to_all_v", rt);
        st += static_cast<std::size_t>(std::max(send_counts[q], 0));
        rt += static_cast<std::size_t>(std::max(recv_counts[q], 0));
      }
    if (send_counts.size() != n || recv_counts.size() != n || st > in.size() || rt > out.size())
      abort(1, "weft::mpi_communicator::all_to_all_v: the counts do not fit the buffers (one send and one receive "
               "count per rank; the input holds at least the sends' sum, the output the receives'). Pass "
               "matching counts.");
    detail::mpi_check(MPI_Alltoallv(in.data(), send_counts.data(), sd.data(), detail::mpi_datatype<T>(), out.data(),
                                    recv_counts.data(), rd.data(), detail::mpi_datatype<T>(), native()),
                      "all_to_all_v");
  }

  template <comm_output R>
  void broadcast(R&& buffer, int root) {
    using T = comm_element_t<R>;
    const auto inout = detail::as_span(buffer);
    require_rank("broadcast", "root", root);
    if (inout.empty()) return;
    detail::mpi_check(MPI_Bcast(inout.data(), count("broadcast", inout.size()), detail::mpi_datatype<T>(),
                                root, native()),
                      "broadcast");
  }

  void barrier() { detail::mpi_check(MPI_Barrier(native()), "barrier"); }

  /// Ranks with the same color (>= 0) form a new group, ordered by key (ties by rank).
  /// Collective over this group.
  mpi_communicator split(int color, int key) const {
    if (color < 0)
      abort(1, "weft::mpi_communicator::split: color " + std::to_string(color) +
                   " is negative. Pass a color >= 0 (every rank lands in some group).");
    return mpi_communicator(session_, comm_.split(color, key));
  }

  // ---- point to point: the same type and count on both sides (empty messages too) ----

  template <comm_input R>
  void send(R&& buffer, int dest, int tag) {
    using T = comm_element_t<R>;
    const auto in = detail::as_span(buffer);
    require_rank("send", "dest", dest);
    detail::mpi_check(MPI_Send(in.data(), count("send", in.size()), detail::mpi_datatype<T>(), dest, tag, native()),
                      "send");
  }

  template <comm_output R>
  void recv(R&& buffer, int src, int tag) {
    using T = comm_element_t<R>;
    const auto out = detail::as_span(buffer);
    require_rank("recv", "src", src);
    const int n = count("recv", out.size());
    MPI_Status status;
    detail::mpi_check(MPI_Recv(out.data(), n, detail::mpi_datatype<T>(), src, tag, native(), &status), "recv");
    detail::check_received("recv", status, detail::mpi_datatype<T>(), n);
  }

  template <comm_input R>
  request isend(R&& buffer, int dest, int tag) {
    using T = comm_element_t<R>;
    const auto in = detail::as_span(buffer);
    require_rank("isend", "dest", dest);
    MPI_Request r;
    detail::mpi_check(MPI_Isend(in.data(), count("isend", in.size()), detail::mpi_datatype<T>(), dest, tag,
                                native(), &r),
                      "isend");
    return request(r, detail::mpi_datatype<T>(), -1);
  }

  template <comm_output R>
  request irecv(R&& buffer, int src, int tag) {
    using T = comm_element_t<R>;
    const auto out = detail::as_span(buffer);
    require_rank("irecv", "src", src);
    const int n = count("irecv", out.size());
    MPI_Request r;
    detail::mpi_check(MPI_Irecv(out.data(), n, detail::mpi_datatype<T>(), src, tag, native(), &r), "irecv");
    return request(r, detail::mpi_datatype<T>(), n);
  }

  /// Prints msg as one line on stderr ("weft[rank r/n]: msg", world rank) and ends every
  /// rank of the job with exit code `code` (MPI_Abort on the world).
  [[noreturn]] void abort(int code, std::string_view msg) const { detail::mpi_abort(code, msg); }

 private:
  friend mpi_communicator mpi::world(int&, char**&, mpi::world_options);

  mpi_communicator(std::shared_ptr<detail::mpi_session> session, boost::mpi::communicator comm)
      : session_(std::move(session)), comm_(std::move(comm)) {}

  // MPI counts are int.
  void check_counts(const char* op, std::span<const int> counts, std::size_t whole, std::size_t mine) const {
    std::size_t total = 0;
    for (int c : counts) total += static_cast<std::size_t>(c);
    if (counts.size() != static_cast<std::size_t>(size()) || total != whole ||
        static_cast<std::size_t>(counts[static_cast<std::size_t>(rank())]) != mine)
      detail::mpi_abort(1, std::string("weft::mpi_communicator::") + op +
                               ": the counts do not match the buffers (one count per rank; the whole buffer holds "
                               "their sum, this rank's block its own count). Pass matching buffers.");
  }
  int count(const char* op, std::size_t n) const {
    if (n > static_cast<std::size_t>(INT_MAX))
      abort(1, std::string("weft::mpi_communicator::") + op + ": " + std::to_string(n) +
                   " elements exceed MPI's int count. Split the transfer into chunks below 2^31.");
    return static_cast<int>(n);
  }

  // `whole` must be size() blocks of `block` elements (reduce_scatter input, all_gather output).
  void require_blocks(const char* op, const char* what, std::size_t whole, std::size_t block) const {
    if (whole != block * static_cast<std::size_t>(size()))
      abort(1, std::string("weft::mpi_communicator::") + op + ": the " + what + " has " +
                   std::to_string(whole) + " elements, but must be size() (" + std::to_string(size()) +
                   ") x " + std::to_string(block) + ". Size the buffers for this communicator.");
  }

  void require_rank(const char* op, const char* what, int peer) const {
    if (peer < 0 || peer >= size())
      abort(1, std::string("weft::mpi_communicator::") + op + ": " + what + " " + std::to_string(peer) +
                   " is not a rank of this communicator (size " + std::to_string(size()) +
                   "). Pass a rank in [0, size()).");
  }

  std::shared_ptr<detail::mpi_session> session_;  // declared first: the group is freed before finalize
  boost::mpi::communicator comm_;
};

static_assert(communicator<mpi_communicator>);

namespace mpi {

/// Starts MPI (once per process) and returns the world communicator. The environment
/// lives until the world and every communicator split from it are gone; then every rank
/// meets (within options.shutdown_timeout) and MPI is finalised. Launch with
/// `mpirun -np N program`.
inline mpi_communicator world(int& argc, char**& argv, world_options options) {
  auto session = detail::live_session.lock();
  if (!session) {
    if (boost::mpi::environment::finalized()) {
      detail::print_error_line(0, 1, "weft::mpi::world: MPI was already finalised in this process and "
                                     "cannot start again. Keep one world alive for the whole program.");
      std::exit(1);
    }
    session = std::make_shared<detail::mpi_session>(argc, argv, options);
    detail::live_session = session;
  }
  return mpi_communicator(std::move(session), boost::mpi::communicator());
}

}  // namespace mpi
}  // namespace weft
