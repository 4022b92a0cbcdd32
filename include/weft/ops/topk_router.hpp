#pragma once
// ---- top-k routing of a mixture of experts: softmax, top-k gates, load-balancing loss ----
// Mixtral's router: probs = softmax(logits) over the E experts of each token, the K experts of
// largest probability are chosen (ties: the lower expert index first, so the choice is
// deterministic), and their gates are the chosen probabilities renormalised to sum to one
// (Mixtral's softmax over the top-k logits is the same thing).
// The load-balancing loss is Switch Transformer's, aux = alpha * E * sum_e f_e * P_e, with
//   f_e = (assignments of tokens to e) / (N * K)   the fraction of routed slots expert e got
//   P_e = mean over the N tokens of probs[:, e]    the mean router probability of e
// f_e is a count, piecewise constant in the logits (its gradient is zero almost everywhere), so
// d aux / d probs[n, e] = alpha * E * f_e / N exactly wherever the top-k choice does not tie.
// With K = 1 this is Switch's loss; for K > 1 it equals Hugging Face Mixtral's
// load_balancing_loss_func divided by K (so that perfect balance gives aux = alpha for any K).
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work, acc_t
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::ops {

/// probs(N, E) = softmax(logits) per row (may alias logits); experts(N, K) the K largest, in
/// descending probability (ties: lower index first); gates(N, K) = their probs renormalised to
/// sum to one. Overwrites probs, gates and experts. K <= E.
template <std::size_t N, std::size_t E, std::size_t K>
struct topk_router_forward_op {
  using signature = ops::signature<args::out<N, E>, args::out<N, K>, args::out<N, K>, args::in<N, E>>;
};
template <std::size_t N, std::size_t E, std::size_t K>
inline constexpr op_fn<topk_router_forward_op<N, E, K>> topk_router_forward{};
template <std::size_t N, std::size_t E, std::size_t K, host_element T>
void op_impl(topk_router_forward_op<N, E, K>, const host_context&, T* probs, T* gates, std::int32_t* experts,
             const T* logits) {
  static_assert(detail::check_dims<N, E, K>::ok);
  static_assert(K <= E, "weft::ops::topk_router_forward: K is larger than the number of experts. Choose K <= E.");
#pragma omp parallel for if (N * E >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* l = logits + n * E;
    T* p = probs + n * E;
    T mx = l[0];
    for (std::size_t e = 1; e < E; ++e) mx = l[e] > mx ? l[e] : mx;
    detail::acc_t<T> sum = 0;
    for (std::size_t e = 0; e < E; ++e) {
      p[e] = std::exp(l[e] - mx);
      sum += p[e];
    }
    const T inv = T(1 / sum);
    for (std::size_t e = 0; e < E; ++e) p[e] *= inv;
    // Selection by K passes over E (E is small: tens of experts): the largest not yet taken,
    // the lower index winning a tie.
    std::int32_t* ex = experts + n * K;
    T* g = gates + n * K;
    detail::acc_t<T> chosen = 0;
    for (std::size_t k = 0; k < K; ++k) {
      std::size_t best = E;
      for (std::size_t e = 0; e < E; ++e) {
        bool taken = false;
        for (std::size_t j = 0; j < k; ++j) taken = taken || ex[j] == static_cast<std::int32_t>(e);
        if (!taken && (best == E || p[e] > p[best])) best = e;
      }
      ex[k] = static_cast<std::int32_t>(best);
      g[k] = p[best];
      chosen += p[best];
    }
    const T inv_chosen = T(1 / chosen);
    for (std::size_t k = 0; k < K; ++k) g[k] *= inv_chosen;
  }
}

/// Backward of topk_router_forward through the gates (the choice itself is piecewise constant):
/// dlogits(N, E) += softmax'ᵀ · (d gates / d probs)ᵀ · dgates(N, K). With s = the chosen probs'
/// sum, d gate_k / d p_m = (delta_km - gate_k) / s for chosen m, 0 otherwise.
template <std::size_t N, std::size_t E, std::size_t K>
struct topk_router_backward_op {
  using signature = ops::signature<args::out<N, E>, args::in<N, K>, args::in<N, E>, args::in<N, K>, args::in<N, K>>;
};
template <std::size_t N, std::size_t E, std::size_t K>
inline constexpr op_fn<topk_router_backward_op<N, E, K>> topk_router_backward{};
template <std::size_t N, std::size_t E, std::size_t K, host_element T>
void op_impl(topk_router_backward_op<N, E, K>, const host_context&, T* dlogits, const T* dgates, const T* probs,
             const T* gates, const std::int32_t* experts) {
  static_assert(detail::check_dims<N, E, K>::ok);
#pragma omp parallel for if (N * E >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    const T* p = probs + n * E;
    const T* g = gates + n * K;
    const T* dg = dgates + n * K;
    const std::int32_t* ex = experts + n * K;
    detail::acc_t<T> s = 0, dot = 0;  // sum of chosen probs; sum_k dg_k g_k
    for (std::size_t k = 0; k < K; ++k) s += p[ex[k]], dot += dg[k] * g[k];
    // dp_m for chosen m = (dg_m - dot) / s; then softmax backward: dl_j = p_j (dp_j - sum_m p_m dp_m)
    detail::acc_t<T> pdp = 0;
    for (std::size_t k = 0; k < K; ++k) pdp += p[ex[k]] * (dg[k] - dot) / s;
    T* dl = dlogits + n * E;
    for (std::size_t e = 0; e < E; ++e) dl[e] += T(-p[e] * pdp);
    for (std::size_t k = 0; k < K; ++k) dl[ex[k]] += T(p[ex[k]] * (dg[k] - dot) / s);
  }
}

/// The load-balancing loss of one batch of N routed tokens (see the top of this file): returns
/// aux = alpha * E * sum_e f_e P_e, computed in double in a fixed order. When dlogits is not
/// null, also adds scale * d aux / d logits to it (f_e held constant): scale is the weight of this
/// batch in the step's loss (1, or 1/micro-batches under gradient accumulation).
template <std::size_t N, std::size_t E, std::size_t K>
struct load_balance_loss_op {
  using signature = ops::signature<args::out_opt<N, E>, args::in<N, E>, args::in<N, K>, args::value, args::value>;
};
template <std::size_t N, std::size_t E, std::size_t K>
inline constexpr op_fn<load_balance_loss_op<N, E, K>> load_balance_loss{};
template <std::size_t N, std::size_t E, std::size_t K, host_element T>
double op_impl(load_balance_loss_op<N, E, K>, const host_context&, std::type_identity_t<T>* dlogits /*nullable*/,
               const T* probs, const std::int32_t* experts, double alpha, double scale) {
  static_assert(detail::check_dims<N, E, K>::ok);
  double f[E] = {}, pm[E] = {};  // fractions of slots, mean probabilities
  for (std::size_t i = 0; i < N * K; ++i) f[experts[i]] += 1.0;
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t e = 0; e < E; ++e) pm[e] += static_cast<double>(probs[n * E + e]);
  double aux = 0;
  for (std::size_t e = 0; e < E; ++e) {
    f[e] /= static_cast<double>(N * K);
    pm[e] /= static_cast<double>(N);
    aux += f[e] * pm[e];
  }
  aux *= alpha * static_cast<double>(E);
  if (dlogits != nullptr) {
    // d aux / d p[n, e] = c_e = alpha E f_e / N; softmax backward dl_j = p_j (c_j - sum_e p_e c_e)
    double c[E];
    for (std::size_t e = 0; e < E; ++e) c[e] = scale * alpha * static_cast<double>(E) * f[e] / static_cast<double>(N);
#pragma omp parallel for if (N * E >= detail::parallel_min_work)
    for (std::size_t n = 0; n < N; ++n) {
      const T* p = probs + n * E;
      double pc = 0;
      for (std::size_t e = 0; e < E; ++e) pc += static_cast<double>(p[e]) * c[e];
      for (std::size_t e = 0; e < E; ++e) dlogits[n * E + e] += static_cast<T>(static_cast<double>(p[e]) * (c[e] - pc));
    }
  }
  return aux;
}

}  // namespace weft::ops
