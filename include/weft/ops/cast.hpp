#pragma once
// ---- cast: dst = src converted element by element (f32 master -> bf16 parameters) ----
// Each element is rounded once, to nearest even (weft::bf16's conversion from float/double).
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element, compute_t
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// dst(n) = Dst(src(n)). The two must not overlap. Both are host element types (float,
/// double, bf16; long double only to and from the built-in floating types).
struct cast_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<cast_op> cast{};
template <host_element Dst, host_element Src>
  requires requires(Src s) { static_cast<Dst>(s); }
void op_impl(cast_op, const host_context&, Dst* dst, const Src* src, std::size_t n) {
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(src[i]);
}

}  // namespace weft::ops
