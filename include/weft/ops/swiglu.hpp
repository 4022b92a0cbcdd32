#pragma once
// ---- swiglu: out = silu(gate) * up (LLaMA MLP) ----
// inp is (N, 2H): the gate half then the up half along the last axis, as one fused
// up-projection writes them. silu(g) = g * sigmoid(g).
#include "weft/ops/detail/fast_math.hpp"    // sigmoid_fast
#include "weft/ops/detail/gated.hpp"        // gated_forward_rows, gated_backward_rows
#include "weft/ops/detail/host_common.hpp"  // check_dims
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>

namespace weft::ops {

namespace detail {
struct silu_gate {
  template <class F>
  static F value(F g) {
    return g * sigmoid_fast(g);
  }
  template <class F>
  static void grads(F g, F dy, F up, F& dgate, F& dup) {
    const F sig = sigmoid_fast(g);
    dgate = dy * up * sig * (F(1) + g * (F(1) - sig));  // silu'(g) = sig (1 + g (1 - sig))
    dup = dy * g * sig;
  }
};
}  // namespace detail

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
  detail::gated_forward_rows<N, H, detail::silu_gate>(out, inp);
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
  detail::gated_backward_rows<N, H, detail::silu_gate>(dinp, inp, dout);
}

}  // namespace weft::ops
