#pragma once
// ---- grouped matrix product: each contiguous group of rows has its own weight ----
// The experts of a mixture-of-experts layer: rows [offsets[e], offsets[e+1]) of the input are
// the tokens routed to expert e, multiplied by weight[e] (OC, C), stored like nn.Linear. The
// group sizes are known only at run time (they depend on the routing); the total R is static.
#include "weft/ops/detail/gemm.hpp"         // gemm
#include "weft/ops/detail/host_common.hpp"  // check_dims
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::ops {

/// out(R, OC) = inp(R, C) · weight[e](OC, C)ᵀ for the rows of group e, with offsets(E + 1)
/// ascending from 0 to R. Overwrites out.
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E>
struct grouped_matmul_forward_op {
  using signature = ops::signature<args::out<R, OC>, args::in<R, C>, args::in<E, OC, C>, args::in<E + 1>>;
};
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E>
inline constexpr op_fn<grouped_matmul_forward_op<R, C, OC, E>> grouped_matmul_forward{};
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E, host_element T>
void op_impl(grouped_matmul_forward_op<R, C, OC, E>, const host_context&, T* out, const T* inp, const T* weight,
             const std::int32_t* offsets) {
  static_assert(detail::check_dims<R, C, OC, E>::ok);
  for (std::size_t e = 0; e < E; ++e) {
    const auto lo = static_cast<std::size_t>(offsets[e]), rows = static_cast<std::size_t>(offsets[e + 1]) - lo;
    if (rows == 0) continue;
    detail::gemm<T>(false, true, rows, OC, C, T(1), inp + lo * C, C, weight + e * OC * C, C, T(0), out + lo * OC, OC);
  }
}

/// Backward of grouped_matmul_forward. Accumulates dinp(R, C) (nullable) and dweight(E, OC, C).
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E>
struct grouped_matmul_backward_op {
  using signature = ops::signature<args::out_opt<R, C>, args::out<E, OC, C>, args::in<R, OC>, args::in<R, C>, args::in<E, OC, C>, args::in<E + 1>>;
};
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E>
inline constexpr op_fn<grouped_matmul_backward_op<R, C, OC, E>> grouped_matmul_backward{};
template <std::size_t R, std::size_t C, std::size_t OC, std::size_t E, host_element T>
void op_impl(grouped_matmul_backward_op<R, C, OC, E>, const host_context&, std::type_identity_t<T>* dinp, T* dweight,
             const T* dout, const T* inp, const T* weight, const std::int32_t* offsets) {
  static_assert(detail::check_dims<R, C, OC, E>::ok);
  for (std::size_t e = 0; e < E; ++e) {
    const auto lo = static_cast<std::size_t>(offsets[e]), rows = static_cast<std::size_t>(offsets[e + 1]) - lo;
    if (rows == 0) continue;
    if (dinp != nullptr)  // dinp(rows, C) += dout(rows, OC) · W_e(OC, C)
      detail::gemm<T>(false, false, rows, C, OC, T(1), dout + lo * OC, OC, weight + e * OC * C, C, T(1), dinp + lo * C, C);
    // dW_e(OC, C) += dout(rows, OC)ᵀ · inp(rows, C)
    detail::gemm<T>(true, false, OC, C, rows, T(1), dout + lo * OC, OC, inp + lo * C, C, T(1), dweight + e * OC * C, C);
  }
}

}  // namespace weft::ops
