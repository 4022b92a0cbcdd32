#pragma once
// ---- rotary position embedding on the packed qkv buffer (host) ----
// Rotate-half convention, as HF LLaMA and GPT-NeoX: within each head the first R elements rotate
// (R = D by default; R < D is partial rotary, as GPT-NeoX's rotary_pct and Phi's
// partial_rotary_factor), element i pairing with i + R/2 and the pair turning by angle
// pos * Base^(-2i/R), pos = the token's index in its sequence:
//   out[i]       = x[i] * cos - x[i + R/2] * sin
//   out[i + R/2] = x[i + R/2] * cos + x[i] * sin
// Base is 10000 by default (LLaMA 1/2, GPT-NeoX); LLaMA 3 uses 500000, Qwen 2 1000000 (the
// `rope_theta` of their configs). A Scaling (core/rope_scaling.hpp) rescales each pair's
// frequency for a longer context (LLaMA 3.1's llama3_rope_scaling<8>). Applied to the H query heads and the KVH key heads of qkv
// (B, S, (H + 2*KVH) * D); the value heads and the unrotated tail of each q/k head are copied
// through. The rotation is orthogonal, so backward applies its transpose.
//
// The (seq, R/2) cos/sin table is computed once per <S, R, Base, Scaling, T> (in long double, then rounded
// to T) into a function-local static: a step allocates nothing and evaluates no trigonometry.
#include "weft/core/diagnostics.hpp"       // diag::divisible
#include "weft/core/rope_scaling.hpp"      // no_rope_scaling, llama3_rope_scaling
#include "weft/ops/detail/host_common.hpp"  // check_dims, parallel_min_work
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <array>
#include <cmath>
#include <cstddef>

namespace weft::ops {

namespace detail {

// ---- sizes and compile-time checks ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base,
          std::size_t R>
struct rope_dims {
  static_assert(check_dims<B, S, H, KVH, D>::ok);
  static constexpr bool head_dim_even = diag::divisible<R, 2>;
  static_assert(head_dim_even,
                "weft::ops::rope: the rotated dimension is odd. Use an even head dimension, or an even rotary "
                "dimension R (rotate-half pairs i with i + R/2).");
  static constexpr bool rotary_fits = R >= 2 && R <= D;
  static_assert(rotary_fits, "weft::ops::rope: the rotary dimension R is 0 or larger than the head dimension D. "
                             "Choose 2 <= R <= D.");
  static constexpr bool base_valid = Base >= 2;
  static_assert(base_valid, "weft::ops::rope: the rotary base is below 2. Use the model's rope_theta (10000 "
                            "for LLaMA 2, 500000 for LLaMA 3).");

  static constexpr std::size_t half = R / 2;
  static constexpr std::size_t rotated_heads = H + KVH;             // q heads then k heads
  static constexpr std::size_t rotated_width = rotated_heads * D;   // leading part of a token
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;       // one token of qkv
  static constexpr std::size_t rows = B * S;                        // tokens
  // Memory-bound; only large calls repay a thread team.
  static constexpr bool parallel = rows * qkv_width >= parallel_min_work;
};

// cos and sin of pos * Scaling(Base^(-2i/R)) for pos < S, i < R/2: (seq, R/2) each.
template <std::size_t S, std::size_t R, std::size_t Base, class Scaling, class T>
struct rope_table {
  static constexpr std::size_t half = R / 2;
  std::array<T, S * half> cos{};  // (seq, R/2)
  std::array<T, S * half> sin{};  // (seq, R/2)

  rope_table() {
    for (std::size_t i = 0; i < half; ++i) {
      long double inv_freq =
          std::pow(static_cast<long double>(Base), -2.0L * static_cast<long double>(i) / static_cast<long double>(R));
      // in double: a constexpr function nvcc also compiles for the device, where long double is not
      if constexpr (Scaling::enabled) inv_freq = Scaling::apply(static_cast<double>(inv_freq));
      for (std::size_t pos = 0; pos < S; ++pos) {
        const long double angle = static_cast<long double>(pos) * inv_freq;
        cos[pos * half + i] = static_cast<T>(std::cos(angle));
        sin[pos * half + i] = static_cast<T>(std::sin(angle));
      }
    }
  }
};

// Built on first use (thread-safe static initialisation), then shared by every call.
template <std::size_t S, std::size_t R, std::size_t Base, class Scaling, class T>
const rope_table<S, R, Base, Scaling, T>& rope_cached_table() {
  static const rope_table<S, R, Base, Scaling, T> table;
  return table;
}

}  // namespace detail

/// Rotary embedding forward: qkv_out (B, S, (H + 2*KVH) * D) is overwritten with qkv_in whose q and
/// k heads are rotated (their first R elements; the rest and the v heads copied). qkv_out may equal
/// qkv_in (in place); otherwise they must not overlap.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling>
struct rope_forward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling>
inline constexpr op_fn<rope_forward_op<B, S, H, KVH, D, Base, R, Scaling>> rope_forward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base,
          std::size_t R, class Scaling, host_element T>
void op_impl(rope_forward_op<B, S, H, KVH, D, Base, R, Scaling>, const host_context&, T* qkv_out, const T* qkv_in) {
  using dims = detail::rope_dims<B, S, H, KVH, D, Base, R>;
  constexpr std::size_t half = dims::half;
  constexpr std::size_t ld = dims::qkv_width;
  using F = compute_t<T>;  // T itself, float for bf16 (the table too)
  const auto& table = detail::rope_cached_table<S, R, Base, Scaling, F>();

#if defined(_OPENMP)
#pragma omp parallel for if (dims::parallel)
#endif
  for (std::size_t n = 0; n < dims::rows; ++n) {
    const std::size_t pos = n % S;
    const F* c = table.cos.data() + pos * half;  // (R/2)
    const F* s = table.sin.data() + pos * half;  // (R/2)
    const T* in = qkv_in + n * ld;               // (qkv_width)
    T* out = qkv_out + n * ld;                   // (qkv_width)
    for (std::size_t head = 0; head < dims::rotated_heads; ++head) {
      const T* x = in + head * D;  // (D)
      T* y = out + head * D;       // (D)
      // Each i reads and writes only i and i + R/2, so the loop is safe in place.
#if defined(_OPENMP)
#pragma omp simd
#endif
      for (std::size_t i = 0; i < half; ++i) {
        const F x1 = F(x[i]);
        const F x2 = F(x[i + half]);
        y[i] = T(x1 * c[i] - x2 * s[i]);
        y[i + half] = T(x2 * c[i] + x1 * s[i]);
      }
      if constexpr (R < D) {
        if (out != in)
          for (std::size_t j = R; j < D; ++j) y[j] = x[j];  // the unrotated tail (partial rotary)
      }
    }
    if (out != in) {
      for (std::size_t j = dims::rotated_width; j < ld; ++j) out[j] = in[j];  // v heads
    }
  }
}

/// Rotary embedding backward: accumulates (+=) the inverse rotation of dqkv_out (B, S, (H + 2*KVH) * D)
/// into dqkv_in (v heads and the unrotated tails pass straight through). The two buffers must not
/// overlap.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling>
struct rope_backward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling>
inline constexpr op_fn<rope_backward_op<B, S, H, KVH, D, Base, R, Scaling>> rope_backward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base,
          std::size_t R, class Scaling, host_element T>
void op_impl(rope_backward_op<B, S, H, KVH, D, Base, R, Scaling>, const host_context&, T* dqkv_in, const T* dqkv_out) {
  using dims = detail::rope_dims<B, S, H, KVH, D, Base, R>;
  constexpr std::size_t half = dims::half;
  constexpr std::size_t ld = dims::qkv_width;
  using F = compute_t<T>;
  const auto& table = detail::rope_cached_table<S, R, Base, Scaling, F>();

#if defined(_OPENMP)
#pragma omp parallel for if (dims::parallel)
#endif
  for (std::size_t n = 0; n < dims::rows; ++n) {
    const std::size_t pos = n % S;
    const F* c = table.cos.data() + pos * half;  // (R/2)
    const F* s = table.sin.data() + pos * half;  // (R/2)
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
      if constexpr (R < D) {
        for (std::size_t j = R; j < D; ++j) dx[j] = T(F(dx[j]) + F(g[j]));  // the unrotated tail
      }
    }
    for (std::size_t j = dims::rotated_width; j < ld; ++j) din[j] = T(F(din[j]) + F(dout[j]));  // v heads
  }
}

}  // namespace weft::ops
