#pragma once
// ---- fill and zero: set every element of a buffer ----
// The executors zero the gradient block once per step and the layers zero a workspace before
// a backward accumulates into it; on a device each is a memset or a kernel, so they are ops.
// n is a run-time count: the regions (a rank's gradient block, a replicated run) may depend on
// the run-time data-parallel degree.
#include "weft/ops/op.hpp"  // op_fn, host_context

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

/// x(n) = value. Any trivially copyable element type (token ids too).
struct fill_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<fill_op> fill{};
template <class T>
  requires std::is_trivially_copyable_v<T>
void op_impl(fill_op, const host_context&, T* x, std::size_t n, std::type_identity_t<T> value) {
  std::fill_n(x, n, value);
}

/// x(n) = 0.
struct zero_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<zero_op> zero{};
template <class T>
  requires std::is_trivially_copyable_v<T>
void op_impl(zero_op, const host_context&, T* x, std::size_t n) {
  std::fill_n(x, n, T{0});
}

}  // namespace weft::ops
