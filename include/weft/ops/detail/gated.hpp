#pragma once
// ---- the row loops of gated activations: out = act(gate) * up (swiglu, geglu) ----
// inp is (N, 2H): the gate half then the up half along the last axis, as one fused
// up-projection writes them. A Gate supplies, in the compute type F:
//   static F value(F g)                                  act(g)
//   static void grads(F g, F dy, F up, F& dgate, F& dup)  dy·up·act'(g) and dy·act(g)
// so that each activation keeps its own order of operations (and its bits).
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // compute_t

#include <cstddef>

namespace weft::ops::detail {

template <std::size_t N, std::size_t H, class Gate, class T>
void gated_forward_rows(T* out, const T* inp) {
  using F = compute_t<T>;  // T itself, float for bf16
#pragma omp parallel for if (N * H >= parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* gate = inp + n * 2 * H;  // (H)
    const T* up = gate + H;           // (H)
    T* y = out + n * H;               // (H)
#pragma omp simd
    for (std::size_t i = 0; i < H; ++i) y[i] = T(Gate::value(F(gate[i])) * F(up[i]));
  }
}

// Accumulates into dinp(N, 2H): the gate half += dout·up·act'(gate), the up half += dout·act(gate).
template <std::size_t N, std::size_t H, class Gate, class T>
void gated_backward_rows(T* dinp, const T* inp, const T* dout) {
  using F = compute_t<T>;
#pragma omp parallel for if (N * H >= parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* gate = inp + n * 2 * H;  // (H)
    const T* up = gate + H;           // (H)
    const T* dy = dout + n * H;       // (H)
    T* dgate = dinp + n * 2 * H;      // (H)
    T* dup = dgate + H;               // (H)
#pragma omp simd
    for (std::size_t i = 0; i < H; ++i) {
      F dg, du;
      Gate::grads(F(gate[i]), F(dy[i]), F(up[i]), dg, du);
      dgate[i] = T(F(dgate[i]) + dg);
      dup[i] = T(F(dup[i]) + du);
    }
  }
}

}  // namespace weft::ops::detail
