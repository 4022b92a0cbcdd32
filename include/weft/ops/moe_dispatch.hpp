#pragma once
// ---- dropless dispatch and combine of a mixture of experts ----
// Every token goes to each of its K experts (no capacity, nothing dropped). The N·K routed
// slots are grouped by expert in a deterministic order: expert by expert, and within an
// expert by (token, k) ascending (a stable counting sort), so the grouped buffer, and every
// sum over it, does not depend on the thread count.
//   offsets(E + 1)    rows [offsets[e], offsets[e+1]) of the grouped buffer belong to expert e
//   slot_of(N, K)     the grouped row of token n's k-th choice
//   token_of(N·K)     the token of a grouped row
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cstddef>
#include <cstdint>

namespace weft::ops {

/// Groups the (N, K) choices in experts by expert (see the top of this file). Overwrites
/// offsets, slot_of and token_of.
template <std::size_t N, std::size_t E, std::size_t K>
struct moe_dispatch_plan_op {
  using signature = ops::signature<args::out<E + 1>, args::out<N * K>, args::out<N * K>, args::in<N, K>>;
};
template <std::size_t N, std::size_t E, std::size_t K>
inline constexpr op_fn<moe_dispatch_plan_op<N, E, K>> moe_dispatch_plan{};
template <std::size_t N, std::size_t E, std::size_t K>
void op_impl(moe_dispatch_plan_op<N, E, K>, const host_context&, std::int32_t* offsets, std::int32_t* slot_of,
             std::int32_t* token_of, const std::int32_t* experts) {
  static_assert(detail::check_dims<N, E, K>::ok);
  for (std::size_t e = 0; e <= E; ++e) offsets[e] = 0;
  for (std::size_t i = 0; i < N * K; ++i) ++offsets[experts[i] + 1];
  for (std::size_t e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  std::int32_t next[E];
  for (std::size_t e = 0; e < E; ++e) next[e] = offsets[e];
  for (std::size_t i = 0; i < N * K; ++i) {
    const std::int32_t r = next[experts[i]]++;
    slot_of[i] = r;
    token_of[r] = static_cast<std::int32_t>(i / K);
  }
}

/// grouped(N·K, C): row r = x[token_of[r]]. Overwrites grouped.
template <std::size_t N, std::size_t K, std::size_t C>
struct moe_gather_op {
  using signature = ops::signature<args::out<N * K, C>, args::in<N, C>, args::in<N * K>>;
};
template <std::size_t N, std::size_t K, std::size_t C>
inline constexpr op_fn<moe_gather_op<N, K, C>> moe_gather{};
template <std::size_t N, std::size_t K, std::size_t C, host_element T>
void op_impl(moe_gather_op<N, K, C>, const host_context&, T* grouped, const T* x, const std::int32_t* token_of) {
  static_assert(detail::check_dims<N, K, C>::ok);
#pragma omp parallel for if (N * K * C >= detail::parallel_min_work)
  for (std::size_t r = 0; r < N * K; ++r) {
    const T* src = x + static_cast<std::size_t>(token_of[r]) * C;
    for (std::size_t c = 0; c < C; ++c) grouped[r * C + c] = src[c];
  }
}

/// Backward of moe_gather: dx(N, C) += sum over k of dgrouped[slot_of[n, k]] (k ascending).
template <std::size_t N, std::size_t K, std::size_t C>
struct moe_gather_backward_op {
  using signature = ops::signature<args::out<N, C>, args::in<N * K, C>, args::in<N, K>>;
};
template <std::size_t N, std::size_t K, std::size_t C>
inline constexpr op_fn<moe_gather_backward_op<N, K, C>> moe_gather_backward{};
template <std::size_t N, std::size_t K, std::size_t C, host_element T>
void op_impl(moe_gather_backward_op<N, K, C>, const host_context&, T* dx, const T* dgrouped, const std::int32_t* slot_of) {
  static_assert(detail::check_dims<N, K, C>::ok);
#pragma omp parallel for if (N * K * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) {
      const T* src = dgrouped + static_cast<std::size_t>(slot_of[n * K + k]) * C;
      for (std::size_t c = 0; c < C; ++c) dx[n * C + c] += src[c];
    }
}

/// out(N, C) = sum over k (ascending) of gates[n, k] * grouped[slot_of[n, k]]. Overwrites out.
template <std::size_t N, std::size_t K, std::size_t C>
struct moe_combine_forward_op {
  using signature = ops::signature<args::out<N, C>, args::in<N * K, C>, args::in<N, K>, args::in<N, K>>;
};
template <std::size_t N, std::size_t K, std::size_t C>
inline constexpr op_fn<moe_combine_forward_op<N, K, C>> moe_combine_forward{};
template <std::size_t N, std::size_t K, std::size_t C, host_element T>
void op_impl(moe_combine_forward_op<N, K, C>, const host_context&, T* out, const T* grouped, const T* gates,
             const std::int32_t* slot_of) {
  static_assert(detail::check_dims<N, K, C>::ok);
#pragma omp parallel for if (N * K * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n) {
    T* o = out + n * C;
    for (std::size_t c = 0; c < C; ++c) o[c] = T(0);
    for (std::size_t k = 0; k < K; ++k) {
      const T g = gates[n * K + k];
      const T* y = grouped + static_cast<std::size_t>(slot_of[n * K + k]) * C;
      for (std::size_t c = 0; c < C; ++c) o[c] += g * y[c];
    }
  }
}

/// Backward of moe_combine_forward. Accumulates dgrouped(N·K, C) += gate * dout and
/// dgates(N, K) += dout · grouped row.
template <std::size_t N, std::size_t K, std::size_t C>
struct moe_combine_backward_op {
  using signature = ops::signature<args::out<N * K, C>, args::out<N, K>, args::in<N, C>, args::in<N * K, C>, args::in<N, K>, args::in<N, K>>;
};
template <std::size_t N, std::size_t K, std::size_t C>
inline constexpr op_fn<moe_combine_backward_op<N, K, C>> moe_combine_backward{};
template <std::size_t N, std::size_t K, std::size_t C, host_element T>
void op_impl(moe_combine_backward_op<N, K, C>, const host_context&, T* dgrouped, T* dgates, const T* dout,
             const T* grouped, const T* gates, const std::int32_t* slot_of) {
  static_assert(detail::check_dims<N, K, C>::ok);
#pragma omp parallel for if (N * K * C >= detail::parallel_min_work)
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) {
      const std::size_t r = static_cast<std::size_t>(slot_of[n * K + k]);
      const T g = gates[n * K + k];
      const T* d = dout + n * C;
      const T* y = grouped + r * C;
      T* dy = dgrouped + r * C;
      detail::acc_t<T> dot = 0;
      for (std::size_t c = 0; c < C; ++c) {
        dy[c] += g * d[c];
        dot += d[c] * y[c];
      }
      dgates[n * K + k] += T(dot);
    }
}

}  // namespace weft::ops
