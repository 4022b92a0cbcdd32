#pragma once
// ---- gelu: the tanh approximation (GPT-2) or the exact erf form ----
//   tanh: gelu(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),   k = sqrt(2 / pi)
//         (PyTorch's GELU(approximate="tanh"), Hugging Face's "gelu_new" / "gelu_pytorch_tanh")
//   erf:  gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))               gelu'(x) = Φ(x) + x φ(x)
//         (PyTorch's GELU(), Hugging Face's "gelu": GPT-NeoX/Pythia, BERT, Falcon, MPT)
// tanh is detail::tanh_fast: std::tanh for double, a vectorisable version for float; erf is std::erf.
#include "weft/core/gelu_form.hpp"          // gelu_form
#include "weft/ops/detail/fast_math.hpp"    // tanh_fast
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cmath>
#include <cstddef>

namespace weft::ops {

namespace detail {
// sqrt(2 / pi), to long double precision.
inline constexpr long double gelu_k = 0.797884560802865355879892119868763737L;
inline constexpr long double gelu_c = 0.044715L;
// 1 / sqrt(2) and 1 / sqrt(2 pi), to long double precision.
inline constexpr long double gelu_rsqrt2 = 0.707106781186547524400844362104849039L;
inline constexpr long double gelu_rsqrt2pi = 0.398942280401432677939946059934381868L;

// The erf form and its derivative in compute type F.
template <class F>
inline F gelu_erf(F x) {
  return F(0.5) * x * (F(1) + std::erf(x * F(gelu_rsqrt2)));
}
template <class F>
inline F gelu_erf_grad(F x) {
  return F(0.5) * (F(1) + std::erf(x * F(gelu_rsqrt2))) + x * F(gelu_rsqrt2pi) * std::exp(F(-0.5) * x * x);
}
}  // namespace detail

/// out(N) = gelu(inp(N)), elementwise, in form `Form`. Overwrites out (may alias inp).
template <std::size_t N, gelu_form Form = gelu_form::tanh>
struct gelu_forward_op {
  using signature = ops::signature<args::out<N>, args::in<N>>;
};
template <std::size_t N, gelu_form Form = gelu_form::tanh>
inline constexpr op_fn<gelu_forward_op<N, Form>> gelu_forward{};
template <std::size_t N, host_element T>
void op_impl(gelu_forward_op<N, gelu_form::erf>, const host_context&, T* out, const T* inp) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;
#pragma omp parallel for if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) out[i] = T(detail::gelu_erf(F(inp[i])));
}
template <std::size_t N, host_element T>
void op_impl(gelu_forward_op<N, gelu_form::tanh>, const host_context&, T* out, const T* inp) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;  // T itself, float for bf16
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) {
    const F x = F(inp[i]);
    out[i] = store_as<T>(F(0.5) * x * (F(1) + detail::tanh_fast(k * (x + c * x * x * x))));
  }
}

/// Backward of gelu_forward. Accumulates dinp(N) += gelu'(inp) * dout.
template <std::size_t N, gelu_form Form = gelu_form::tanh>
struct gelu_backward_op {
  using signature = ops::signature<args::out<N>, args::in<N>, args::in<N>>;
};
template <std::size_t N, gelu_form Form = gelu_form::tanh>
inline constexpr op_fn<gelu_backward_op<N, Form>> gelu_backward{};
template <std::size_t N, host_element T>
void op_impl(gelu_backward_op<N, gelu_form::erf>, const host_context&, T* dinp, const T* inp, const T* dout) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;
#pragma omp parallel for if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) dinp[i] = T(F(dinp[i]) + detail::gelu_erf_grad(F(inp[i])) * F(dout[i]));
}
template <std::size_t N, host_element T>
void op_impl(gelu_backward_op<N, gelu_form::tanh>, const host_context&, T* dinp, const T* inp, const T* dout) {
  static_assert(detail::check_dims<N>::ok);
  using F = compute_t<T>;
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
#pragma omp parallel for simd if (N >= detail::parallel_min_work)
  for (std::size_t i = 0; i < N; ++i) {
    const F x = F(inp[i]);
    const F t = detail::tanh_fast(k * (x + c * x * x * x));
    // d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    const F grad = F(0.5) * (F(1) + t) + F(0.5) * x * (F(1) - t * t) * k * (F(1) + F(3) * c * x * x);
    dinp[i] = store_as<T>(F(dinp[i]) + grad * F(dout[i]));
  }
}

}  // namespace weft::ops
