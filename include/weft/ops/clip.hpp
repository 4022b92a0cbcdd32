#pragma once
// ---- clip: scale gradients down to a maximum global norm ----
// The norm is computed first (sum_squares, then any reduction over ranks); this op applies
// the factor max_norm / norm to the buffer, or leaves it alone.
#include "weft/ops/host_element.hpp"  // host_element
#include "weft/ops/op.hpp"            // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// g(n) *= max_norm / norm when norm > max_norm; nothing when max_norm <= 0 (clipping off) or
/// the norm is within it (or NaN). The factor is computed in double and rounded to T once.
struct clip_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<clip_op> clip{};
template <host_element T>
void op_impl(clip_op, const host_context&, T* g, std::size_t n, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return;
  // compute_t: a bf16 gradient is scaled by the float factor and rounded once.
  const compute_t<T> s = static_cast<compute_t<T>>(max_norm / norm);
  for (std::size_t i = 0; i < n; ++i) g[i] = T(compute_t<T>(g[i]) * s);
}

}  // namespace weft::ops
