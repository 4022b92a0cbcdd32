#pragma once
// ---- scale: multiply a buffer by a factor (unscaling loss-scaled gradients) ----
// Dynamic loss scaling (train/loss_scaler.hpp) divides the gradients by the loss scale before
// the norm is clipped. The factor is a power of two there, so the product is exact for every
// normal value of the result.
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element, compute_t
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// x(n) *= factor, computed in compute_t<T> (float for bf16/f16) and rounded to T once; nothing
/// when factor is 1.
struct scale_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<scale_op> scale{};
template <host_element T>
void op_impl(scale_op, const host_context&, T* x, std::size_t n, double factor) {
  if (factor == 1.0) return;
  const compute_t<T> s = static_cast<compute_t<T>>(factor);
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) x[i] = T(compute_t<T>(x[i]) * s);
}

}  // namespace weft::ops
