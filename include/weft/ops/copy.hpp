#pragma once
// ---- copy: dst = src ----
// Moves between buffers of one memory space (an input passed through, a shard into a send
// buffer, a sequence slice re-ordered around a collective). Destination first, like every op.
#include "weft/ops/op.hpp"  // op_fn, host_context

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

/// dst(n) = src(n). The two must not overlap.
struct copy_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<copy_op> copy{};
template <class T>
  requires std::is_trivially_copyable_v<T>
void op_impl(copy_op, const host_context&, T* dst, const std::type_identity_t<T>* src, std::size_t n) {
  std::copy_n(src, n, dst);
}

}  // namespace weft::ops
