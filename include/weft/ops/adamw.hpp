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
#include <concepts>
#include <cstddef>
#include <type_traits>

namespace weft::ops {

namespace detail {

// The update of element i, in compute type F, shared by both forms below. Returns the new
// parameter value (in F); writes the moments.
template <class F, class P, class G, class M>
inline F adamw_element(P p, G g_in, M& m, M& v, F b1, F b2, F lr_t, F eps_t, F wd, F correction1, F correction2) {
  const F g = F(g_in);
  const F mi = b1 * F(m) + (F(1) - b1) * g;
  const F vi = b2 * F(v) + (F(1) - b2) * g * g;
  m = M(mi);
  v = M(vi);
  const F mhat = mi * correction1, vhat = vi * correction2;
  const F pf = F(p);
  return pf - lr_t * (mhat / (detail::sqrt_fast(vhat) + eps_t) + wd * pf);
}

}  // namespace detail

/// One AdamW step over n parameters; updates param, m and v in place. t is the 1-based
/// step number used for bias correction. Weight decay applies to every element given:
/// pass weight_decay = 0 for the parameter groups that are not decayed.
/// The parameter, gradient and moment types may differ (bf16 gradients into f32 master
/// weights and moments, say); the update is computed in compute_t of the parameter type
/// (float for bf16) and each stored value is rounded once. The hyper-parameters are doubles,
/// rounded once to the compute type (so an f64 run uses beta2 = 0.95, not 0.95f).
struct adamw_step_op {
  static constexpr bool flat = true;  ///< also takes views (ops/views.hpp)
};
inline constexpr op_fn<adamw_step_op> adamw_step{};
template <host_element P, host_element G, host_element M>
void op_impl(adamw_step_op, const host_context&, P* param, const G* grad, M* m, std::type_identity_t<M>* v,
             std::size_t n, double lr, double beta1, double beta2, double eps, double weight_decay, int t) {
  using F = compute_t<P>;
  // Bias corrections once per call, in double.
  const F correction1 = F(1.0 / (1.0 - std::pow(beta1, t)));
  const F correction2 = F(1.0 / (1.0 - std::pow(beta2, t)));
  const F b1 = F(beta1), b2 = F(beta2), lr_t = F(lr), eps_t = F(eps), wd = F(weight_decay);
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i)
    param[i] = P(detail::adamw_element(param[i], grad[i], m[i], v[i], b1, b2, lr_t, eps_t, wd, correction1, correction2));
}

/// Mixed-precision form: the same update of the master weights (f32 or wider), then
/// param_copy(n) = the updated master rounded to Copy (bf16): one rounding per step, the
/// master keeping the low bits the copy cannot hold.
template <host_element P, host_element Copy, host_element G, host_element M>
  requires(!std::same_as<P, Copy>)
void op_impl(adamw_step_op, const host_context&, P* master, Copy* param_copy, const G* grad, M* m,
             std::type_identity_t<M>* v, std::size_t n, double lr, double beta1, double beta2, double eps,
             double weight_decay, int t) {
  using F = compute_t<P>;
  const F correction1 = F(1.0 / (1.0 - std::pow(beta1, t)));
  const F correction2 = F(1.0 / (1.0 - std::pow(beta2, t)));
  const F b1 = F(beta1), b2 = F(beta2), lr_t = F(lr), eps_t = F(eps), wd = F(weight_decay);
#pragma omp parallel for simd if (n >= detail::parallel_min_work)
  for (std::size_t i = 0; i < n; ++i) {
    const F p = detail::adamw_element(master[i], grad[i], m[i], v[i], b1, b2, lr_t, eps_t, wd, correction1, correction2);
    master[i] = P(p);
    param_copy[i] = Copy(p);
  }
}

}  // namespace weft::ops
