#pragma once
// ---- fused AdamW: f32 master weights and moments, gradients in G, optional copy in P ----
// The same update, hyper-parameters and bias correction as ops::adamw_step:
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g²,
//   master -= lr (m c1 / (sqrt(v c2) + eps) + wd master),  c_k = 1 / (1 - b_k^t) (double, once)
// and, when `param_out` is given, the updated master rounded to P (the bf16 weights the next
// forward reads) in the same pass: one read of each state, one write.
#include "weft/backend/cuda/kernels/grid.hpp"    // math, to_f32, from_f32
#include "weft/backend/cuda/kernels/memory.hpp"  // elementwise_kernel

#include <cmath>
#include <cstddef>

namespace weft::cuda::kernels {

/// Hyper-parameters of one step (t is 1-based).
struct adamw_hyper {
  float lr, beta1, beta2, eps, weight_decay;
  int t;
};

template <class G, class P>
struct adamw_body {
  float* master;     // (n) f32 master weights, updated
  const G* grad;     // (n)
  float* m;          // (n) first moment
  float* v;          // (n) second moment
  P* param_out;      // (n) or null: master rounded to P
  float lr, beta1, beta2, eps, weight_decay, correction1, correction2;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const {
    const float g = to_f32(grad[i]);
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi * correction1, vhat = vi * correction2;
    const float p = master[i] - lr * (mhat / (math::sqrt(vhat) + eps) + weight_decay * master[i]);
    master[i] = p;
    if (param_out != nullptr) param_out[i] = from_f32<P>(p);
  }
};

/// One AdamW step over n parameters (see the top of this file). param_out may be null.
template <class G, class P = float>
elementwise_kernel<adamw_body<G, P>> make_adamw(float* master, const G* grad, float* m, float* v, P* param_out,
                                                std::size_t n, adamw_hyper h) {
  const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(h.beta1), h.t)));
  const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(h.beta2), h.t)));
  return {{master, grad, m, v, param_out, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, c1, c2}, n};
}

}  // namespace weft::cuda::kernels
