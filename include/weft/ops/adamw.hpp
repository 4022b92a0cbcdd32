#pragma once
// ---- AdamW update, decoupled weight decay (Loshchilov & Hutter) ----
//   m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//   mhat = m / (1 - beta1^t),      vhat = v / (1 - beta2^t)
//   p -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * p)
// n is a run-time count: the optimizer runs over a rank's whole (possibly sharded) flat
// parameter buffer, whose size depends on the run-time data-parallel degree.
#include "weft/ops/detail/fast_math.hpp"    // sqrt_fast
#include "weft/ops/detail/host_common.hpp"  // parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cmath>
#include <cstddef>

namespace weft::ops {

/// One AdamW step over n parameters; updates param, m and v in place. t is the 1-based
/// step number used for bias correction. Weight decay applies to every element given:
/// pass weight_decay = 0 for the parameter groups that are not decayed.
struct adamw_step_op {};
inline constexpr op_fn<adamw_step_op> adamw_step{};
template <host_element T>
void op_impl(adamw_step_op, const host_context&, T* param, const T* grad, T* m, T* v, std::size_t n, float lr,
             float beta1, float beta2, float eps, float weight_decay, int t) {
  // Bias corrections once per call, in double.
  const T correction1 = T(1.0 / (1.0 - std::pow(double(beta1), t)));
  const T correction2 = T(1.0 / (1.0 - std::pow(double(beta2), t)));
  const T b1 = T(beta1), b2 = T(beta2), lr_t = T(lr), eps_t = T(eps), wd = T(weight_decay);
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) {
    const T g = grad[i];
    const T mi = b1 * m[i] + (T(1) - b1) * g;
    const T vi = b2 * v[i] + (T(1) - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const T mhat = mi * correction1, vhat = vi * correction2;
    param[i] -= lr_t * (mhat / (detail::sqrt_fast(vhat) + eps_t) + wd * param[i]);
  }
}

}  // namespace weft::ops
