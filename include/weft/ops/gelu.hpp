#pragma once
// ---- gelu, tanh approximation (GPT-2) ----
//   gelu(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),   k = sqrt(2 / pi)
// tanh is detail::tanh_fast: std::tanh for double, a vectorisable version for float.
#include "weft/ops/detail/fast_math.hpp"    // tanh_fast
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

namespace detail {
// sqrt(2 / pi), to long double precision.
inline constexpr long double gelu_k = 0.797884560802865355879892119868763737L;
inline constexpr long double gelu_c = 0.044715L;
}  // namespace detail

/// out(N) = gelu(inp(N)), elementwise. Overwrites out (may alias inp).
template <std::size_t N>
struct gelu_forward_op {
  using signature = ops::signature<args::out<N>, args::in<N>>;
};
template <std::size_t N>
inline constexpr op_fn<gelu_forward_op<N>> gelu_forward{};
template <std::size_t N, host_element T>
void op_impl(gelu_forward_op<N>, const host_context&, T* out, const T* inp) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;  // T itself, float for bf16
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) {
    const F x = F(inp[i]);
    out[i] = T(F(0.5) * x * (F(1) + detail::tanh_fast(k * (x + c * x * x * x))));
  }
}

/// Backward of gelu_forward. Accumulates dinp(N) += gelu'(inp) * dout.
template <std::size_t N>
struct gelu_backward_op {
  using signature = ops::signature<args::out<N>, args::in<N>, args::in<N>>;
};
template <std::size_t N>
inline constexpr op_fn<gelu_backward_op<N>> gelu_backward{};
template <std::size_t N, host_element T>
void op_impl(gelu_backward_op<N>, const host_context&, T* dinp, const T* inp, const T* dout) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) {
    const F x = F(inp[i]);
    const F t = detail::tanh_fast(k * (x + c * x * x * x));
    // d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    const F grad = F(0.5) * (F(1) + t) + F(0.5) * x * (F(1) - t * t) * k * (F(1) + F(3) * c * x * x);
    dinp[i] = T(F(dinp[i]) + grad * F(dout[i]));
  }
}

}  // namespace weft::ops
