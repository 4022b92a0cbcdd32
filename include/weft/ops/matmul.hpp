#pragma once
// ---- matmul: the linear layer, out = inp · weight^T + bias ----
// weight is stored like torch's nn.Linear, (out_features, in_features), so the forward
// product reads it transposed through the BLAS flag; nothing is copied. Every product is
// one gemm call over all N rows: forward 1, backward 2 (dinp, dweight).
#include "weft/core/diagnostics.hpp"        // diag::at_most
#include "weft/ops/detail/gemm.hpp"         // gemm
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims, column_block, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <algorithm>
#include <climits>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

namespace detail {

// CBLAS takes int sizes and strides.
template <std::size_t N, std::size_t C, std::size_t OC>
inline constexpr bool matmul_fits_int = diag::at_most<N, INT_MAX> && diag::at_most<C, INT_MAX> &&
                                        diag::at_most<OC, INT_MAX>;

template <std::size_t N, std::size_t C, std::size_t OC>
constexpr bool matmul_checks() {
  static_assert(check_dims<N, C, OC>::ok);
  static_assert(matmul_fits_int<N, C, OC>,
                "weft::ops::matmul: a size exceeds INT_MAX, the largest BLAS can index. Split the "
                "rows into several calls.");
  return true;
}

// dbias(OC) += sum over rows of dout(N, OC). Threads own column blocks (no atomics, the
// same sums whatever the thread count); the inner loop runs along a contiguous row segment.
template <std::size_t N, std::size_t OC, class T>
void sum_rows_into(T* dbias, const T* dout) {
  constexpr std::size_t blocks = (OC + column_block - 1) / column_block;
#pragma omp parallel for if (N * OC >= parallel_min_work && blocks > 1)
  for (std::size_t cb = 0; cb < blocks; ++cb) {
    const std::size_t j0 = cb * column_block, nb = std::min(column_block, OC - j0);
    acc_t<T> acc[column_block] = {};  // (block of OC)
    for (std::size_t n = 0; n < N; ++n) {
      const T* row = dout + n * OC + j0;  // (nb)
#pragma omp simd
      for (std::size_t j = 0; j < nb; ++j) acc[j] += acc_t<T>(row[j]);
    }
    // one rounding per element for a bf16 dbias: the sum is formed in float, then stored
    using F = compute_t<T>;
    for (std::size_t j = 0; j < nb; ++j) dbias[j0 + j] = T(F(dbias[j0 + j]) + F(acc[j]));
  }
}

}  // namespace detail

/// out(N, OC) = inp(N, C) · weight(OC, C)^T + bias(OC); bias may be null (plain nullptr
/// works). Overwrites out.
template <std::size_t N, std::size_t C, std::size_t OC>
struct matmul_forward_op {};
template <std::size_t N, std::size_t C, std::size_t OC>
inline constexpr op_fn<matmul_forward_op<N, C, OC>> matmul_forward{};
template <std::size_t N, std::size_t C, std::size_t OC, host_element T>
void op_impl(matmul_forward_op<N, C, OC>, const host_context&, T* out, const T* inp, const T* weight,
             const std::type_identity_t<T>* bias) {
  static_assert(detail::matmul_checks<N, C, OC>());
  if (bias != nullptr) {
    // Start every row of out at the bias, then let the product add onto it (beta = 1).
#pragma omp parallel for if (N * OC >= detail::parallel_min_work)
    for (std::size_t n = 0; n < N; ++n) std::copy(bias, bias + OC, out + n * OC);
  }
  // (N, OC) = (N, C) · (OC, C)^T
  detail::gemm<T>(false, true, N, OC, C, T(1), inp, C, weight, C, bias != nullptr ? T(1) : T(0), out, OC);
}

/// Backward of matmul_forward. Accumulates: dinp(N, C) += dout · weight,
/// dweight(OC, C) += dout^T · inp, dbias(OC) += column sums of dout. dinp and dbias may be
/// null (the input needs no gradient / the layer has no bias); a plain nullptr works, T is
/// deduced from the other pointers.
template <std::size_t N, std::size_t C, std::size_t OC>
struct matmul_backward_op {};
template <std::size_t N, std::size_t C, std::size_t OC>
inline constexpr op_fn<matmul_backward_op<N, C, OC>> matmul_backward{};
template <std::size_t N, std::size_t C, std::size_t OC, host_element T>
void op_impl(matmul_backward_op<N, C, OC>, const host_context&, std::type_identity_t<T>* dinp, T* dweight,
             std::type_identity_t<T>* dbias, const T* dout, const T* inp, const T* weight) {
  static_assert(detail::matmul_checks<N, C, OC>());
  // (N, C) += (N, OC) · (OC, C)
  if (dinp != nullptr) detail::gemm<T>(false, false, N, C, OC, T(1), dout, OC, weight, C, T(1), dinp, C);
  // (OC, C) += (N, OC)^T · (N, C)
  detail::gemm<T>(true, false, OC, C, N, T(1), dout, OC, inp, C, T(1), dweight, C);
  if (dbias != nullptr) detail::sum_rows_into<N, OC>(dbias, dout);
}

/// dbias(OC) += column sums of dout(N, OC): the bias gradient of matmul_backward on its own
/// (a row-parallel linear under sequence parallelism sums its bias over a sequence slice).
template <std::size_t N, std::size_t OC>
struct bias_backward_op {};
template <std::size_t N, std::size_t OC>
inline constexpr op_fn<bias_backward_op<N, OC>> bias_backward{};
template <std::size_t N, std::size_t OC, host_element T>
void op_impl(bias_backward_op<N, OC>, const host_context&, T* dbias, const T* dout) {
  static_assert(detail::check_dims<N, OC>::ok);
  detail::sum_rows_into<N, OC>(dbias, dout);
}

}  // namespace weft::ops
