#pragma once
// ---- shared pieces of the host ops: accumulator type, threading threshold, dim checks ----
#include "weft/ops/host_element.hpp"  // host_element

#include <cstddef>
#include <type_traits>

namespace weft::ops::detail {

// Per-row statistics (sums over a row of a norm, the log-sum-exp of a row of logits, a bias
// gradient summed over rows) are accumulated in double for float inputs: a float sum over
// thousands of terms loses digits the backward pass needs. Wider types keep their own width.
template <class T>
using acc_t = std::conditional_t<(sizeof(T) < sizeof(double)), double, T>;

// Elements of work below which a loop stays serial: starting a parallel region costs a few
// microseconds, more than a small row loop takes.
inline constexpr std::size_t parallel_min_work = std::size_t{1} << 15;

// Every compile-time dimension of an op is at least 1 (printed with the numbers).
template <std::size_t... Dims>
inline constexpr bool dims_positive = ((Dims > 0) && ...);

// Column blocks used by the reductions over rows (bias and norm-weight gradients): each
// thread owns whole blocks of columns, so the sums need no atomics and do not depend on the
// number of threads.
inline constexpr std::size_t column_block = 64;

// Instantiated by every op on its sizes: one message, in the house form, for all ops; the
// instantiation notes lead from it to the op and the caller's line.
template <std::size_t... Dims>
struct check_dims {
  static_assert(dims_positive<Dims...>,
                "weft::ops: a compile-time dimension of this op is zero. Give every size "
                "(rows, width, vocabulary, hidden) as a positive number.");
  static constexpr bool ok = true;
};

}  // namespace weft::ops::detail
