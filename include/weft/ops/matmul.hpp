#pragma once
// ---- matmul: the linear layer, out = inp · weight^T + bias ----
// weight is stored like torch's nn.Linear, (out_features, in_features), so the forward
// product reads it transposed through the BLAS flag; nothing is copied. Every product is
// one gemm call over all N rows: forward 1, backward 2 (dinp, dweight).
#include "weft/core/diagnostics.hpp"        // diag::at_most
#include "weft/ops/detail/gemm.hpp"         // gemm
#include "weft/ops/gemm.hpp"                // gemm over views
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

// ---- the view form: the weight's layout chooses the product ----
// The weight is passed as the matrix multiplied on the right, w(C, OC), with its layout in its
// type: torch's nn.Linear storage (OC, C) is the column-major (C, OC) view of the same memory
// (`linear_weight_view`), so the forward reads it transposed and the weight gradient is
// computed as its transpose into the same layout; a weight stored (C, OC) (Hugging Face GPT-2's
// Conv1D) is a row-major view and is read as it is. Bit-identical to the pointer form for the
// nn.Linear layout (the same gemm call).

namespace detail {
template <std::size_t N, std::size_t C, std::size_t OC, class Out, class In, class W>
constexpr bool matmul_view_checks() {
  using o = gemm_operand<Out>;
  using i = gemm_operand<In>;
  using w = gemm_operand<W>;
  static_assert(o::two_d && i::two_d && w::two_d,
                "weft::ops::matmul: out, inp and the weight must be 2-D views: out(N, OC), inp(N, C), w(C, OC).");
  constexpr bool shaped = o::rows == N && o::cols == OC && i::rows == N && i::cols == C && w::rows == C && w::cols == OC;
  static_assert(shaped, "weft::ops::matmul: the views' extents are not out(N, OC), inp(N, C), w(C, OC) of the op. A "
                        "weight stored (OC, C) like nn.Linear's is passed as its column-major (C, OC) view "
                        "(linear_weight_view).");
  static_assert(o::row_major, "weft::ops::matmul: out must be a row-major view.");
  return shaped && o::row_major;
}
template <class V, std::size_t... E>
constexpr bool dense_vector_of() {
  using M = typename std::remove_cvref_t<V>::mapping_type;
  return M::rank == 1 && M::size == (std::size_t{1} * ... * E) && (M::size == 1 || M::stride(0) == 1);
}
}  // namespace detail

/// The (C, OC) view of a weight stored (OC, C) like torch's nn.Linear: column-major, same memory.
template <std::size_t C, std::size_t OC, class Space = host_space, class T>
WEFT_HOST_DEVICE constexpr auto linear_weight_view(T* weight) noexcept {
  return transpose(packed_view<Space, OC, C>(weight));
}

/// out(N, OC) = inp(N, C) · w(C, OC) + bias(OC) over views; bias may be ops::none or a view with a
/// null pointer. Overwrites out.
template <std::size_t N, std::size_t C, std::size_t OC, host_element T, class MO, class TI, class MI, class TW,
          class MW, class Bias>
  requires std::is_same_v<std::remove_const_t<TI>, T> && std::is_same_v<std::remove_const_t<TW>, T>
void op_impl(matmul_forward_op<N, C, OC>, const host_context& ctx, tensor<T, MO, host_space> out,
             tensor<TI, MI, host_space> inp, tensor<TW, MW, host_space> w, Bias bias) {
  static_assert(detail::matmul_checks<N, C, OC>());
  static_assert(detail::matmul_view_checks<N, C, OC, decltype(out), decltype(inp), decltype(w)>());
  const T* b = nullptr;
  if constexpr (!std::is_same_v<Bias, none_t>) {
    static_assert(detail::dense_vector_of<Bias, OC>(), "weft::ops::matmul: the bias must be a dense (OC) view or ops::none.");
    b = bias.data();
  }
  if (b != nullptr) {
    constexpr std::size_t ld = detail::gemm_operand<decltype(out)>::ld;
#pragma omp parallel for if (N * OC >= detail::parallel_min_work)
    for (std::size_t n = 0; n < N; ++n) std::copy(b, b + OC, out.data() + n * ld);
  }
  gemm(ctx, out, inp, w, T(1), b != nullptr ? T(1) : T(0));
}

/// Backward of the view form. Accumulates: dinp(N, C) += dout · w^T, dw(C, OC) += inp^T · dout
/// (dw in the weight's layout), dbias(OC) += column sums of dout. dinp and dbias may be
/// ops::none or views with null pointers.
template <std::size_t N, std::size_t C, std::size_t OC, host_element T, class DIn, class MDW, class DBias, class TO,
          class MO, class TI, class MI, class TW, class MW>
  requires std::is_same_v<std::remove_const_t<TO>, T> && std::is_same_v<std::remove_const_t<TI>, T> &&
           std::is_same_v<std::remove_const_t<TW>, T>
void op_impl(matmul_backward_op<N, C, OC>, const host_context& ctx, DIn dinp, tensor<T, MDW, host_space> dw,
             DBias dbias, tensor<TO, MO, host_space> dout, tensor<TI, MI, host_space> inp,
             tensor<TW, MW, host_space> w) {
  static_assert(detail::matmul_checks<N, C, OC>());
  static_assert(detail::matmul_view_checks<N, C, OC, decltype(dout), decltype(inp), decltype(w)>());
  static_assert(detail::matmul_view_checks<N, C, OC, decltype(dout), decltype(inp), decltype(dw)>());
  if constexpr (!std::is_same_v<DIn, none_t>) {
    static_assert(detail::matmul_view_checks<N, C, OC, decltype(dout), DIn, decltype(w)>());
    if (dinp.data() != nullptr) gemm(ctx, dinp, dout, transpose(w), T(1), T(1));  // (N, C) += (N, OC) · (OC, C)
  }
  gemm(ctx, dw, transpose(inp), dout, T(1), T(1));  // (C, OC) += (C, N) · (N, OC)
  if constexpr (!std::is_same_v<DBias, none_t>) {
    static_assert(detail::dense_vector_of<DBias, OC>(), "weft::ops::matmul: dbias must be a dense (OC) view or ops::none.");
    static_assert(detail::dense_row_major<MO>(), "weft::ops::matmul: the bias gradient reads dout dense and row-major.");
    if (dbias.data() != nullptr) detail::sum_rows_into<N, OC>(dbias.data(), dout.data());
  }
}

/// dbias(OC) += column sums of dout(N, OC): the bias gradient of matmul_backward on its own
/// (a row-parallel linear under sequence parallelism sums its bias over a sequence slice).
template <std::size_t N, std::size_t OC>
struct bias_backward_op {
  using signature = ops::signature<args::out<OC>, args::in<N, OC>>;
};
template <std::size_t N, std::size_t OC>
inline constexpr op_fn<bias_backward_op<N, OC>> bias_backward{};
template <std::size_t N, std::size_t OC, host_element T>
void op_impl(bias_backward_op<N, OC>, const host_context&, T* dbias, const T* dout) {
  static_assert(detail::check_dims<N, OC>::ok);
  detail::sum_rows_into<N, OC>(dbias, dout);
}

}  // namespace weft::ops
