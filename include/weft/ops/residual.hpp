#pragma once
// ---- residual connection: out = a + b ----
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// out(N) = a(N) + b(N), elementwise; N is the total element count. Overwrites out (may
/// alias a or b).
template <std::size_t N>
struct residual_forward_op {
  using signature = ops::signature<args::out<N>, args::in<N>, args::in<N>>;
};
template <std::size_t N>
inline constexpr op_fn<residual_forward_op<N>> residual_forward{};
template <std::size_t N, host_element T>
void op_impl(residual_forward_op<N>, const host_context&, T* out, const T* a, const T* b) {
  static_assert(detail::check_dims<N>::ok);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) out[i] = T(compute_t<T>(a[i]) + compute_t<T>(b[i]));
}

/// Backward of residual_forward. Accumulates da(N) += dout and db(N) += dout. da and db must
/// not alias dout (nor each other).
template <std::size_t N>
struct residual_backward_op {
  using signature = ops::signature<args::out<N>, args::out<N>, args::in<N>>;
};
template <std::size_t N>
inline constexpr op_fn<residual_backward_op<N>> residual_backward{};
template <std::size_t N, host_element T>
void op_impl(residual_backward_op<N>, const host_context&, T* da, T* db, const T* dout) {
  static_assert(detail::check_dims<N>::ok);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) {
    // compute_t: float for bf16, the sum rounded once on store
    da[i] = T(compute_t<T>(da[i]) + compute_t<T>(dout[i]));
    db[i] = T(compute_t<T>(db[i]) + compute_t<T>(dout[i]));
  }
}

}  // namespace weft::ops
