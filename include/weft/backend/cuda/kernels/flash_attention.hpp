#pragma once
// ---- causal flash attention on tensor cores: forward, and a deterministic backward ----
// FlashAttention-2's algorithm (Dao, 2023) as weft phased kernels whose matrix products are
// warp-level m16n8k16 tensor-core instructions (mma.hpp), bf16 or f16 in, f32 accumulation. No
// (S, S) matrix exists anywhere: the forward keeps the row log-sum-exp, the backward recomputes
// the probabilities tile by tile. Tiles past the causal diagonal are skipped, so the work is the
// causal half of the square. With a sliding window of W keys (W > 0: query t sees the keys
// t - W < t2 <= t, ops/attention.hpp) the tiles before the window are skipped as well (a query
// tile reads its keys from its first query's window on, a key tile the queries up to its last
// key's window), so the work grows as S·W; tiles the window's edge crosses are masked on both
// sides of the band, element by element, like the diagonal's. A skipped tile's phases only meet
// the barriers.
//
// Forward, grid (query tiles of Br = 64, H, B), 4 warps of 16 query rows. Per key tile of Bc keys
// (64 for head dims up to 64, else 32), four phases:
//   0 (block barrier)  load K and V rows of the tile into shared memory (and, first, the Q tile)
//   1 (warp barrier)   S = scale·Q_w·Kᵀ on tensor cores, causal mask, each lane's partial row
//                      maximum into shared memory (a row's 16·... columns live on 4 lanes)
//   2 (warp barrier)   the row maximum from the 4 partials; rescale the running output and sum;
//                      P = exp(S - m) rounded to T into the warp's shared P tile
//   3 (block barrier)  O_w += P_w·V on tensor cores
// then the 4 lanes' partial sums are combined and out = O / l, lse = m + log l are written. The
// running sum is kept per lane (its own columns) and combined once at the end; the running
// maximum is combined every tile, because P·V mixes a row's columns across lanes.
//
// Backward (deterministic: no atomics, one owner and one order per output element), three
// kernels, with Δ_t = Σ_i dout_t[i]·out_t[i] and P = exp(scale·q·k - lse):
//   * delta: Δ (B, H, S) f32, a thread per (row, head);
//   * dq: grid (query tiles, H, B), warps of 16 query rows walk the key tiles up to the diagonal:
//     S and dP = dO·Vᵀ on tensor cores, dS = P ⊙ (dP - Δ) rounded to T into shared memory, then
//     dQ_w += dS_w·K (tensor cores); dq += scale·dQ at the end;
//   * dkv: grid (key tiles, KVH, B), warps of 16 keys walk, for each query head of their group,
//     the query tiles (Bq = 32) at or after the diagonal: Sᵀ = K_w·Qᵀ and dPᵀ = V_w·dOᵀ on tensor
//     cores, Pᵀ and dSᵀ rounded to T into shared memory, then dV_w += Pᵀ·dO and dK_w += dSᵀ·Q.
// FlashAttention-2 adds dQ with atomics from the dK/dV loop (one pass, 5 products per tile pair);
// the separate dq kernel costs two more products per tile pair (S and dP again) and buys a
// result that is the same on every run.
//
// All tiles live in shared memory, rows padded by 8 elements (16 bytes) so that the 8 rows one
// fragment load touches fall in different banks. Static shared memory stays under 48 KiB for head
// dims up to 128 (static_asserts below). What a lane keeps across phases (its accumulators) is
// the `locals` struct, indexed only with compile-time indices, so it stays in registers.
#include "weft/backend/cuda/kernels/attention.hpp"  // detail::window_first, window_end, sees
#include "weft/backend/cuda/kernels/grid.hpp"       // block_context, math, load_vec, store_vec
#include "weft/backend/cuda/kernels/mma.hpp"        // warp_mma, mma_c_coord, mma_element

#include <cstddef>
#include <cstdint>

namespace weft::cuda::kernels {

/// Which attentions the tensor-core kernels take: 16-bit elements and a head dim that is a
/// multiple of 16 up to 128.
template <class T, std::size_t D>
inline constexpr bool mma_attention_shape = mma_element<T> && D % 16 == 0 && D >= 16 && D <= 128;

namespace detail {
inline constexpr float neg_huge = -3.402823466e38f;  // the running maximum before any key

// 8 elements at p: one 16-byte access where p is 16-byte aligned (rows of D % 16 == 0 elements
// from an aligned base always are), else element by element (a caller's buffer at an odd offset).
template <class T>
WEFT_HOST_DEVICE vec<T, 8> load8(const T* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 == 0) return load_vec<8>(p);
  vec<T, 8> x;
  for (std::size_t j = 0; j < 8; ++j) x.v[j] = p[j];
  return x;
}

// Loads rows [r0, r0 + R) of one head (D columns at `col` of rows `width` apart) into a padded
// shared tile, 16 bytes at a time, zeros past row S. Every thread of the block takes part.
template <std::size_t R, std::size_t D, std::size_t LD, std::size_t S, class T>
WEFT_HOST_DEVICE void load_rows(const block_context& c, T (&dst)[R][LD], const T* base, std::size_t width,
                                       std::size_t col, std::size_t r0) {
  constexpr std::size_t V = 8;  // elements per 16-byte access
  constexpr std::size_t per_row = D / V;
  for (std::size_t e = c.thread_rank(); e < R * per_row; e += c.threads()) {
    const std::size_t r = e / per_row, i = (e % per_row) * V, row = r0 + r;
    vec<T, V> x;
    if (row < S) {
      x = load8(base + row * width + col + i);
    } else {
      for (std::size_t j = 0; j < V; ++j) x.v[j] = from_f32<T>(0.0f);
    }
    store_vec<V>(&dst[r][i], x);
  }
}
}  // namespace detail

// ==================================== forward ====================================

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct mma_attention_forward_kernel {
  static_assert(mma_attention_shape<T, D>,
                "weft::cuda::kernels::mma_attention_forward: needs bf16 or f16 and a head dim that is a multiple of 16 "
                "up to 128. Other shapes take the cuBLASLt path (attention.cuh).");
  static constexpr bool heads_divisible = H % KVH == 0;
  static_assert(heads_divisible, "weft::cuda::kernels::mma_attention_forward: heads is not divisible by kv_heads. Choose "
                                 "kv_heads that divides heads.");
  static constexpr std::size_t warps = 4, Br = 16 * warps;
  static constexpr std::size_t Bc = D <= 64 ? 64 : 32;
  static constexpr std::size_t ld = D + 8, pld = Bc + 8;  // padded row lengths (elements)
  static constexpr std::size_t query_tiles = ceil_div(S, Br), key_tiles = ceil_div(S, Bc);
  static constexpr std::size_t group = H / KVH, qkv_width = (H + 2 * KVH) * D;

  T* out;         // (B, S, H·D)
  float* lse;     // (B, H, S)
  const T* qkv;   // (B, S, (H + 2 KVH)·D)

  struct shared {
    alignas(16) T q[Br][ld];
    alignas(16) T k[Bc][ld];
    alignas(16) T v[Bc][ld];
    alignas(16) T p[warps][16][pld];
    float red[warps][16][4];  // a quad's four partials of one row
  };
  static_assert(sizeof(shared) <= 48 * 1024, "weft::cuda::kernels::mma_attention_forward: shared tiles over 48 KiB");
  struct locals {
    float o[D / 8][4] = {};   // unnormalised output, C layout per 8 columns
    float s[Bc / 8][4] = {};  // this tile's scores
    float m[2] = {detail::neg_huge, detail::neg_huge};  // running maximum of rows g and g + 8
    float l[2] = {};                                      // this lane's part of the running sum
  };
  static constexpr int phases = static_cast<int>(4 * key_tiles + 2);
  static constexpr unsigned threads = static_cast<unsigned>(32 * warps);
  WEFT_HOST_DEVICE static constexpr bool warp_barrier_after(int p) {
    return p == phases - 2 || (p < phases - 2 && (p % 4 == 1 || p % 4 == 2));
  }
  launch_config config() const {
    return {{static_cast<unsigned>(query_tiles), static_cast<unsigned>(H), static_cast<unsigned>(B)}, {threads, 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, h = c.block_idx.y, kvh = h / group;
    const std::size_t q0 = (query_tiles - 1 - c.block_idx.x) * Br;  // the longest rows first
    const unsigned w = c.warp(), lane = c.lane(), g = lane / 4, t = lane % 4;
    const std::size_t r0 = q0 + 16 * w;  // this warp's first query
    const T* base = qkv + b * S * qkv_width;
    if (p >= phases - 2) {
      if (p == phases - 2) {  // hand in this lane's partial sums
        s.red[w][g][t] = l.l[0];
        s.red[w][g + 8][t] = l.l[1];
        return;
      }
      for (unsigned ri = 0; ri < 2; ++ri) {
        const unsigned row = g + 8 * ri;
        const std::size_t query = r0 + row;
        if (query >= S) continue;
        const float sum = s.red[w][row][0] + s.red[w][row][1] + s.red[w][row][2] + s.red[w][row][3];
        const float inv = 1.0f / sum;
        T* o = out + (b * S + query) * H * D + h * D;
#pragma unroll
        for (std::size_t n = 0; n < D / 8; ++n) {
          o[8 * n + 2 * t] = from_f32<T>(l.o[n][2 * ri] * inv);
          o[8 * n + 2 * t + 1] = from_f32<T>(l.o[n][2 * ri + 1] * inv);
        }
        if (t == 0) lse[(b * H + h) * S + query] = l.m[ri] + math::log(sum);
      }
      return;
    }
    const std::size_t j = static_cast<std::size_t>(p / 4), k0 = j * Bc;
    const std::size_t first = detail::window_first<W>(q0) / Bc;  // the tile of the first query's first key
    if (j < first || k0 > q0 + Br - 1) return;  // before every window of the block, or past its diagonal
    const int step = p % 4;
    if (step == 0) {
      if (j == first) detail::load_rows<Br, D, ld, S>(c, s.q, base, qkv_width, h * D, q0);
      detail::load_rows<Bc, D, ld, S>(c, s.k, base, qkv_width, (H + kvh) * D, k0);
      detail::load_rows<Bc, D, ld, S>(c, s.v, base, qkv_width, (H + KVH + kvh) * D, k0);
      return;
    }
    // the warp's rows are padding, all before the tile's keys, or the keys all before their windows
    if (r0 >= S || r0 + 15 < k0 || k0 + Bc <= detail::window_first<W>(r0)) return;
    if (step == 1) {
      const float scale = 1.0f / math::sqrt(float(D));
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (std::size_t n = 0; n < Bc / 8; ++n) {
        for (unsigned i = 0; i < 4; ++i) l.s[n][i] = 0;
#pragma unroll
        for (std::size_t kk = 0; kk < D / 16; ++kk)
          warp_mma<ld, 1, 1, ld>(l.s[n], lane, &s.q[16 * w][16 * kk], &s.k[8 * n][16 * kk]);
        for (unsigned i = 0; i < 4; ++i) {
          const mma_coord rc = mma_c_coord(lane, i);
          const std::size_t query = r0 + rc.row, key = k0 + 8 * n + rc.col;
          const float v = detail::sees<W>(query, key) && key < S ? l.s[n][i] * scale : -INFINITY;
          l.s[n][i] = v;
          mx[i / 2] = v > mx[i / 2] ? v : mx[i / 2];
        }
      }
      s.red[w][g][t] = mx[0];
      s.red[w][g + 8][t] = mx[1];
      return;
    }
    if (step == 2) {
      float m_new[2];
      for (unsigned ri = 0; ri < 2; ++ri) {
        const unsigned row = g + 8 * ri;
        float m = l.m[ri];
        for (unsigned q = 0; q < 4; ++q) m = s.red[w][row][q] > m ? s.red[w][row][q] : m;
        const float corr = math::exp(l.m[ri] - m);
        l.l[ri] *= corr;
#pragma unroll
        for (std::size_t n = 0; n < D / 8; ++n) {
          l.o[n][2 * ri] *= corr;
          l.o[n][2 * ri + 1] *= corr;
        }
        l.m[ri] = m_new[ri] = m;
      }
#pragma unroll
      for (std::size_t n = 0; n < Bc / 8; ++n)
        for (unsigned i = 0; i < 4; ++i) {
          const mma_coord rc = mma_c_coord(lane, i);
          const T pt = from_f32<T>(math::exp(l.s[n][i] - m_new[i / 2]));
          l.l[i / 2] += to_f32(pt);
          s.p[w][rc.row][8 * n + rc.col] = pt;
        }
      return;
    }
    // step 3: O_w += P_w · V
#pragma unroll
    for (std::size_t n = 0; n < D / 8; ++n)
#pragma unroll
      for (std::size_t kk = 0; kk < Bc / 16; ++kk)
        warp_mma<pld, 1, ld, 1>(l.o[n], lane, &s.p[w][0][16 * kk], &s.v[16 * kk][8 * n]);
  }
};

// ==================================== backward ====================================

/// Δ (B, H, S) = Σ_i dout[b, t, h, i]·out[b, t, h, i] in f32; a thread per (b, t, h).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t D, class T>
struct attention_delta_kernel {
  float* delta;
  const T* dout;  // (B, S, H·D)
  const T* out;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  static constexpr std::size_t rows = B * S * H;
  launch_config config() const { return {{static_cast<unsigned>(ceil_div(rows, 256)), 1, 1}, {256, 1, 1}}; }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    const std::size_t r = c.global_rank();  // (b, t, h), h fastest: neighbours read neighbouring D-chunks
    if (r >= rows) return;
    const std::size_t h = r % H, bt = r / H, b = bt / S, t = bt % S;
    const T* g = dout + r * D;
    const T* o = out + r * D;
    float sum = 0;
    for (std::size_t i = 0; i < D; i += 8) {
      const auto gv = detail::load8(g + i), ov = detail::load8(o + i);
      for (std::size_t j = 0; j < 8; ++j) sum += to_f32(gv.v[j]) * to_f32(ov.v[j]);
    }
    delta[(b * H + h) * S + t] = sum;
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct mma_attention_backward_dq_kernel {
  static_assert(mma_attention_shape<T, D>,
                "weft::cuda::kernels::mma_attention_backward: needs bf16 or f16 and a head dim that is a multiple of 16 "
                "up to 128.");
  static constexpr std::size_t warps = D <= 64 ? 4 : 2, Br = 16 * warps;
  static constexpr std::size_t Bc = D <= 64 ? 64 : 32;
  static constexpr std::size_t ld = D + 8, pld = Bc + 8;
  static constexpr std::size_t query_tiles = ceil_div(S, Br), key_tiles = ceil_div(S, Bc);
  static constexpr std::size_t group = H / KVH, qkv_width = (H + 2 * KVH) * D;

  T* dqkv;
  const T* dout;
  const T* qkv;
  const float* lse;    // (B, H, S)
  const float* delta;  // (B, H, S)

  struct shared {
    alignas(16) T q[Br][ld];
    alignas(16) T dout[Br][ld];
    alignas(16) T k[Bc][ld];
    alignas(16) T v[Bc][ld];
    alignas(16) T ds[warps][16][pld];
    float lse[Br];
    float delta[Br];
  };
  static_assert(sizeof(shared) <= 48 * 1024, "weft::cuda::kernels::mma_attention_backward_dq: shared tiles over 48 KiB");
  struct locals {
    float dq[D / 8][4] = {};
    float s[Bc / 8][4] = {};
    float dp[Bc / 8][4] = {};
  };
  static constexpr int phases = static_cast<int>(3 * key_tiles + 1);
  static constexpr unsigned threads = static_cast<unsigned>(32 * warps);
  WEFT_HOST_DEVICE static constexpr bool warp_barrier_after(int p) { return p < phases - 1 && p % 3 == 1; }
  launch_config config() const {
    return {{static_cast<unsigned>(query_tiles), static_cast<unsigned>(H), static_cast<unsigned>(B)}, {threads, 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, h = c.block_idx.y, kvh = h / group;
    const std::size_t q0 = (query_tiles - 1 - c.block_idx.x) * Br;
    const unsigned w = c.warp(), lane = c.lane();
    const std::size_t r0 = q0 + 16 * w;
    const T* base = qkv + b * S * qkv_width;
    const float scale = 1.0f / math::sqrt(float(D));
    if (p == phases - 1) {
      for (unsigned i = 0; i < 4; ++i) {
        const mma_coord rc = mma_c_coord(lane, i);
        const std::size_t query = r0 + rc.row;
        if (query >= S) continue;
        T* dq = dqkv + (b * S + query) * qkv_width + h * D + rc.col;
#pragma unroll
        for (std::size_t n = 0; n < D / 8; ++n) dq[8 * n] = from_f32<T>(to_f32(dq[8 * n]) + scale * l.dq[n][i]);
      }
      return;
    }
    const std::size_t j = static_cast<std::size_t>(p / 3), k0 = j * Bc;
    const std::size_t first = detail::window_first<W>(q0) / Bc;  // as the forward's
    if (j < first || k0 > q0 + Br - 1) return;
    const int step = p % 3;
    if (step == 0) {
      if (j == first) {
        detail::load_rows<Br, D, ld, S>(c, s.q, base, qkv_width, h * D, q0);
        detail::load_rows<Br, D, ld, S>(c, s.dout, dout + b * S * H * D, H * D, h * D, q0);
        for (std::size_t r = c.thread_rank(); r < Br; r += c.threads()) {
          const std::size_t query = q0 + r;
          s.lse[r] = query < S ? lse[(b * H + h) * S + query] : 0.0f;
          s.delta[r] = query < S ? delta[(b * H + h) * S + query] : 0.0f;
        }
      }
      detail::load_rows<Bc, D, ld, S>(c, s.k, base, qkv_width, (H + kvh) * D, k0);
      detail::load_rows<Bc, D, ld, S>(c, s.v, base, qkv_width, (H + KVH + kvh) * D, k0);
      return;
    }
    if (r0 >= S || r0 + 15 < k0 || k0 + Bc <= detail::window_first<W>(r0)) return;
    if (step == 1) {  // dS_w = P ⊙ (dO·Vᵀ - Δ) into shared memory
#pragma unroll
      for (std::size_t n = 0; n < Bc / 8; ++n) {
        for (unsigned i = 0; i < 4; ++i) l.s[n][i] = l.dp[n][i] = 0;
#pragma unroll
        for (std::size_t kk = 0; kk < D / 16; ++kk) {
          warp_mma<ld, 1, 1, ld>(l.s[n], lane, &s.q[16 * w][16 * kk], &s.k[8 * n][16 * kk]);
          warp_mma<ld, 1, 1, ld>(l.dp[n], lane, &s.dout[16 * w][16 * kk], &s.v[8 * n][16 * kk]);
        }
        for (unsigned i = 0; i < 4; ++i) {
          const mma_coord rc = mma_c_coord(lane, i);
          const std::size_t row = 16 * w + rc.row, query = r0 + rc.row, key = k0 + 8 * n + rc.col;
          const float prob = detail::sees<W>(query, key) && key < S ? math::exp(l.s[n][i] * scale - s.lse[row]) : 0.0f;
          s.ds[w][rc.row][8 * n + rc.col] = from_f32<T>(prob * (l.dp[n][i] - s.delta[row]));
        }
      }
      return;
    }
    // step 2: dQ_w += dS_w · K
#pragma unroll
    for (std::size_t n = 0; n < D / 8; ++n)
#pragma unroll
      for (std::size_t kk = 0; kk < Bc / 16; ++kk)
        warp_mma<pld, 1, ld, 1>(l.dq[n], lane, &s.ds[w][0][16 * kk], &s.k[16 * kk][8 * n]);
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct mma_attention_backward_dkv_kernel {
  static_assert(mma_attention_shape<T, D>,
                "weft::cuda::kernels::mma_attention_backward: needs bf16 or f16 and a head dim that is a multiple of 16 "
                "up to 128.");
  static constexpr std::size_t warps = D <= 64 ? 4 : 2, Bk = 16 * warps;
  static constexpr std::size_t Bq = 32;
  static constexpr std::size_t ld = D + 8, pld = Bq + 8;
  static constexpr std::size_t key_tiles = ceil_div(S, Bk), query_tiles = ceil_div(S, Bq);
  static constexpr std::size_t group = H / KVH, qkv_width = (H + 2 * KVH) * D;
  static constexpr std::size_t steps = group * query_tiles;  // (query head of the group, query tile)

  T* dqkv;
  const T* dout;
  const T* qkv;
  const float* lse;
  const float* delta;

  struct shared {
    alignas(16) T k[Bk][ld];
    alignas(16) T v[Bk][ld];
    alignas(16) T q[Bq][ld];
    alignas(16) T dout[Bq][ld];
    alignas(16) T p[warps][16][pld];   // Pᵀ of the warp's keys
    alignas(16) T ds[warps][16][pld];  // dSᵀ
    float lse[Bq];
    float delta[Bq];
  };
  static_assert(sizeof(shared) <= 48 * 1024, "weft::cuda::kernels::mma_attention_backward_dkv: shared tiles over 48 KiB");
  struct locals {
    float dk[D / 8][4] = {};
    float dv[D / 8][4] = {};
    float acc[Bq / 8][4] = {};
    float prob[Bq / 8][4] = {};
  };
  static constexpr int phases = static_cast<int>(1 + 3 * steps + 1);
  static constexpr unsigned threads = static_cast<unsigned>(32 * warps);
  WEFT_HOST_DEVICE static constexpr bool warp_barrier_after(int p) { return p >= 1 && p < phases - 1 && (p - 1) % 3 == 1; }
  launch_config config() const {
    return {{static_cast<unsigned>(key_tiles), static_cast<unsigned>(KVH), static_cast<unsigned>(B)}, {threads, 1, 1}};
  }

  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals& l) const {
    const std::size_t b = c.block_idx.z, kvh = c.block_idx.y, k0 = c.block_idx.x * Bk;
    const unsigned w = c.warp(), lane = c.lane();
    const std::size_t kw0 = k0 + 16 * w;  // this warp's first key
    const T* base = qkv + b * S * qkv_width;
    const std::size_t k_at = (H + kvh) * D, v_at = (H + KVH + kvh) * D;
    const float scale = 1.0f / math::sqrt(float(D));
    if (p == 0) {
      detail::load_rows<Bk, D, ld, S>(c, s.k, base, qkv_width, k_at, k0);
      detail::load_rows<Bk, D, ld, S>(c, s.v, base, qkv_width, v_at, k0);
      return;
    }
    if (p == phases - 1) {
      for (unsigned i = 0; i < 4; ++i) {
        const mma_coord rc = mma_c_coord(lane, i);
        const std::size_t key = kw0 + rc.row;
        if (key >= S) continue;
        T* dk = dqkv + (b * S + key) * qkv_width + k_at + rc.col;
        T* dv = dqkv + (b * S + key) * qkv_width + v_at + rc.col;
#pragma unroll
        for (std::size_t n = 0; n < D / 8; ++n) {
          dk[8 * n] = from_f32<T>(to_f32(dk[8 * n]) + scale * l.dk[n][i]);
          dv[8 * n] = from_f32<T>(to_f32(dv[8 * n]) + l.dv[n][i]);
        }
      }
      return;
    }
    const std::size_t st = static_cast<std::size_t>((p - 1) / 3);
    const std::size_t h = kvh * group + st / query_tiles, q0 = (st % query_tiles) * Bq;
    // every query of the tile before every key, or after every window of the block's keys: masked
    if (q0 + Bq - 1 < k0 || k0 >= S || q0 >= detail::window_end<W, S>(k0 + Bk - 1)) return;
    const int step = (p - 1) % 3;
    if (step == 0) {
      detail::load_rows<Bq, D, ld, S>(c, s.q, base, qkv_width, h * D, q0);
      detail::load_rows<Bq, D, ld, S>(c, s.dout, dout + b * S * H * D, H * D, h * D, q0);
      for (std::size_t r = c.thread_rank(); r < Bq; r += c.threads()) {
        const std::size_t query = q0 + r;
        s.lse[r] = query < S ? lse[(b * H + h) * S + query] : 0.0f;
        s.delta[r] = query < S ? delta[(b * H + h) * S + query] : 0.0f;
      }
      return;
    }
    // the warp's keys are padding, after every query, or every query is past their windows
    if (kw0 >= S || q0 + Bq - 1 < kw0 || q0 >= detail::window_end<W, S>(kw0 + 15)) return;
    if (step == 1) {  // Pᵀ and dSᵀ of the warp's 16 keys × Bq queries into shared memory
#pragma unroll
      for (std::size_t n = 0; n < Bq / 8; ++n) {
        for (unsigned i = 0; i < 4; ++i) l.acc[n][i] = 0;
#pragma unroll
        for (std::size_t kk = 0; kk < D / 16; ++kk)
          warp_mma<ld, 1, 1, ld>(l.acc[n], lane, &s.k[16 * w][16 * kk], &s.q[8 * n][16 * kk]);
        for (unsigned i = 0; i < 4; ++i) {
          const mma_coord rc = mma_c_coord(lane, i);  // row: key, col: query
          const std::size_t key = kw0 + rc.row, qi = 8 * n + rc.col, query = q0 + qi;
          const float prob =
              detail::sees<W>(query, key) && query < S ? math::exp(l.acc[n][i] * scale - s.lse[qi]) : 0.0f;
          l.prob[n][i] = prob;
          s.p[w][rc.row][qi] = from_f32<T>(prob);
        }
      }
#pragma unroll
      for (std::size_t n = 0; n < Bq / 8; ++n) {
        for (unsigned i = 0; i < 4; ++i) l.acc[n][i] = 0;
#pragma unroll
        for (std::size_t kk = 0; kk < D / 16; ++kk)
          warp_mma<ld, 1, 1, ld>(l.acc[n], lane, &s.v[16 * w][16 * kk], &s.dout[8 * n][16 * kk]);
        for (unsigned i = 0; i < 4; ++i) {
          const mma_coord rc = mma_c_coord(lane, i);
          const std::size_t qi = 8 * n + rc.col;
          s.ds[w][rc.row][qi] = from_f32<T>(l.prob[n][i] * (l.acc[n][i] - s.delta[qi]));
        }
      }
      return;
    }
    // step 2: dV_w += Pᵀ·dO, dK_w += dSᵀ·Q
#pragma unroll
    for (std::size_t n = 0; n < D / 8; ++n)
#pragma unroll
      for (std::size_t kk = 0; kk < Bq / 16; ++kk) {
        warp_mma<pld, 1, ld, 1>(l.dv[n], lane, &s.p[w][0][16 * kk], &s.dout[16 * kk][8 * n]);
        warp_mma<pld, 1, ld, 1>(l.dk[n], lane, &s.ds[w][0][16 * kk], &s.q[16 * kk][8 * n]);
      }
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T, std::size_t W = 0>
struct mma_attention_backward_kernels {
  attention_delta_kernel<B, S, H, D, T> delta;
  mma_attention_backward_dq_kernel<B, S, H, KVH, D, T, W> dq;
  mma_attention_backward_dkv_kernel<B, S, H, KVH, D, T, W> dkv;
};

/// out (B, S, H·D) = causal attention of qkv on tensor cores, with a sliding window of W keys when
/// W > 0; lse (B, H, S) kept (f32).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
mma_attention_forward_kernel<B, S, H, KVH, D, T, W> make_mma_attention_forward(T* out, float* lse, const T* qkv) {
  return {out, lse, qkv};
}

/// dqkv += the attention gradient from dout and the forward's qkv, out and lse (the same W);
/// `delta` (B, H, S) f32 is the kernels' work buffer. Run delta, then dq and dkv (in either order).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
mma_attention_backward_kernels<B, S, H, KVH, D, T, W> make_mma_attention_backward(T* dqkv, float* delta,
                                                                                  const T* dout, const T* qkv,
                                                                                  const T* out, const float* lse) {
  return {{delta, dout, out}, {dqkv, dout, qkv, lse, delta}, {dqkv, dout, qkv, lse, delta}};
}

}  // namespace weft::cuda::kernels
