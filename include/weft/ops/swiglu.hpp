#pragma once
// ---- swiglu: out = silu(gate) * up (LLaMA MLP) ----
// inp is (N, 2H): the gate half then the up half along the last axis, as one fused
// up-projection writes them. silu(g) = g * sigmoid(g).
#include "weft/ops/detail/fast_math.hpp"    // sigmoid_fast
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// out(N, H) = silu(inp[:, :H]) * inp[:, H:], with inp (N, 2H). Overwrites out.
template <std::size_t N, std::size_t H>
struct swiglu_forward_op {
  using signature = ops::signature<args::out<N, H>, args::in<N, 2 * H>>;
};
template <std::size_t N, std::size_t H>
inline constexpr op_fn<swiglu_forward_op<N, H>> swiglu_forward{};
template <std::size_t N, std::size_t H, host_element T>
void op_impl(swiglu_forward_op<N, H>, const host_context&, T* out, const T* inp) {
  static_assert(detail::check_dims<N, H>::ok);
  using F = compute_t<T>;  // T itself, float for bf16
#pragma omp parallel for if (N * H >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* gate = inp + n * 2 * H;  // (H)
    const T* up = gate + H;           // (H)
    T* y = out + n * H;               // (H)
#pragma omp simd
    for (std::size_t i = 0; i < H; ++i) y[i] = T(F(gate[i]) * detail::sigmoid_fast(F(gate[i])) * F(up[i]));
  }
}

/// Backward of swiglu_forward. Accumulates into dinp(N, 2H): the gate half gets
/// dout * up * silu'(gate), the up half dout * silu(gate).
template <std::size_t N, std::size_t H>
struct swiglu_backward_op {
  using signature = ops::signature<args::out<N, 2 * H>, args::in<N, 2 * H>, args::in<N, H>>;
};
template <std::size_t N, std::size_t H>
inline constexpr op_fn<swiglu_backward_op<N, H>> swiglu_backward{};
template <std::size_t N, std::size_t H, host_element T>
void op_impl(swiglu_backward_op<N, H>, const host_context&, T* dinp, const T* inp, const T* dout) {
  static_assert(detail::check_dims<N, H>::ok);
  using F = compute_t<T>;
#pragma omp parallel for if (N * H >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* gate = inp + n * 2 * H;  // (H)
    const T* up = gate + H;           // (H)
    const T* dy = dout + n * H;       // (H)
    T* dgate = dinp + n * 2 * H;      // (H)
    T* dup = dgate + H;               // (H)
#pragma omp simd
    for (std::size_t i = 0; i < H; ++i) {
      const F g = F(gate[i]);
      const F sig = detail::sigmoid_fast(g);
      // silu'(g) = sig (1 + g (1 - sig))
      dgate[i] = T(F(dgate[i]) + F(dy[i]) * F(up[i]) * sig * (F(1) + g * (F(1) - sig)));
      dup[i] = T(F(dup[i]) + F(dy[i]) * g * sig);
    }
  }
}

}  // namespace weft::ops
