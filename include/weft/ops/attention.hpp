#pragma once
// ---- causal self-attention with grouped-query heads (host) ----
// The packed input `qkv` holds, per token, H query heads, then KVH key heads, then KVH value
// heads, each head D contiguous values: (batch, seq, (H + 2*KVH) * D). Query head h reads kv
// head h / (H / KVH), so KVH == H is multi-head attention and KVH == 1 multi-query attention.
// Scores are scaled by 1/sqrt(D) and masked causally (query t sees keys 0..t), and with a
// sliding window of W keys (the ops' last size, 0 = none; Mistral, Gemma 2's local layers) query t
// sees only keys t - W < t2 <= t, as Hugging Face's sliding_window: W = 4096 keeps 4096 keys.
//
// Work is split over (batch, head) pairs; every inner loop is a contiguous run over D
// (a dot product or an axpy) so the compiler can vectorise it. Only the lower triangle of
// each (seq, seq) score matrix is computed.
#include "weft/core/diagnostics.hpp"       // diag::divisible
#include "weft/ops/detail/host_common.hpp"  // acc_t, check_dims
#include "weft/ops/host_element.hpp"        // host_element
#include "weft/ops/op.hpp"                  // op_fn, host_context

#include <cmath>
#include <cstddef>

namespace weft::ops {

namespace detail {

// ---- sizes and compile-time checks ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct attention_dims {
  static_assert(check_dims<B, S, H, KVH, D>::ok);
  static constexpr bool heads_divisible = diag::divisible<H, KVH>;
  static_assert(heads_divisible,
                "weft::ops::attention: heads is not divisible by kv_heads. Choose kv_heads that divides heads.");

  static constexpr std::size_t group = heads_divisible ? H / KVH : 1;  // query heads per kv head
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;           // one token of qkv
  static constexpr std::size_t out_width = H * D;                       // one token of out
  static constexpr std::size_t k_offset = H * D;                        // first key head in a token
  static constexpr std::size_t v_offset = (H + KVH) * D;                // first value head in a token
  // About B*H*S*S*D/2 multiply-adds per product; below this a thread team costs more than it saves.
  static constexpr bool parallel = B * H * S * S * D >= (std::size_t{1} << 18);
};

// ---- contiguous kernels over one head (length D) ----
// A dot product in compute_t<T> (T itself, float for bf16).
template <std::size_t D, class T>
inline compute_t<T> attention_dot(const T* a, const T* b) {
  using F = compute_t<T>;
  F acc = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(+ : acc)
#endif
  for (std::size_t i = 0; i < D; ++i) acc += F(a[i]) * F(b[i]);
  return acc;
}

// y += alpha * x
template <std::size_t D, class T>
inline void attention_axpy(T* y, T alpha, const T* x) {
#if defined(_OPENMP)
#pragma omp simd
#endif
  for (std::size_t i = 0; i < D; ++i) y[i] += alpha * x[i];
}

template <class T, std::size_t D>
inline T attention_scale() {
  return static_cast<T>(1.0L / std::sqrt(static_cast<long double>(D)));
}

// The first key query t sees under a window of W keys (W = 0: no window, key 0).
template <std::size_t W>
constexpr std::size_t window_first(std::size_t t) {
  return W == 0 || t < W ? 0 : t + 1 - W;
}
// One past the last query that sees key t2 under a window of W keys (W = 0: every later query).
template <std::size_t W, std::size_t S>
constexpr std::size_t window_end(std::size_t t2) {
  return W == 0 || t2 + W > S ? S : t2 + W;
}

// ---- one (batch, head) pair of the forward ----
// q, k, v point at the head's first token; consecutive tokens are Ld apart. out rows are LdOut apart.
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t W, class T>
void attention_forward_head(T* out, T* att, const T* q, const T* k, const T* v, T scale) {
  for (std::size_t t = 0; t < S; ++t) {
    const T* q_t = q + t * Ld;  // (D)
    T* att_t = att + t * S;     // (S) row t of the probabilities
    const std::size_t lo = window_first<W>(t);
    for (std::size_t t2 = 0; t2 < lo; ++t2) att_t[t2] = 0;  // masked: keys before the window

    // scaled scores for keys lo..t, then a max-shifted softmax over them
    T max_score = scale * attention_dot<D>(q_t, k + lo * Ld);
    att_t[lo] = max_score;
    for (std::size_t t2 = lo + 1; t2 <= t; ++t2) {
      const T score = scale * attention_dot<D>(q_t, k + t2 * Ld);
      att_t[t2] = score;
      if (score > max_score) max_score = score;
    }
    acc_t<T> sum = 0;  // a row statistic over up to S terms: wide for float
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      const T e = std::exp(att_t[t2] - max_score);
      att_t[t2] = e;
      sum += e;
    }
    const T inv_sum = static_cast<T>(1 / sum);
    for (std::size_t t2 = lo; t2 <= t; ++t2) att_t[t2] *= inv_sum;
    for (std::size_t t2 = t + 1; t2 < S; ++t2) att_t[t2] = 0;  // masked: future keys

    // out_t = sum over visible keys of att[t, t2] * v_t2
    T* out_t = out + t * LdOut;  // (D)
    for (std::size_t i = 0; i < D; ++i) out_t[i] = 0;
    for (std::size_t t2 = lo; t2 <= t; ++t2) attention_axpy<D>(out_t, att_t[t2], v + t2 * Ld);
  }
}

// ---- backward, first pass over one (batch, head): d(preatt) into scratch and dq ----
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t W, class T>
void attention_backward_query(T* dq, T* dpre, const T* dout, const T* att, const T* k, const T* v, T scale) {
  for (std::size_t t = 0; t < S; ++t) {
    const T* dout_t = dout + t * LdOut;  // (D)
    const T* att_t = att + t * S;        // (S)
    T* dpre_t = dpre + t * S;            // (S)
    const std::size_t lo = window_first<W>(t);
    for (std::size_t t2 = 0; t2 < lo; ++t2) dpre_t[t2] = 0;

    // d(att)[t, t2] = dout_t . v_t2, kept in dpre_t until the softmax backward below
    acc_t<T> row_sum = 0;  // sum over t2 of att * d(att), a row statistic
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      const T datt = attention_dot<D>(dout_t, v + t2 * Ld);
      dpre_t[t2] = datt;
      row_sum += att_t[t2] * datt;
    }
    const T row_dot = static_cast<T>(row_sum);
    // softmax backward: d(preatt) = att * (d(att) - sum(att * d(att)))
    for (std::size_t t2 = lo; t2 <= t; ++t2) dpre_t[t2] = att_t[t2] * (dpre_t[t2] - row_dot);
    for (std::size_t t2 = t + 1; t2 < S; ++t2) dpre_t[t2] = 0;

    // preatt = scale * q . k, so dq_t += scale * sum over t2 of d(preatt) * k_t2
    T* dq_t = dq + t * Ld;  // (D)
    for (std::size_t t2 = lo; t2 <= t; ++t2) attention_axpy<D>(dq_t, scale * dpre_t[t2], k + t2 * Ld);
  }
}

// ---- backward, second pass for one query head of a kv head: dk and dv ----
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t W, class T>
void attention_backward_key_value(T* dk, T* dv, const T* dpre, const T* att, const T* q, const T* dout,
                                  T scale) {
  for (std::size_t t = 0; t < S; ++t) {
    const T* q_t = q + t * Ld;           // (D)
    const T* dout_t = dout + t * LdOut;  // (D)
    const T* dpre_t = dpre + t * S;      // (S)
    const T* att_t = att + t * S;        // (S)
    for (std::size_t t2 = window_first<W>(t); t2 <= t; ++t2) {
      attention_axpy<D>(dk + t2 * Ld, scale * dpre_t[t2], q_t);
      attention_axpy<D>(dv + t2 * Ld, att_t[t2], dout_t);
    }
  }
}

// ---- bf16 storage: the same passes with float accumulators ----
// A bf16 buffer must never serve as an accumulator (each += would round to 8 bits): scores,
// probabilities, out_t, dq_t, dk and dv are summed in float locals and each stored value is
// rounded once. The key/value pass walks keys in the outer loop (and the group's query heads
// inside it) so dk_t2 and dv_t2 are complete before they are stored.
// Also the forward of the row-statistics form (ops/flash_attention.hpp): `att` null keeps no
// probabilities, `lse` (when given) receives each row's log-sum-exp; the arithmetic is the same.
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t W, class T,
          class Stat = compute_t<T>>
void attention_forward_head_mixed(T* out, T* att, const T* q, const T* k, const T* v, compute_t<T> scale,
                                  Stat* lse = nullptr) {
  using F = compute_t<T>;
  F row[S];      // (S) scores, then exp, of row t
  F acc_out[D];  // (D) out_t
  for (std::size_t t = 0; t < S; ++t) {
    const T* q_t = q + t * Ld;  // (D)
    const std::size_t lo = window_first<W>(t);
    F max_score = scale * attention_dot<D>(q_t, k + lo * Ld);
    row[lo] = max_score;
    for (std::size_t t2 = lo + 1; t2 <= t; ++t2) {
      row[t2] = scale * attention_dot<D>(q_t, k + t2 * Ld);
      if (row[t2] > max_score) max_score = row[t2];
    }
    acc_t<T> sum = 0;
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      row[t2] = std::exp(row[t2] - max_score);
      sum += row[t2];
    }
    const F inv_sum = static_cast<F>(1 / sum);
    for (std::size_t i = 0; i < D; ++i) acc_out[i] = 0;
    if (att)
      for (std::size_t t2 = 0; t2 < lo; ++t2) att[t * S + t2] = T(0.0f);
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      const F p = row[t2] * inv_sum;
      if (att) att[t * S + t2] = T(p);
      const T* v_t2 = v + t2 * Ld;  // (D)
      for (std::size_t i = 0; i < D; ++i) acc_out[i] += p * F(v_t2[i]);
    }
    if (att)
      for (std::size_t t2 = t + 1; t2 < S; ++t2) att[t * S + t2] = T(0.0f);
    if (lse) lse[t] = static_cast<Stat>(static_cast<acc_t<T>>(max_score) + std::log(sum));
    T* out_t = out + t * LdOut;  // (D)
    for (std::size_t i = 0; i < D; ++i) out_t[i] = T(acc_out[i]);
  }
}

template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t W, class T>
void attention_backward_query_mixed(T* dq, T* dpre, const T* dout, const T* att, const T* k, const T* v,
                                    compute_t<T> scale) {
  using F = compute_t<T>;
  F datt[S];    // (S) d(att) of row t
  F acc_dq[D];  // (D) dq_t
  for (std::size_t t = 0; t < S; ++t) {
    const T* dout_t = dout + t * LdOut;  // (D)
    const T* att_t = att + t * S;        // (S)
    T* dpre_t = dpre + t * S;            // (S)
    const std::size_t lo = window_first<W>(t);
    for (std::size_t t2 = 0; t2 < lo; ++t2) dpre_t[t2] = T(0.0f);
    acc_t<T> row_sum = 0;
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      datt[t2] = attention_dot<D>(dout_t, v + t2 * Ld);
      row_sum += F(att_t[t2]) * datt[t2];
    }
    const F row_dot = static_cast<F>(row_sum);
    for (std::size_t i = 0; i < D; ++i) acc_dq[i] = 0;
    for (std::size_t t2 = lo; t2 <= t; ++t2) {
      const F dp = F(att_t[t2]) * (datt[t2] - row_dot);
      dpre_t[t2] = T(dp);
      const T* k_t2 = k + t2 * Ld;  // (D)
      for (std::size_t i = 0; i < D; ++i) acc_dq[i] += scale * dp * F(k_t2[i]);
    }
    for (std::size_t t2 = t + 1; t2 < S; ++t2) dpre_t[t2] = T(0.0f);
    T* dq_t = dq + t * Ld;  // (D)
    for (std::size_t i = 0; i < D; ++i) dq_t[i] = T(F(dq_t[i]) + acc_dq[i]);
  }
}

// dk and dv of one kv head, summed over the Group query heads that read it. q, dout, dpre and
// att point at the group's first query head; heads are D (q, dout) or S*S (dpre, att) apart.
template <std::size_t S, std::size_t D, std::size_t Ld, std::size_t LdOut, std::size_t Group, std::size_t W, class T>
void attention_backward_key_value_mixed(T* dk, T* dv, const T* dpre, const T* att, const T* q, const T* dout,
                                        compute_t<T> scale) {
  using F = compute_t<T>;
  F acc_dk[D], acc_dv[D];  // (D) each: key t2's gradients
  for (std::size_t t2 = 0; t2 < S; ++t2) {
    for (std::size_t i = 0; i < D; ++i) acc_dk[i] = acc_dv[i] = 0;
    for (std::size_t g = 0; g < Group; ++g) {
      for (std::size_t t = t2; t < window_end<W, S>(t2); ++t) {
        const F dp = scale * F(dpre[g * S * S + t * S + t2]);
        const F a = F(att[g * S * S + t * S + t2]);
        const T* q_t = q + g * D + t * Ld;           // (D)
        const T* dout_t = dout + g * D + t * LdOut;  // (D)
        for (std::size_t i = 0; i < D; ++i) {
          acc_dk[i] += dp * F(q_t[i]);
          acc_dv[i] += a * F(dout_t[i]);
        }
      }
    }
    T* dk_t2 = dk + t2 * Ld;  // (D)
    T* dv_t2 = dv + t2 * Ld;  // (D)
    for (std::size_t i = 0; i < D; ++i) {
      dk_t2[i] = T(F(dk_t2[i]) + acc_dk[i]);
      dv_t2[i] = T(F(dv_t2[i]) + acc_dv[i]);
    }
  }
}

}  // namespace detail

/// Elements of the `scratch` buffer `attention_backward` needs: (batch, heads, seq, seq).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
inline constexpr std::size_t attention_scratch_v = B * H * S * S;

/// Causal self-attention forward with grouped-query heads (and a sliding window of W keys, W > 0).
/// out (B, S, H*D) is overwritten; att (B, H, S, S) receives the softmax probabilities (kept for
/// backward; entries above the diagonal, and before the window, are 0); qkv is
/// (B, S, (H + 2*KVH) * D) as described above.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
struct attention_forward_op {
  using signature = ops::signature<args::out<B * S, H * D>, args::out<B * H * S * S>, args::in<B * S, (H + 2 * KVH) * D>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
inline constexpr op_fn<attention_forward_op<B, S, H, KVH, D, W>> attention_forward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, host_element T>
void op_impl(attention_forward_op<B, S, H, KVH, D, W>, const host_context&, T* out, T* att, const T* qkv) {
  using dims = detail::attention_dims<B, S, H, KVH, D>;
  constexpr std::size_t ld = dims::qkv_width;
  constexpr std::size_t ld_out = dims::out_width;
  const compute_t<T> scale = detail::attention_scale<compute_t<T>, D>();
  if constexpr (is_storage_only_v<T>) {
    // ---- bf16: float accumulators (see the _mixed kernels) ----
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t kvh = h / dims::group;
        const T* base = qkv + b * S * ld;  // (seq, qkv_width)
        detail::attention_forward_head_mixed<S, D, ld, ld_out, W>(
            out + b * S * ld_out + h * D, att + (b * H + h) * S * S, base + h * D, base + dims::k_offset + kvh * D,
            base + dims::v_offset + kvh * D, scale);
      }
    }
    return;
  } else {
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t kvh = h / dims::group;
        const T* base = qkv + b * S * ld;  // (seq, qkv_width) of this batch row
        detail::attention_forward_head<S, D, ld, ld_out, W>(out + b * S * ld_out + h * D,  // (seq, D)
                                                         att + (b * H + h) * S * S,     // (seq, seq)
                                                         base + h * D,                  // q head h
                                                         base + dims::k_offset + kvh * D,
                                                         base + dims::v_offset + kvh * D, scale);
      }
    }
  }
}

/// Causal self-attention backward; accumulates (+=) into dqkv (B, S, (H + 2*KVH) * D).
/// scratch: attention_scratch_v<B, S, H, KVH, D> elements; on return it holds d(loss)/d(preatt),
/// the gradient of the pre-softmax scores (B, H, S, S), 0 above the diagonal.
/// att is the forward's kept probabilities for the same qkv.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
struct attention_backward_op {
  using signature = ops::signature<args::out<B * S, (H + 2 * KVH) * D>, args::out<B * H * S * S>, args::in<B * S, H * D>, args::in<B * S, (H + 2 * KVH) * D>, args::in<B * H * S * S>>;
};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
inline constexpr op_fn<attention_backward_op<B, S, H, KVH, D, W>> attention_backward{};
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, host_element T>
void op_impl(attention_backward_op<B, S, H, KVH, D, W>, const host_context&, T* dqkv, T* scratch, const T* dout,
             const T* qkv, const T* att) {
  using dims = detail::attention_dims<B, S, H, KVH, D>;
  constexpr std::size_t ld = dims::qkv_width;
  constexpr std::size_t ld_out = dims::out_width;
  const compute_t<T> scale = detail::attention_scale<compute_t<T>, D>();
  if constexpr (is_storage_only_v<T>) {
    // ---- bf16: float accumulators (see the _mixed kernels) ----
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t kvh = h / dims::group;
        const T* base = qkv + b * S * ld;  // (seq, qkv_width)
        detail::attention_backward_query_mixed<S, D, ld, ld_out, W>(
            dqkv + b * S * ld + h * D, scratch + (b * H + h) * S * S, dout + b * S * ld_out + h * D,
            att + (b * H + h) * S * S, base + dims::k_offset + kvh * D, base + dims::v_offset + kvh * D, scale);
      }
    }
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t kvh = 0; kvh < KVH; ++kvh) {
        const std::size_t h0 = kvh * dims::group;  // the group's first query head
        const T* base = qkv + b * S * ld;          // (seq, qkv_width)
        T* dbase = dqkv + b * S * ld;              // (seq, qkv_width)
        detail::attention_backward_key_value_mixed<S, D, ld, ld_out, dims::group, W>(
            dbase + dims::k_offset + kvh * D, dbase + dims::v_offset + kvh * D, scratch + (b * H + h0) * S * S,
            att + (b * H + h0) * S * S, base + h0 * D, dout + b * S * ld_out + h0 * D, scale);
      }
    }
    return;
  } else {
    // Pass 1 over (batch, query head): d(preatt) and dq. Each pair writes only its own dq head.
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t kvh = h / dims::group;
        const T* base = qkv + b * S * ld;  // (seq, qkv_width)
        detail::attention_backward_query<S, D, ld, ld_out, W>(dqkv + b * S * ld + h * D,          // dq head h
                                                           scratch + (b * H + h) * S * S,     // (seq, seq)
                                                           dout + b * S * ld_out + h * D,     // (seq, D)
                                                           att + (b * H + h) * S * S,         // (seq, seq)
                                                           base + dims::k_offset + kvh * D,   // k
                                                           base + dims::v_offset + kvh * D,   // v
                                                           scale);
      }
    }

    // Pass 2 over (batch, kv head): the query heads of a group share dk and dv, so one thread
    // owns each kv head and walks its group serially (no write races).
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) if (dims::parallel)
#endif
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t kvh = 0; kvh < KVH; ++kvh) {
        const T* base = qkv + b * S * ld;  // (seq, qkv_width)
        T* dbase = dqkv + b * S * ld;      // (seq, qkv_width)
        for (std::size_t g = 0; g < dims::group; ++g) {
          const std::size_t h = kvh * dims::group + g;
          detail::attention_backward_key_value<S, D, ld, ld_out, W>(dbase + dims::k_offset + kvh * D,  // dk
                                                                 dbase + dims::v_offset + kvh * D,  // dv
                                                                 scratch + (b * H + h) * S * S,
                                                                 att + (b * H + h) * S * S,
                                                                 base + h * D,                  // q head h
                                                                 dout + b * S * ld_out + h * D,  // (seq, D)
                                                                 scale);
        }
      }
    }
  }
}

}  // namespace weft::ops
