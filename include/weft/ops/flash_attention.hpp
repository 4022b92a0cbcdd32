#pragma once
// ---- causal self-attention that keeps row statistics, not probabilities (host) ----
// The contract of FlashAttention (Dao et al. 2022): the forward keeps, per (batch, head, query),
// the log-sum-exp of the row's scaled scores, lse = max + log Σ exp(s - max), and the caller
// keeps the output; the backward recomputes the probabilities p = exp(s - lse) from q, k and lse,
// and takes the softmax's row term from Δ_t = dout_t · out_t (= Σ p·dp). Nothing of size
// (S, S) is kept, so the memory of attention grows with S, not S². Same packed layout, grouped-
// query heads, scale, causal mask and sliding window (W) as ops/attention.hpp.
//
// On the host the forward is ops/attention.hpp's row loop itself (attention_forward_head_mixed
// with no probabilities kept): the same output, bit for bit, in every type. The
// backward runs per (batch, kv head): for each query head of the group and each query row it
// recomputes the row's probabilities, adds dq_t, and accumulates the keys' dk and dv in local
// f32 (compute type) rows, stored once at the end, so a thread owns everything it writes.
// The CUDA bodies (backend/cuda/ops.cuh) are the tensor-core flash kernels.
#include "weft/ops/attention.hpp"            // detail::attention_dims, attention_dot, attention_scale
#include "weft/ops/detail/host_common.hpp"   // acc_t
#include "weft/ops/host_element.hpp"         // host_element, compute_t
#include "weft/ops/op.hpp"                   // op_fn, host_context

#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace weft::ops {

namespace detail {

// One (batch, kv head) of the backward: the Group query heads that read it, in order. q, dq, out
// and dout point at the group's first query head (heads D apart); lse at its first head's rows
// (heads S apart); dk and dv at the kv head.
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t Group, std::size_t W, class T,
          class Stat>
void flash_backward_kv_head(T* dq, T* dk, T* dv, const T* q, const T* k, const T* v, const T* out, const T* dout,
                            const Stat* lse, compute_t<T> scale) {
  using F = compute_t<T>;
  std::vector<F> acc_dk(S * D, F(0)), acc_dv(S * D, F(0));  // every key's gradients, stored once
  std::vector<F> p(S), ds(S);
  F acc_dq[D];
  for (std::size_t g = 0; g < Group; ++g) {
    for (std::size_t t = 0; t < S; ++t) {
      const T* q_t = q + g * D + t * Ld;
      const T* dout_t = dout + g * D + t * LdOut;
      const T* out_t = out + g * D + t * LdOut;
      const F row_lse = F(lse[g * S + t]);
      const F delta = attention_dot<D>(dout_t, out_t);  // Σ p·dp, from the kept output
      const std::size_t lo = window_first<W>(t);
      for (std::size_t t2 = lo; t2 <= t; ++t2) {
        p[t2] = std::exp(scale * attention_dot<D>(q_t, k + t2 * Ld) - row_lse);
        ds[t2] = p[t2] * (attention_dot<D>(dout_t, v + t2 * Ld) - delta);
      }
      for (std::size_t i = 0; i < D; ++i) acc_dq[i] = 0;
      for (std::size_t t2 = lo; t2 <= t; ++t2) {
        const T* k_t2 = k + t2 * Ld;
        F* dk_t2 = acc_dk.data() + t2 * D;
        F* dv_t2 = acc_dv.data() + t2 * D;
        const F sds = scale * ds[t2];
        for (std::size_t i = 0; i < D; ++i) {
          acc_dq[i] += sds * F(k_t2[i]);
          dk_t2[i] += sds * F(q_t[i]);
          dv_t2[i] += p[t2] * F(dout_t[i]);
        }
      }
      T* dq_t = dq + g * D + t * Ld;
      for (std::size_t i = 0; i < D; ++i) dq_t[i] = T(F(dq_t[i]) + acc_dq[i]);
    }
  }
  for (std::size_t t2 = 0; t2 < S; ++t2)
    for (std::size_t i = 0; i < D; ++i) {
      dk[t2 * Ld + i] = T(F(dk[t2 * Ld + i]) + acc_dk[t2 * D + i]);
      dv[t2 * Ld + i] = T(F(dv[t2 * Ld + i]) + acc_dv[t2 * D + i]);
    }
}

}  // namespace detail

/// Causal self-attention forward keeping row statistics: out (B, S, H*D) is overwritten; lse
/// (B, H, S) receives each row's log-sum-exp of scaled scores (stat_t<T>: f32 for bf16/f16).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
struct flash_attention_forward_op {
  using signature = ops::signature<args::out<B * S, H * D>, args::out<B * H * S>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
inline constexpr op_fn<flash_attention_forward_op<B, S, H, KVH, D, W>> flash_attention_forward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, host_element T,
          host_element Stat>
void op_impl(flash_attention_forward_op<B, S, H, KVH, D, W>, const host_context&, T* out, Stat* lse, const T* qkv) {
  using dims = detail::attention_dims<B, S, H, KVH, D>;
  constexpr std::size_t ld = dims::qkv_width, ld_out = dims::out_width;
  const compute_t<T> scale = detail::attention_scale<compute_t<T>, D>();
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t kvh = h / dims::group;
      const T* base = qkv + b * S * ld;
      detail::attention_forward_head_mixed<S, D, ld, ld_out, W>(
          out + b * S * ld_out + h * D, static_cast<T*>(nullptr), base + h * D, base + dims::k_offset + kvh * D,
          base + dims::v_offset + kvh * D, scale, lse + (b * H + h) * S);
    }
}

/// Causal self-attention backward from row statistics; accumulates (+=) into dqkv
/// (B, S, (H + 2*KVH) * D). `out` and `lse` are the forward's for the same qkv.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
struct flash_attention_backward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::in<B * S, H * D>,
                                   args::in<B * S, (H + 2 * KVH) * D>, args::in<B * S, H * D>, args::in<B * H * S>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
inline constexpr op_fn<flash_attention_backward_op<B, S, H, KVH, D, W>> flash_attention_backward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, host_element T,
          host_element Stat>
void op_impl(flash_attention_backward_op<B, S, H, KVH, D, W>, const host_context&, T* dqkv, const T* dout, const T* qkv,
             const T* out, const Stat* lse) {
  using dims = detail::attention_dims<B, S, H, KVH, D>;
  constexpr std::size_t ld = dims::qkv_width, ld_out = dims::out_width;
  const compute_t<T> scale = detail::attention_scale<compute_t<T>, D>();
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t kvh = 0; kvh < KVH; ++kvh) {
      const std::size_t h0 = kvh * dims::group;
      const T* base = qkv + b * S * ld;
      T* dbase = dqkv + b * S * ld;
      detail::flash_backward_kv_head<S, D, ld, ld_out, dims::group, W>(
          dbase + h0 * D, dbase + dims::k_offset + kvh * D, dbase + dims::v_offset + kvh * D, base + h0 * D,
          base + dims::k_offset + kvh * D, base + dims::v_offset + kvh * D, out + b * S * ld_out + h0 * D,
          dout + b * S * ld_out + h0 * D, lse + (b * H + h0) * S, scale);
    }
}

}  // namespace weft::ops
