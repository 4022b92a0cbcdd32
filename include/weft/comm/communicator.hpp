#pragma once
// ---- communicator: the one concept every process group of weft satisfies ----
// Implementations: single_world (a world of one, comm/single.hpp), mpi_communicator
// (Boost.MPI over host buffers, comm/mpi.hpp); NCCL (device buffers) will follow the same
// shape. Buffers are spans of contiguous elements of one of the scalar types below; every
// rank of the group must make the same collective calls in the same order with the same
// element counts (as in MPI). A run-time error ends the whole job through `abort`: one
// line on stderr, every rank gone, never a hang.
#include "weft/core/dtype.hpp"  // bf16, f16, half_float

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

/// The reductions a communicator carries: element-wise sum (wraps for integers) and max.
enum class reduce_op { sum, max };

/// Element types a communicator moves: the dtypes of parameters, gradients, token ids and
/// flags. Each maps to a native MPI/NCCL datatype, so nothing is ever serialised. bf16 and f16
/// (the parameters and gradients of precision<bf16, f32> and <f16, f32>) are moved as their 2
/// bytes; their sum and max are computed in float and rounded once per pair of operands (MPI:
/// a user-defined MPI_Op, NCCL: ncclBfloat16). The `communicator` concept below does not
/// require them.
template <class T>
concept comm_scalar = std::same_as<T, float> || std::same_as<T, double> ||
                      std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
                      std::same_as<T, std::uint8_t> || half_float<T>;

/// A buffer a communicator reads: any contiguous sized range of comm_scalar elements
/// (std::span of any extent, std::vector, std::array, C array).
template <class R>
concept comm_input = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                     comm_scalar<std::remove_cv_t<std::ranges::range_value_t<R>>>;

/// A buffer a communicator writes: a comm_input whose elements are not const.
template <class R>
concept comm_output =
    comm_input<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

/// The element type of a communicator buffer.
template <comm_input R>
using comm_element_t = std::remove_cv_t<std::ranges::range_value_t<R>>;

/// Two buffers of one element type (reduce_scatter, all_gather).
template <class In, class Out>
concept comm_same_element = std::same_as<comm_element_t<In>, comm_element_t<Out>>;

/// The handle of a non-blocking send or receive: `wait()` blocks until it completes,
/// `test()` says whether it has (and completes it when it has).
template <class R>
concept comm_request = requires(R& r) {
  r.wait();
  { r.test() } -> std::convertible_to<bool>;
};

namespace detail {

// ---- the operations on one element type ----
template <class C, class T>
concept carries = requires(C& c, std::span<T> inout, std::span<const T> in, int peer, int tag) {
  c.all_reduce(inout, reduce_op::sum);  // in place
  c.reduce_scatter(in, inout);          // in: (size * n), out: (n), sum
  c.all_gather(in, inout);              // in: (n), out: (size * n), rank-major
  c.broadcast(inout, peer);             // from root `peer`
  c.send(in, peer, tag);
  c.recv(inout, peer, tag);
  { c.isend(in, peer, tag) } -> comm_request;
  { c.irecv(inout, peer, tag) } -> comm_request;
};

}  // namespace detail

/// A group of ranks that runs collectives and point-to-point messages over host memory.
/// Buffers are comm_input/comm_output ranges (spans in the simplest case); all_reduce is
/// in place; reduce_scatter sums and takes in (size * n) -> out (n); all_gather takes
/// in (n) -> out (size * n), rank-major.
/// `split(color, key)` makes sub-groups (ranks with equal color, ordered by key) of the
/// same type; `abort(code, msg)` prints msg as one line on stderr and ends every rank of
/// the job with exit code `code` (it does not return).
template <class C>
concept communicator =
    std::copy_constructible<C> &&
    requires(C& c, const C& cc, int color, int key, int code, std::string_view msg) {
      { cc.rank() } -> std::same_as<int>;
      { cc.size() } -> std::same_as<int>;
      c.barrier();
      { c.split(color, key) } -> std::same_as<C>;
      cc.abort(code, msg);
    } &&
    detail::carries<C, float> && detail::carries<C, double> &&
    detail::carries<C, std::int32_t> && detail::carries<C, std::int64_t> &&
    detail::carries<C, std::uint8_t>;

namespace detail {

// The buffer as a span, const-ness kept: implementations work on spans only.
template <comm_input R>
auto as_span(R&& r) {
  return std::span(std::ranges::data(r), static_cast<std::size_t>(std::ranges::size(r)));
}

// ---- the one error line every implementation prints before it ends the job ----
// "weft[rank 2/4]: <msg>", newlines in msg flattened so that a log line is one record.
// Written with one fwrite so that lines of concurrent ranks do not interleave.
inline void print_error_line(int rank, int size, std::string_view msg) {
  if (msg.empty()) return;
  std::string line = "weft[rank " + std::to_string(rank) + "/" + std::to_string(size) + "]: ";
  line.append(msg);
  std::replace(line.begin(), line.end(), '\n', ' ');
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace detail
}  // namespace weft
