#pragma once
// ---- gemm over typed views: the layouts choose the transposes ----
//   ops::gemm(ctx, c, a, b, alpha, beta):  C(M, N) = alpha · A(M, K) · B(K, N) + beta · C
// a, b and c are 2-D tensor views (tensor/tensor.hpp: tensor<T, Mapping, Space>), each with
// its layout in its type. An operand whose second mode is contiguous (row-major) is read as it
// is; one whose first mode is contiguous (column-major: the transpose of a row-major matrix in
// the same memory) is read transposed by the product itself, so a weight stored (out, in) like
// torch's nn.Linear is passed as a column-major (in, out) view of the same pointer and nothing
// is copied (as CuTe's algorithms take tensors whose layouts carry the transposes):
//   auto w = make_tensor<shape<axis<"in", C>, axis<"out", OC>>, column_major>(weight);  // weight(OC, C)
//   ops::gemm(ctx, out_view, in_view, w);                                               // in · weight^T
// The sizes, the transposes and the leading dimensions are compile-time facts of the types;
// extents that disagree, or an operand with no contiguous mode, is a compile error that names the
// problem. A column-major C (a gradient kept in the layout of a weight stored transposed) is
// computed as its transpose, C^T = B^T · A^T. The memory space is in the type too: this
// body takes host views under the host context; a backend adds its own body for its views.
// Element types: those detail::gemm runs (float and double through CBLAS, bf16/f16 with float
// accumulation, any host element through the portable loops).
#include "weft/ops/detail/gemm.hpp"   // detail::gemm
#include "weft/ops/host_element.hpp"  // host_element
#include "weft/ops/op.hpp"            // op_fn, host_context
#include "weft/ops/views.hpp"       // transpose
#include "weft/tensor/tensor.hpp"     // tensor, tensor_like, host_space

#include <climits>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

namespace detail {

/// How the BLAS-style product reads a 2-D view: as stored (row-major: its second mode is
/// contiguous) or transposed (column-major: its first is), with the leading dimension of the
/// stored row-major matrix. A mode of extent 1 is contiguous whichever its stride.
template <class View>
struct gemm_operand {
  using mapping = typename std::remove_cvref_t<View>::mapping_type;
  static constexpr std::size_t rows = mapping::extent(0), cols = mapping::extent(1);
  static constexpr bool two_d = mapping::rank == 2;
  static constexpr bool row_major = cols == 1 || mapping::stride(1) == 1;
  static constexpr bool column_major = !row_major && (rows == 1 || mapping::stride(0) == 1);
  /// Read transposed (the view is the transpose of a row-major matrix in its memory).
  static constexpr bool transposed = column_major;
  /// Row stride of the stored row-major matrix (at least its row length, as BLAS requires).
  static constexpr std::size_t ld = row_major ? (rows == 1 ? cols : mapping::stride(0))
                                              : (cols == 1 ? rows : mapping::stride(1));
  static constexpr bool leading_fits = row_major ? ld >= cols : ld >= rows;
  static constexpr bool fits_int = rows <= INT_MAX && cols <= INT_MAX && ld <= INT_MAX;
};

template <class C, class A, class B>
constexpr bool gemm_view_checks() {
  using c = gemm_operand<C>;
  using a = gemm_operand<A>;
  using b = gemm_operand<B>;
  static_assert(c::two_d && a::two_d && b::two_d,
                "weft::ops::gemm: every operand must be a 2-D view (rows, cols). Reshape the view with a 2-D mapping.");
  static_assert(a::rows == c::rows && b::cols == c::cols && a::cols == b::rows,
                "weft::ops::gemm: the extents do not chain: C(M, N) = A(M, K) · B(K, N). Pass views whose extents match "
                "(a weight stored (out, in) is read as a column-major (in, out) view).");
  static_assert(c::row_major || c::column_major,
                "weft::ops::gemm: C has no contiguous mode. Pass a row-major or a column-major view of C (accumulate "
                "into a dense copy first).");
  static_assert(a::row_major || a::column_major,
                "weft::ops::gemm: A has no contiguous mode. Pass a row-major or a column-major view (copy a strided one "
                "first).");
  static_assert(b::row_major || b::column_major,
                "weft::ops::gemm: B has no contiguous mode. Pass a row-major or a column-major view (copy a strided one "
                "first).");
  static_assert(a::leading_fits && b::leading_fits && c::leading_fits,
                "weft::ops::gemm: a view's rows overlap (its leading stride is smaller than its row). Pass a view whose "
                "rows are at least a row apart.");
  static_assert(a::fits_int && b::fits_int && c::fits_int,
                "weft::ops::gemm: a size exceeds INT_MAX, the largest BLAS can index. Split the product.");
  return true;
}

}  // namespace detail

/// C = alpha · A · B + beta · C over 2-D views (see the top of this file). beta 0: C is written,
/// not read.
struct gemm_op {};
inline constexpr op_fn<gemm_op> gemm{};

template <host_element T, class MC, class TA, class MA, class TB, class MB>
  requires std::is_same_v<std::remove_const_t<TA>, T> && std::is_same_v<std::remove_const_t<TB>, T>
void op_impl(gemm_op, const host_context&, tensor<T, MC, host_space> c, tensor<TA, MA, host_space> a,
             tensor<TB, MB, host_space> b, std::type_identity_t<T> alpha = T(1), std::type_identity_t<T> beta = T(0)) {
  using C = decltype(c);
  using A = decltype(a);
  using B = decltype(b);
  static_assert(detail::gemm_view_checks<C, A, B>());
  using oc = detail::gemm_operand<C>;
  if constexpr (!oc::row_major) {
    // A column-major C is the transpose of a row-major one: C^T = B^T · A^T (a gradient kept in
    // the layout of a weight stored transposed).
    op_impl(gemm_op{}, host_context{}, transpose(c), transpose(b), transpose(a), alpha, beta);
  } else {
    using oa = detail::gemm_operand<A>;
    using ob = detail::gemm_operand<B>;
    detail::gemm<T>(oa::transposed, ob::transposed, oc::rows, oc::cols, oa::cols, alpha, a.data(), oa::ld, b.data(),
                    ob::ld, beta, c.data(), oc::ld);
  }
}

}  // namespace weft::ops
