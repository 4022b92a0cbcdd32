#pragma once
// ---- sum of squares: the squared L2 norm of a buffer, accumulated in double ----
// The global gradient norm for clipping. The result is a host double (a device backend
// reduces on the device and copies one number back). Two summation orders, each the one a
// step has always used, so that norms (and clipped updates) stay bit-identical:
//   sum_squares            eight interleaved accumulators, combined as a tree (vectorises)
//   sum_squares_continue   one running sum in element order, continued from `carry`, so that
//                          a caller can sum several runs of a buffer (skipping others) as
//                          if it were one loop
#include "weft/ops/host_element.hpp"  // host_element
#include "weft/ops/op.hpp"            // op_fn, host_context

#include <cstddef>
#include <utility>

namespace weft::ops {

/// Σ x(n)² in double, eight accumulators: lane j takes elements i ≡ j (mod 8) of the leading
/// multiple of 8, lane 0 the tail; lanes combine as ((0+1)+(2+3))+((4+5)+(6+7)).
struct sum_squares_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<sum_squares_op> sum_squares{};
template <host_element T>
double op_impl(sum_squares_op, const host_context&, const T* x, std::size_t n) {
  double acc[8] = {};
  const std::size_t whole = n - n % 8;  // the leading multiple of 8
  for (std::size_t i = 0; i < whole; i += 8)
    for (std::size_t j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (std::size_t i = whole; i < n; ++i) acc[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// carry + x(0)² + x(1)² + ... + x(n-1)², added one element at a time in double.
struct sum_squares_continue_op {};
inline constexpr op_fn<sum_squares_continue_op> sum_squares_continue{};
template <host_element T>
double op_impl(sum_squares_continue_op, const host_context&, double carry, const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) carry += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return carry;
}
/// The view form, for any context: sum_squares_continue(ctx, carry, view) runs the context's body
/// on the view's elements.
template <execution_context Ctx, class V>
  requires(detail::is_flat_operand_v<V>)
double op_impl(sum_squares_continue_op op, const Ctx& ctx, double carry, const V& x) {
  static_assert(detail::flat_operands_ok<context_space_t<Ctx>, 1, V>(std::make_index_sequence<1>{}));
  return op_impl(op, ctx, carry, x.data(), detail::size_of(x));
}

}  // namespace weft::ops
