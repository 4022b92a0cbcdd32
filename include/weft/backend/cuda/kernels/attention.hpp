#pragma once
// ---- causal flash attention forward and backward, scalar form (runs emulated; the tensor-core form waits) ----
// Online softmax over key tiles (Dao et al., FlashAttention): no (S, S) matrix is formed; each
// query row keeps a running max m, a running sum l and an unnormalised output acc(D), and the
// kernel writes out = acc / l and the row statistic lse = m + log l, (B, H, S) f32, which is
// what a flash backward needs (instead of the host op's (B, H, S, S) probabilities).
// Grid (query tiles, H, B); a block is Br = 32 query rows, one thread each. Grouped-query heads:
// query head h reads kv head h / (H / KVH). Phases: for each key tile, load K and V rows into
// shared memory (as f32), barrier, update every row with the tile's keys (causal: key <= query),
// barrier; a last phase normalises and writes. Tiles past a block's diagonal are skipped (their
// phases only meet the barriers), and with a sliding window of W keys (W > 0: query t sees keys
// t - W < t2 <= t, ops/attention.hpp) so are the tiles before the window of the block's first
// query; each row's loop starts at its own window's first key. Each thread holds q and acc (2 D
// floats): fine for the emulator and a correctness reference on a device, not the fast path —
// that is the tensor-core (mma/wgmma) kernel, which cannot run on a CPU and is not written yet.
#include "weft/backend/cuda/kernels/grid.hpp"  // block_context, math, to_f32, from_f32

#include <cstddef>

namespace weft::cuda::kernels {

namespace detail {
// The sliding window of every attention kernel (the row kernels and the tensor-core kernels use
// these too): ops/attention.hpp's window_first and window_end, callable on the device.
/// The first key query t sees under a window of W keys (W = 0: no window, key 0).
template <std::size_t W>
WEFT_HOST_DEVICE constexpr std::size_t window_first(std::size_t t) {
  return W == 0 || t < W ? 0 : t + 1 - W;
}
/// One past the last query that sees key t2 under a window of W keys (W = 0: every later query).
template <std::size_t W, std::size_t S>
WEFT_HOST_DEVICE constexpr std::size_t window_end(std::size_t t2) {
  return W == 0 || t2 + W > S ? S : t2 + W;
}
/// Whether query t sees key t2: causal (t2 <= t) and inside the window.
template <std::size_t W>
WEFT_HOST_DEVICE constexpr bool sees(std::size_t t, std::size_t t2) {
  return t2 <= t && (W == 0 || t - t2 < W);
}
}  // namespace detail

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct flash_attention_forward_kernel {
  static constexpr bool heads_divisible = H % KVH == 0;
  static_assert(heads_divisible, "weft::cuda::kernels::attention: heads is not divisible by kv_heads. Choose kv_heads "
                                 "that divides heads.");
  static constexpr std::size_t Br = 32;  // query rows per block (one thread each)
  static constexpr std::size_t Bc = 32;  // key rows per tile
  static constexpr std::size_t query_tiles = ceil_div(S, Br);
  static constexpr std::size_t key_tiles = ceil_div(S, Bc);
  static constexpr std::size_t group = H / KVH;
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;

  T* out;                // (B, S, H * D)
  float* lse;            // (B, H, S) log-sum-exp of each row's scaled scores
  const T* qkv;          // (B, S, (H + 2 KVH) D)
  struct shared {
    float k[Bc][D];  // (key in tile, head dim)
    float v[Bc][D];
  };
  struct locals {
    float q[D];    // scaled query row
    float acc[D];  // unnormalised output
    float m = -3.402823466e38f;
    float l = 0;
  };
  static constexpr int phases = static_cast<int>(2 * key_tiles + 1);
  static constexpr unsigned threads = static_cast<unsigned>(Br);  // the launch bound (launch.cuh)
  // The key tiles a query tile reads: from its first query's window to its last query (causal).
  WEFT_HOST_DEVICE static constexpr std::size_t first_key_tile(std::size_t q_tile) {
    return detail::window_first<W>(q_tile * Br) / Bc;
  }
  WEFT_HOST_DEVICE static constexpr std::size_t last_key_tile(std::size_t q_tile) { return ((q_tile + 1) * Br - 1) / Bc; }
  launch_config config() const {
    return {{static_cast<unsigned>(query_tiles), static_cast<unsigned>(H), static_cast<unsigned>(B)},
            {static_cast<unsigned>(Br), 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, h = c.block_idx.y, kvh = h / group;
    const std::size_t q_tile = c.block_idx.x, t = q_tile * Br + c.thread_rank();
    const T* base = qkv + b * S * qkv_width;  // (S, qkv_width) of this batch row
    const std::size_t k_at = H * D + kvh * D, v_at = (H + KVH) * D + kvh * D;
    if (p == phases - 1) {  // normalise and write
      if (t >= S) return;
      T* o = out + (b * S + t) * H * D + h * D;
      const float inv = 1.0f / l.l;
      for (std::size_t i = 0; i < D; ++i) o[i] = from_f32<T>(l.acc[i] * inv);
      lse[(b * H + h) * S + t] = l.m + math::log(l.l);
      return;
    }
    if (p == 0 && t < S) {  // before any skipping: the first tiles may be before the window
      const float scale = 1.0f / math::sqrt(float(D));
      for (std::size_t i = 0; i < D; ++i) {
        l.q[i] = to_f32(base[t * qkv_width + h * D + i]) * scale;
        l.acc[i] = 0;
      }
    }
    const std::size_t tile = static_cast<std::size_t>(p / 2);
    if (tile < first_key_tile(q_tile) || tile > last_key_tile(q_tile)) return;
    if (p % 2 == 0) {
      // cooperative load of the tile's K and V rows
      for (std::size_t e = c.thread_rank(); e < Bc * D; e += c.threads()) {
        const std::size_t r = e / D, i = e % D, key = tile * Bc + r;
        s.k[r][i] = key < S ? to_f32(base[key * qkv_width + k_at + i]) : 0.0f;
        s.v[r][i] = key < S ? to_f32(base[key * qkv_width + v_at + i]) : 0.0f;
      }
      return;
    }
    if (t >= S) return;
    const std::size_t first = detail::window_first<W>(t);
    for (std::size_t r = first > tile * Bc ? first - tile * Bc : 0; r < Bc; ++r) {
      const std::size_t key = tile * Bc + r;
      if (key > t || key >= S) break;
      float score = 0;
      for (std::size_t i = 0; i < D; ++i) score += l.q[i] * s.k[r][i];
      const float m_new = score > l.m ? score : l.m;
      const float correction = math::exp(l.m - m_new), w = math::exp(score - m_new);
      l.l = l.l * correction + w;
      for (std::size_t i = 0; i < D; ++i) l.acc[i] = l.acc[i] * correction + w * s.v[r][i];
      l.m = m_new;
    }
  }
};

// ---- backward, flash style: recompute P = exp(scale q.k - lse) tile by tile ----
// With Δ_t = Σ_i dout_t[i] out_t[i]:  dS = P (dout_t . v_t2 - Δ_t),
//   dq_t += scale Σ_t2 dS k_t2,   dk_t2 += scale Σ_t dS q_t,   dv_t2 += Σ_t P dout_t.
// Two kernels, each owning what it writes, so there are no atomics and the sums have one order:
//   * dq: grid (query tiles, H, B), a thread per query row walks the key tiles (as the forward);
//   * dk, dv: grid (key tiles, KVH, B), a thread per key row walks, for each query head of its
//     group, the query tiles at or after its own (loaded with dout, lse and Δ into shared memory),
//     up to the last query whose window holds the tile's keys.
// Both accumulate (+=) into dqkv (B, S, (H + 2 KVH) D), as ops::attention_backward.

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct flash_attention_backward_dq_kernel {
  using fwd = flash_attention_forward_kernel<B, S, H, KVH, D, T, W>;
  static constexpr std::size_t Br = fwd::Br, Bc = fwd::Bc, qkv_width = fwd::qkv_width;

  T* dqkv;
  const T* dout;  // (B, S, H*D)
  const T* qkv;
  const T* out;
  const float* lse;  // (B, H, S)
  struct shared {
    float k[Bc][D];
    float v[Bc][D];
  };
  struct locals {
    float q[D], dout[D], dq[D];
    float lse, delta;
  };
  static constexpr int phases = static_cast<int>(2 * fwd::key_tiles + 1);
  static constexpr unsigned threads = static_cast<unsigned>(Br);
  launch_config config() const {
    return {{static_cast<unsigned>(fwd::query_tiles), static_cast<unsigned>(H), static_cast<unsigned>(B)},
            {static_cast<unsigned>(Br), 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, h = c.block_idx.y, kvh = h / fwd::group;
    const std::size_t q_tile = c.block_idx.x, t = q_tile * Br + c.thread_rank();
    const T* base = qkv + b * S * qkv_width;
    const std::size_t k_at = H * D + kvh * D, v_at = (H + KVH) * D + kvh * D;
    const float scale = 1.0f / math::sqrt(float(D));
    if (p == phases - 1) {
      if (t >= S) return;
      T* dq = dqkv + (b * S + t) * qkv_width + h * D;
      for (std::size_t i = 0; i < D; ++i) dq[i] = from_f32<T>(to_f32(dq[i]) + l.dq[i]);
      return;
    }
    if (p == 0 && t < S) {  // before any skipping: the first tiles may be before the window
      const T* o = out + (b * S + t) * H * D + h * D;
      const T* g = dout + (b * S + t) * H * D + h * D;
      float delta = 0;
      for (std::size_t i = 0; i < D; ++i) {
        l.q[i] = to_f32(base[t * qkv_width + h * D + i]);
        l.dout[i] = to_f32(g[i]);
        l.dq[i] = 0;
        delta += l.dout[i] * to_f32(o[i]);
      }
      l.delta = delta;
      l.lse = lse[(b * H + h) * S + t];
    }
    const std::size_t tile = static_cast<std::size_t>(p / 2);
    if (tile < fwd::first_key_tile(q_tile) || tile > fwd::last_key_tile(q_tile)) return;
    if (p % 2 == 0) {
      for (std::size_t e = c.thread_rank(); e < Bc * D; e += c.threads()) {
        const std::size_t r = e / D, i = e % D, key = tile * Bc + r;
        s.k[r][i] = key < S ? to_f32(base[key * qkv_width + k_at + i]) : 0.0f;
        s.v[r][i] = key < S ? to_f32(base[key * qkv_width + v_at + i]) : 0.0f;
      }
      return;
    }
    if (t >= S) return;
    const std::size_t first = detail::window_first<W>(t);
    for (std::size_t r = first > tile * Bc ? first - tile * Bc : 0; r < Bc; ++r) {
      const std::size_t key = tile * Bc + r;
      if (key > t || key >= S) break;
      float qk = 0, dp = 0;
      for (std::size_t i = 0; i < D; ++i) {
        qk += l.q[i] * s.k[r][i];
        dp += l.dout[i] * s.v[r][i];
      }
      const float prob = math::exp(qk * scale - l.lse);
      const float ds = prob * (dp - l.delta);
      for (std::size_t i = 0; i < D; ++i) l.dq[i] += scale * ds * s.k[r][i];
    }
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct flash_attention_backward_dkv_kernel {
  using fwd = flash_attention_forward_kernel<B, S, H, KVH, D, T, W>;
  static constexpr std::size_t Br = fwd::Br, Bc = fwd::Bc, qkv_width = fwd::qkv_width, group = fwd::group;
  static constexpr std::size_t steps = group * fwd::query_tiles;  // (query head of the group, query tile)

  T* dqkv;
  const T* dout;
  const T* qkv;
  const T* out;
  const float* lse;
  struct shared {
    float q[Br][D];
    float dout[Br][D];
    float lse[Br];
    float delta[Br];
  };
  struct locals {
    float k[D], v[D], dk[D], dv[D];
  };
  static constexpr int phases = static_cast<int>(2 * steps + 1);
  static constexpr unsigned threads = static_cast<unsigned>(Bc);
  launch_config config() const {
    return {{static_cast<unsigned>(fwd::key_tiles), static_cast<unsigned>(KVH), static_cast<unsigned>(B)},
            {static_cast<unsigned>(Bc), 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, kvh = c.block_idx.y;
    const std::size_t k_tile = c.block_idx.x, key = k_tile * Bc + c.thread_rank();
    const T* base = qkv + b * S * qkv_width;
    const std::size_t k_at = H * D + kvh * D, v_at = (H + KVH) * D + kvh * D;
    const float scale = 1.0f / math::sqrt(float(D));
    if (p == phases - 1) {
      if (key >= S) return;
      T* dk = dqkv + (b * S + key) * qkv_width + k_at;
      T* dv = dqkv + (b * S + key) * qkv_width + v_at;
      for (std::size_t i = 0; i < D; ++i) {
        dk[i] = from_f32<T>(to_f32(dk[i]) + l.dk[i]);
        dv[i] = from_f32<T>(to_f32(dv[i]) + l.dv[i]);
      }
      return;
    }
    if (p == 0 && key < S) {  // before any masking: the first steps may be masked for this key tile
      for (std::size_t i = 0; i < D; ++i) {
        l.k[i] = to_f32(base[key * qkv_width + k_at + i]);
        l.v[i] = to_f32(base[key * qkv_width + v_at + i]);
        l.dk[i] = 0;
        l.dv[i] = 0;
      }
    }
    const std::size_t step = static_cast<std::size_t>(p / 2);
    const std::size_t h = kvh * group + step / fwd::query_tiles, q_tile = step % fwd::query_tiles;
    if ((q_tile + 1) * Br - 1 < k_tile * Bc) return;  // queries all before the keys: masked
    if (q_tile * Br >= detail::window_end<W, S>((k_tile + 1) * Bc - 1)) return;  // all past the keys' windows
    if (p % 2 == 0) {
      // thread r loads query row q_tile * Br + r of head h, its dout, lse and Δ
      const std::size_t r = c.thread_rank(), t = q_tile * Br + r;
      if (r < Br) {
        float delta = 0;
        for (std::size_t i = 0; i < D; ++i) {
          const bool in = t < S;
          s.q[r][i] = in ? to_f32(base[t * qkv_width + h * D + i]) : 0.0f;
          s.dout[r][i] = in ? to_f32(dout[(b * S + t) * H * D + h * D + i]) : 0.0f;
          delta += in ? s.dout[r][i] * to_f32(out[(b * S + t) * H * D + h * D + i]) : 0.0f;
        }
        s.delta[r] = delta;
        s.lse[r] = t < S ? lse[(b * H + h) * S + t] : 0.0f;
      }
      return;
    }
    if (key >= S) return;
    const std::size_t end = detail::window_end<W, S>(key);
    for (std::size_t r = 0; r < Br; ++r) {
      const std::size_t t = q_tile * Br + r;
      if (t >= end) break;    // past S, or past the key's window
      if (t < key) continue;  // causal
      float qk = 0, dp = 0;
      for (std::size_t i = 0; i < D; ++i) {
        qk += s.q[r][i] * l.k[i];
        dp += s.dout[r][i] * l.v[i];
      }
      const float prob = math::exp(qk * scale - s.lse[r]);
      const float ds = prob * (dp - s.delta[r]);
      for (std::size_t i = 0; i < D; ++i) {
        l.dv[i] += prob * s.dout[r][i];
        l.dk[i] += scale * ds * s.q[r][i];
      }
    }
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct flash_attention_backward_kernels {
  flash_attention_backward_dq_kernel<B, S, H, KVH, D, T, W> dq;
  flash_attention_backward_dkv_kernel<B, S, H, KVH, D, T, W> dkv;
};

/// dqkv += the gradient of flash attention, from dout (B, S, H*D), the forward's qkv, out and lse;
/// W > 0: a sliding window of W keys, as the forward's.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
flash_attention_backward_kernels<B, S, H, KVH, D, T, W> make_flash_attention_backward(T* dqkv, const T* dout,
                                                                                      const T* qkv, const T* out,
                                                                                      const float* lse) {
  return {{dqkv, dout, qkv, out, lse}, {dqkv, dout, qkv, out, lse}};
}

/// out(B, S, H*D) = causal attention of qkv, with a sliding window of W keys when W > 0; lse(B, H, S)
/// kept (f32).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
flash_attention_forward_kernel<B, S, H, KVH, D, T, W> make_flash_attention_forward(T* out, float* lse, const T* qkv) {
  return {out, lse, qkv};
}

}  // namespace weft::cuda::kernels
