#pragma once
// ---- rotary position embedding on the packed qkv buffer (host) ----
// Rotate-half convention, as HF LLaMA: within each head, element i pairs with i + D/2 and the
// pair turns by angle pos * base^(-2i/D), base 10000, pos = the token's index in its sequence:
//   out[i]       = x[i] * cos - x[i + D/2] * sin
//   out[i + D/2] = x[i + D/2] * cos + x[i] * sin
// Applied to the H query heads and the KVH key heads of qkv (B, S, (H + 2*KVH) * D); the value
// heads are copied through. The rotation is orthogonal, so backward applies its transpose.
//
// The (seq, D/2) cos/sin table is computed once per <S, D, T> (in long double, then rounded to T)
// into a function-local static: a step allocates nothing and evaluates no trigonometry.
#include "weft/core/diagnostics.hpp"       // diag::divisible
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <array>
#include <cmath>
#include <cstddef>

namespace weft::ops {

namespace detail {

// ---- sizes and compile-time checks ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct rope_dims {
  static_assert(check_dims<B, S, H, KVH, D>::ok);
  static constexpr bool head_dim_even = diag::divisible<D, 2>;
  static_assert(head_dim_even,
                "weft::ops::rope: the head dimension is odd. Use an even head dimension (rotate-half pairs i "
                "with i + D/2).");

  static constexpr std::size_t half = D / 2;
  static constexpr std::size_t rotated_heads = H + KVH;             // q heads then k heads
  static constexpr std::size_t rotated_width = rotated_heads * D;   // leading part of a token
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;       // one token of qkv
  static constexpr std::size_t rows = B * S;                        // tokens
  // Memory-bound; only large calls repay a thread team.
  static constexpr bool parallel = rows * qkv_width >= parallel_min_work;
};

// cos and sin of pos * base^(-2i/D) for pos < S, i < D/2: (seq, D/2) each.
template <std::size_t S, std::size_t D, class T>
struct rope_table {
  static constexpr std::size_t half = D / 2;
  std::array<T, S * half> cos{};  // (seq, D/2)
  std::array<T, S * half> sin{};  // (seq, D/2)

  rope_table() {
    for (std::size_t i = 0; i < half; ++i) {
      const long double inv_freq =
          std::pow(10000.0L, -2.0L * static_cast<long double>(i) / static_cast<long double>(D));
      for (std::size_t pos = 0; pos < S; ++pos) {
        const long double angle = static_cast<long double>(pos) * inv_freq;
        cos[pos * half + i] = static_cast<T>(std::cos(angle));
        sin[pos * half + i] = static_cast<T>(std::sin(angle));
      }
    }
  }
};

// Built on first use (thread-safe static initialisation), then shared by every call.
template <std::size_t S, std::size_t D, class T>
const rope_table<S, D, T>& rope_cached_table() {
  static const rope_table<S, D, T> table;
  return table;
}

}  // namespace detail

/// Rotary embedding forward: qkv_out (B, S, (H + 2*KVH) * D) is overwritten with qkv_in whose q and
/// k heads are rotated (v heads copied). qkv_out may equal qkv_in (in place); otherwise they must
/// not overlap.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct rope_forward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
inline constexpr op_fn<rope_forward_op<B, S, H, KVH, D>> rope_forward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, host_element T>
void op_impl(rope_forward_op<B, S, H, KVH, D>, const host_context&, T* qkv_out, const T* qkv_in) {
  using dims = detail::rope_dims<B, S, H, KVH, D>;
  constexpr std::size_t half = dims::half;
  constexpr std::size_t ld = dims::qkv_width;
  using F = compute_t<T>;  // T itself, float for bf16 (the table too)
  const auto& table = detail::rope_cached_table<S, D, F>();

#if defined(_OPENMP)
#pragma omp parallel for if (dims::parallel)
#endif
  for (std::size_t n = 0; n < dims::rows; ++n) {
    const std::size_t pos = n % S;
    const F* c = table.cos.data() + pos * half;  // (D/2)
    const F* s = table.sin.data() + pos * half;  // (D/2)
    const T* in = qkv_in + n * ld;               // (qkv_width)
    T* out = qkv_out + n * ld;                   // (qkv_width)
    for (std::size_t head = 0; head < dims::rotated_heads; ++head) {
      const T* x = in + head * D;  // (D)
      T* y = out + head * D;       // (D)
      // Each i reads and writes only i and i + D/2, so the loop is safe in place.
#if defined(_OPENMP)
#pragma omp simd
#endif
      for (std::size_t i = 0; i < half; ++i) {
        const F x1 = F(x[i]);
        const F x2 = F(x[i + half]);
        y[i] = T(x1 * c[i] - x2 * s[i]);
        y[i + half] = T(x2 * c[i] + x1 * s[i]);
      }
    }
    if (out != in) {
      for (std::size_t j = dims::rotated_width; j < ld; ++j) out[j] = in[j];  // v heads
    }
  }
}

/// Rotary embedding backward: accumulates (+=) the inverse rotation of dqkv_out (B, S, (H + 2*KVH) * D)
/// into dqkv_in (v heads pass straight through). The two buffers must not overlap.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct rope_backward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
inline constexpr op_fn<rope_backward_op<B, S, H, KVH, D>> rope_backward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, host_element T>
void op_impl(rope_backward_op<B, S, H, KVH, D>, const host_context&, T* dqkv_in, const T* dqkv_out) {
  using dims = detail::rope_dims<B, S, H, KVH, D>;
  constexpr std::size_t half = dims::half;
  constexpr std::size_t ld = dims::qkv_width;
  using F = compute_t<T>;
  const auto& table = detail::rope_cached_table<S, D, F>();

#if defined(_OPENMP)
#pragma omp parallel for if (dims::parallel)
#endif
  for (std::size_t n = 0; n < dims::rows; ++n) {
    const std::size_t pos = n % S;
    const F* c = table.cos.data() + pos * half;  // (D/2)
    const F* s = table.sin.data() + pos * half;  // (D/2)
    const T* dout = dqkv_out + n * ld;           // (qkv_width)
    T* din = dqkv_in + n * ld;                   // (qkv_width)
    for (std::size_t head = 0; head < dims::rotated_heads; ++head) {
      const T* g = dout + head * D;  // (D)
      T* dx = din + head * D;        // (D)
#if defined(_OPENMP)
#pragma omp simd
#endif
      for (std::size_t i = 0; i < half; ++i) {
        const F g1 = F(g[i]);
        const F g2 = F(g[i + half]);
        dx[i] = T(F(dx[i]) + (g1 * c[i] + g2 * s[i]));
        dx[i + half] = T(F(dx[i + half]) + (g2 * c[i] - g1 * s[i]));
      }
    }
    for (std::size_t j = dims::rotated_width; j < ld; ++j) din[j] = T(F(din[j]) + F(dout[j]));  // v heads
  }
}

}  // namespace weft::ops
