#pragma once
// ---- mean loss: the mean of a micro-batch's per-token losses, as a host double ----
// The losses stay where the loss op wrote them (device memory under a device backend); the
// executor needs one number for its metrics.
#include "weft/ops/host_element.hpp"  // host_element
#include "weft/ops/op.hpp"            // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// (losses(0) + ... + losses(n-1)) / n, summed in double in element order. Ignored rows count
/// (their loss is 0), as the gradient scale does.
struct mean_loss_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<mean_loss_op> mean_loss{};
template <host_element T>
double op_impl(mean_loss_op, const host_context&, const T* losses, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(losses[i]);
  return s / static_cast<double>(n);
}

}  // namespace weft::ops
