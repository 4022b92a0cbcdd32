#pragma once
// ---- geglu: out = gelu(gate) * up (Gemma's MLP; T5 v1.1) ----
// The layout of swiglu (ops/detail/gated.hpp); gelu is GPT-2's tanh form (ops/gelu.hpp), as
// Gemma's config names it (gelu_pytorch_tanh).
#include "weft/ops/detail/fast_math.hpp"    // tanh_fast
#include "weft/ops/detail/gated.hpp"        // gated_forward_rows, gated_backward_rows
#include "weft/ops/detail/host_common.hpp"  // check_dims
#include "weft/ops/gelu.hpp"                // detail::gelu_k, detail::gelu_c
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

namespace detail {
struct gelu_tanh_gate {
  template <class F>
  static F value(F g) {
    constexpr F k = F(gelu_k), c = F(gelu_c);
    return F(0.5) * g * (F(1) + tanh_fast(k * (g + c * g * g * g)));
  }
  template <class F>
  static void grads(F g, F dy, F up, F& dgate, F& dup) {
    constexpr F k = F(gelu_k), c = F(gelu_c);
    const F t = tanh_fast(k * (g + c * g * g * g));
    // gelu'(g) = 0.5 (1 + t) + 0.5 g (1 - t^2) k (1 + 3 c g^2)
    const F grad = F(0.5) * (F(1) + t) + F(0.5) * g * (F(1) - t * t) * k * (F(1) + F(3) * c * g * g);
    dgate = dy * up * grad;
    dup = dy * (F(0.5) * g * (F(1) + t));
  }
};
}  // namespace detail

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
  detail::gated_forward_rows<N, H, detail::gelu_tanh_gate>(out, inp);
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
  detail::gated_backward_rows<N, H, detail::gelu_tanh_gate>(dinp, inp, dout);
}

}  // namespace weft::ops
