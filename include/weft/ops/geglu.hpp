#pragma once
// ---- geglu: out = gelu(gate) * up (Gemma's MLP; T5 v1.1) ----
// inp is (N, 2H): the gate half then the up half along the last axis, as one fused
// up-projection writes them (the layout of swiglu). gelu is GPT-2's tanh form (ops/gelu.hpp),
// as Gemma's config names it (gelu_pytorch_tanh).
#include "weft/ops/detail/fast_math.hpp"    // tanh_fast
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/gelu.hpp"                // detail::gelu_k, detail::gelu_c
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

/// out(N, H) = gelu(inp[:, :H]) * inp[:, H:], with inp (N, 2H). Overwrites out.
template <std::size_t N, std::size_t H>
struct geglu_forward_op {
  using signature = ops::signature<args::out<N, H>, args::in<N, 2 * H>>;
};
template <std::size_t N, std::size_t H>
inline constexpr op_fn<geglu_forward_op<N, H>> geglu_forward{};
template <std::size_t N, std::size_t H, host_element T>
void op_impl(geglu_forward_op<N, H>, const host_context&, T* out, const T* inp) {
  static_assert(detail::check_dims<N, H>::ok);
  using F = compute_t<T>;  // T itself, float for bf16
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
#pragma omp parallel for if (N * H >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* gate = inp + n * 2 * H;  // (H)
    const T* up = gate + H;           // (H)
    T* y = out + n * H;               // (H)
#pragma omp simd
    for (std::size_t i = 0; i < H; ++i) {
      const F g = F(gate[i]);
      y[i] = T(F(0.5) * g * (F(1) + detail::tanh_fast(k * (g + c * g * g * g))) * F(up[i]));
    }
  }
}

/// Backward of geglu_forward. Accumulates into dinp(N, 2H): the gate half gets
/// dout * up * gelu'(gate), the up half dout * gelu(gate).
template <std::size_t N, std::size_t H>
struct geglu_backward_op {
  using signature = ops::signature<args::out<N, 2 * H>, args::in<N, 2 * H>, args::in<N, H>>;
};
template <std::size_t N, std::size_t H>
inline constexpr op_fn<geglu_backward_op<N, H>> geglu_backward{};
template <std::size_t N, std::size_t H, host_element T>
void op_impl(geglu_backward_op<N, H>, const host_context&, T* dinp, const T* inp, const T* dout) {
  static_assert(detail::check_dims<N, H>::ok);
  using F = compute_t<T>;
  constexpr F k = F(detail::gelu_k), c = F(detail::gelu_c);
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
      const F t = detail::tanh_fast(k * (g + c * g * g * g));
      const F gelu = F(0.5) * g * (F(1) + t);
      // gelu'(g) = 0.5 (1 + t) + 0.5 g (1 - t^2) k (1 + 3 c g^2)
      const F grad = F(0.5) * (F(1) + t) + F(0.5) * g * (F(1) - t * t) * k * (F(1) + F(3) * c * g * g);
      dgate[i] = T(F(dgate[i]) + F(dy[i]) * F(up[i]) * grad);
      dup[i] = T(F(dup[i]) + F(dy[i]) * gelu);
    }
  }
}

}  // namespace weft::ops
