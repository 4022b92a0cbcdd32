#pragma once
// ---- accumulate: y += x, or y += alpha * x ----
// The gradient of a skip path, a partial result added onto its destination, a bias added to
// every row. Elementwise, so threads do not change the result.
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>
#include <type_traits>

namespace weft::ops {

/// y(n) += x(n); with alpha, y(n) += alpha * x(n). y and x must not overlap.
struct accumulate_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<accumulate_op> accumulate{};
template <host_element T>
void op_impl(accumulate_op, const host_context&, T* y, const std::type_identity_t<T>* x, std::size_t n) {
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}
template <host_element T>
void op_impl(accumulate_op, const host_context&, T* y, const std::type_identity_t<T>* x, std::size_t n,
             std::type_identity_t<T> alpha) {
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) y[i] = T(compute_t<T>(y[i]) + compute_t<T>(alpha) * compute_t<T>(x[i]));
}

/// y(Rows, N) += x(N) for every row: a bias added to each token's row.
template <std::size_t Rows, std::size_t N>
struct accumulate_rows_op {
  using signature = ops::signature<args::out<Rows, N>, args::in<N>>;
};
template <std::size_t Rows, std::size_t N>
inline constexpr op_fn<accumulate_rows_op<Rows, N>> accumulate_rows{};
template <std::size_t Rows, std::size_t N, host_element T>
void op_impl(accumulate_rows_op<Rows, N>, const host_context&, T* y, const std::type_identity_t<T>* x) {
  for (std::size_t r = 0; r < Rows; ++r) {
    T* yr = y + r * N;  // (N)
#pragma omp simd
    for (std::size_t i = 0; i < N; ++i) yr[i] += x[i];
  }
}

}  // namespace weft::ops
