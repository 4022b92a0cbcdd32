#pragma once
// ---- token + position embedding forward, deterministic backward ----
// Forward: out(B*S, C) = wte[idx] + wpe[s], fused (wpe may be null: token embedding only, as
// LLaMA); vectors of W along C (W from C at compile time).
// Backward, token table: deterministic, no atomics, O(N log^2 N) index work and one pass over
// dout. (The earlier owner-computes kernel had each of (C / W) * 32 threads read all N indices
// and own the rows v % 32 == k: 32 threads per column vector, 1.4% of the copy rate.)
//   1. sort: keys idx[n] * N + n (unique, so ordered by (id, n) with no ties): a block sorts
//      each tile of 1024 keys in shared memory by log2(1024) merge phases, then
//      log2(N / 1024) global merge passes (one launch each; GPT-2's N = 4096 needs two) merge the
//      sorted runs in pairs. Each key finds its place by a binary search in the partner run.
//   2. pieces: the sorted positions are cut into chunks of 32; a piece is one id's run inside
//      one chunk. Thread (piece start, column vector) sums the piece's dout rows in increasing n.
//      A run inside one chunk (nearly all of them: a token repeats a few times in a batch) adds
//      into dtable directly, as the host op does: ((d + g_n0) + g_n1) + ...; the piece that opens
//      a chunk while continuing a run writes its sum to `heads` (scratch).
//   3. combine: a run crossing chunks (a frequent token: ',' or ' the' may be 3% of a batch)
//      is finished by the thread of its first chunk: ((d + its first piece, in order) +
//      heads[q + 1]) + heads[q + 2] ... — so no thread walks more than 32 rows plus N / 32
//      partials, however skewed the tokens.
// Every element of dtable is written by one thread in one fixed order that depends only on idx,
// so the result is deterministic and the emulator's equals the device's. In f32 it is the host
// op's chain bit for bit for every id whose run stays inside one chunk of 32 sorted positions;
// a run crossing a chunk boundary is summed piecewise as in 3 (within f32 rounding of the host
// op). bf16 accumulates in f32 and rounds once (the host op rounds to bf16 after every add).
// Cost at GPT-2's shapes (N = 4096, C = 768, bf16): the sort touches 16 KiB of keys; the sums
// read dout once (6.3 MB) and read and write each touched row of dtable once, with 96 column
// threads per position and up to 8 row loads in flight per thread.
// Backward, position table: thread per (s, column vector) sums the B rows in order.
#include "weft/backend/cuda/kernels/grid.hpp"    // load_vec, store_vec, to_f32, from_f32
#include "weft/backend/cuda/kernels/tiling.hpp"  // vector_width_v, ceil_div

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::cuda::kernels {

/// out(B*S, C) = wte(V, C)[idx] (+ wpe(S_max >= S, C)[s] when wpe is not null).
template <std::size_t B, std::size_t S, std::size_t V, std::size_t C, class T>
struct embedding_forward_kernel {
  static constexpr std::size_t W = vector_width_v<T, C>;
  static constexpr std::size_t vectors = B * S * C / W;
  T* out;
  const std::int32_t* idx;  // (B*S)
  const T* wte;
  const T* wpe;  // null: no position embedding
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(vectors); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t v = c.global_rank(); v < vectors; v += c.global_threads()) {
      const std::size_t e = v * W, n = e / C, col = e % C;
      auto x = load_vec<W>(wte + std::size_t(idx[n]) * C + col);
      if (wpe != nullptr) {
        const auto p = load_vec<W>(wpe + (n % S) * C + col);
        for (std::size_t k = 0; k < W; ++k) x.v[k] = from_f32<T>(to_f32(x.v[k]) + to_f32(p.v[k]));
      }
      store_vec<W>(out + e, x);
    }
  }
};

// ---- token table backward: sort the tokens by id, then sum each id's rows in order ----

namespace detail {

/// The sort keys of the token table backward: key = idx[n] * N + n, unique, ordered by (id, n);
/// 32 bits when V * N fits, else 64. Sizes of the sort and of the pieces.
template <std::size_t N, std::size_t V>
struct embedding_keys {
  using key_type = std::conditional_t<(V * N - 1 <= 0xFFFFFFFFull), std::uint32_t, std::uint64_t>;
  /// Keys one block sorts in shared memory (a power of two).
  static constexpr std::size_t tile = [] {
    std::size_t t = 1;
    while (t < N && t < 1024) t *= 2;
    return t;
  }();
  static constexpr std::size_t tiles = ceil_div(N, tile);
  /// Global merge passes after the tile sort: runs of tile, 2 tile, ... until one run is N.
  static constexpr std::size_t merge_passes = [] {
    std::size_t m = 0;
    for (std::size_t run = tile; run < N; run *= 2) ++m;
    return m;
  }();
  /// Sorted positions per piece chunk: the longest in-order chain a thread walks.
  static constexpr std::size_t chunk = 32;
  static constexpr std::size_t chunks = ceil_div(N, chunk);
  /// Floats one key buffer takes in the scratch (a multiple of 4: 16-byte aligned).
  static constexpr std::size_t key_floats = ceil_div(N * sizeof(key_type), 16) * 4;

  WEFT_HOST_DEVICE static constexpr std::size_t id(key_type k) noexcept { return static_cast<std::size_t>(k / N); }
  WEFT_HOST_DEVICE static constexpr std::size_t position(key_type k) noexcept {
    return static_cast<std::size_t>(k % N);
  }
};

/// Where src[i] goes when the sorted runs of `len` keys of src(count) are merged in pairs: its
/// place in its own run plus the number of keys of the partner run below it (keys are unique,
/// so every key has one place and the merge is a permutation; no ties to break).
template <class K>
WEFT_HOST_DEVICE std::size_t merge_position(const K* src, std::size_t i, std::size_t len, std::size_t count) noexcept {
  const std::size_t run = i / len, own = run * len, partner = (run ^ 1) * len, base = (run & ~std::size_t{1}) * len;
  const std::size_t lo = partner < count ? partner : count;
  const std::size_t hi = partner + len < count ? partner + len : count;
  const K key = src[i];
  std::size_t first = lo, n = hi - lo;  // lower bound of key in src[lo, hi)
  while (n > 0) {
    const std::size_t half = n / 2;
    if (src[first + half] < key) {
      first += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return base + (i - own) + (first - lo);
}

/// acc(W) += dout rows of the sorted positions [r, e) in that order, column vector j. Up to U
/// rows are loaded before any is added (the loads overlap; the additions keep their order).
template <std::size_t N, std::size_t V, std::size_t C, std::size_t W, class T>
WEFT_HOST_DEVICE void embedding_sum_rows(float (&acc)[W], const typename embedding_keys<N, V>::key_type* sorted,
                                         const T* dout, std::size_t r, std::size_t e, std::size_t j) noexcept {
  using keys = embedding_keys<N, V>;
  constexpr std::size_t U = 8;
  for (std::size_t b = r; b < e; b += U) {
    vec<T, W> g[U];
    for (std::size_t u = 0; u < U; ++u)
      if (b + u < e) g[u] = load_vec<W>(dout + keys::position(sorted[b + u]) * C + j * W);
    for (std::size_t u = 0; u < U; ++u)
      if (b + u < e)
        for (std::size_t k = 0; k < W; ++k) acc[k] += to_f32(g[u].v[k]);
  }
}

/// Block shape of the pieces and combine kernels: x along the C / W column vectors (whole
/// warps, so a warp shares one sorted position and branches as one), y along sorted positions.
template <std::size_t Columns>
struct embedding_block {
  static constexpr unsigned x = Columns < 128 ? static_cast<unsigned>(ceil_div(Columns, warp_size) * warp_size) : 128;
  static constexpr unsigned y = 256 / x > 0 ? 256 / x : 1;
  static constexpr unsigned grid_x = static_cast<unsigned>(ceil_div(Columns, x));
  static launch_config config(std::size_t rows) noexcept {
    std::size_t gy = ceil_div(rows, y);
    if (gy > 65535) gy = 65535;  // the kernels stride over the rest
    return {{grid_x, static_cast<unsigned>(gy > 0 ? gy : 1), 1}, {x, y, 1}};
  }
};

}  // namespace detail

/// Sort, step 1: keys(N) = idx[n] * N + n, each tile of keys sorted in shared memory by
/// log2(tile) merge phases (merge_position between two buffers).
template <std::size_t N, std::size_t V>
struct embedding_sort_kernel {
  using keys = detail::embedding_keys<N, V>;
  using key_type = typename keys::key_type;
  static constexpr std::size_t tile = keys::tile;
  static constexpr unsigned threads = tile < 256 ? (tile < warp_size ? warp_size : static_cast<unsigned>(tile)) : 256;
  static constexpr std::size_t per_thread = ceil_div(tile, threads);
  static constexpr int levels = [] {
    int l = 0;
    for (std::size_t t = 1; t < tile; t *= 2) ++l;
    return l;
  }();
  key_type* out;  // (N): sorted within each tile
  const std::int32_t* idx;
  struct shared {
    key_type buf[2][tile];  // ping-pong: level l reads buf[(l - 1) % 2], writes buf[l % 2]
  };
  struct locals {};
  static constexpr int phases = levels + 2;  // load, the merge levels, store
  launch_config config() const { return {{static_cast<unsigned>(keys::tiles), 1, 1}, {threads, 1, 1}}; }
  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals&) const {
    const std::size_t base = std::size_t{c.block_rank()} * tile;
    const std::size_t count = N - base < tile ? N - base : tile;
    for (std::size_t q = 0; q < per_thread; ++q) {
      const std::size_t i = c.thread_rank() + q * threads;
      if (i >= count) continue;
      if (p == 0) {
        s.buf[0][i] = static_cast<key_type>(idx[base + i]) * static_cast<key_type>(N) + static_cast<key_type>(base + i);
      } else if (p <= levels) {
        const key_type* src = s.buf[(p - 1) % 2];
        s.buf[p % 2][detail::merge_position(src, i, std::size_t{1} << (p - 1), count)] = src[i];
      } else {
        out[base + i] = s.buf[levels % 2][i];
      }
    }
  }
};

/// Sort, step 2 (repeated): merges the sorted runs of `len` keys of src(N) in pairs into dst.
template <std::size_t N, std::size_t V>
struct embedding_merge_kernel {
  using key_type = typename detail::embedding_keys<N, V>::key_type;
  static constexpr unsigned threads = 256;
  key_type* dst;
  const key_type* src;
  std::size_t len;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(N, threads); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t i = c.global_rank(); i < N; i += c.global_threads())
      dst[detail::merge_position(src, i, len, N)] = src[i];
  }
};

/// Sums, step 1: thread (sorted position r, column vector j) where r starts a piece — a run of
/// one id cut at the chunk boundaries r % chunk == 0. A piece that is its id's whole run adds
/// straight into dtable (((d + g_n0) + g_n1) + ..., the host op's chain); a piece that starts a
/// run continuing past its chunk is left to the combine kernel; a piece that continues a run
/// from the chunk before (it starts its chunk) writes its sum, ((0 + g) + g) ..., to heads.
template <std::size_t N, std::size_t V, std::size_t C, class T>
struct embedding_pieces_kernel {
  using keys = detail::embedding_keys<N, V>;
  using key_type = typename keys::key_type;
  static constexpr std::size_t W = vector_width_v<T, C>;
  static constexpr std::size_t columns = C / W;
  using block = detail::embedding_block<columns>;
  static constexpr unsigned threads = block::x * block::y;
  T* dtable;
  float* heads;  // (chunks, C): the sum of the piece that opens each chunk, when it continues a run
  const key_type* sorted;
  const T* dout;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return block::config(N); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    const std::size_t j = std::size_t{c.block_idx.x} * c.block_dim.x + c.thread_idx.x;
    if (j >= columns) return;
    const std::size_t step = std::size_t{c.grid_dim.y} * c.block_dim.y;
    for (std::size_t r = std::size_t{c.block_idx.y} * c.block_dim.y + c.thread_idx.y; r < N; r += step) {
      const std::size_t v = keys::id(sorted[r]);
      const bool run_start = r == 0 || keys::id(sorted[r - 1]) != v;
      if (!run_start && r % keys::chunk != 0) continue;  // inside a piece
      const std::size_t end = (r / keys::chunk + 1) * keys::chunk < N ? (r / keys::chunk + 1) * keys::chunk : N;
      std::size_t e = r + 1;
      while (e < end && keys::id(sorted[e]) == v) ++e;
      const bool continues = e == end && end < N && keys::id(sorted[end]) == v;
      if (run_start && continues) continue;  // the combine kernel's
      float acc[W];
      T* d = dtable + v * C + j * W;
      if (run_start) {
        const auto x = load_vec<W>(d);
        for (std::size_t k = 0; k < W; ++k) acc[k] = to_f32(x.v[k]);
      } else {
        for (std::size_t k = 0; k < W; ++k) acc[k] = 0;
      }
      detail::embedding_sum_rows<N, V, C, W>(acc, sorted, dout, r, e, j);
      if (run_start) {
        vec<T, W> y;
        for (std::size_t k = 0; k < W; ++k) y.v[k] = from_f32<T>(acc[k]);
        store_vec<W>(d, y);
      } else {
        float* h = heads + (r / keys::chunk) * C + j * W;
        for (std::size_t k = 0; k < W; ++k) h[k] = acc[k];
      }
    }
  }
};

/// Sums, step 2: thread (chunk q, column vector j) where a run starts in chunk q and continues
/// past it: dtable[v] = ((d + its piece in q, in order) + heads[q + 1]) + heads[q + 2] ... in
/// chunk order, through the last chunk the run reaches.
template <std::size_t N, std::size_t V, std::size_t C, class T>
struct embedding_combine_kernel {
  using keys = detail::embedding_keys<N, V>;
  using key_type = typename keys::key_type;
  static constexpr std::size_t W = vector_width_v<T, C>;
  static constexpr std::size_t columns = C / W;
  using block = detail::embedding_block<columns>;
  static constexpr unsigned threads = block::x * block::y;
  T* dtable;
  const float* heads;  // (chunks, C)
  const key_type* sorted;
  const T* dout;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return block::config(keys::chunks); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    const std::size_t j = std::size_t{c.block_idx.x} * c.block_dim.x + c.thread_idx.x;
    if (j >= columns) return;
    const std::size_t step = std::size_t{c.grid_dim.y} * c.block_dim.y;
    for (std::size_t q = std::size_t{c.block_idx.y} * c.block_dim.y + c.thread_idx.y; q < keys::chunks; q += step) {
      const std::size_t first = q * keys::chunk, end = first + keys::chunk;
      if (end >= N) continue;  // the last chunk: no run continues past it
      const std::size_t v = keys::id(sorted[end - 1]);
      if (keys::id(sorted[end]) != v) continue;  // the chunk's last run ends in it
      std::size_t r = end - 1;  // the run's first position in this chunk
      while (r > first && keys::id(sorted[r - 1]) == v) --r;
      if (r == first && first > 0 && keys::id(sorted[first - 1]) == v) continue;  // began in an earlier chunk
      T* d = dtable + v * C + j * W;
      float acc[W];
      const auto x = load_vec<W>(d);
      for (std::size_t k = 0; k < W; ++k) acc[k] = to_f32(x.v[k]);
      detail::embedding_sum_rows<N, V, C, W>(acc, sorted, dout, r, end, j);
      for (std::size_t m = q + 1;; ++m) {  // chunk m opens with a piece of this run
        const float* h = heads + m * C + j * W;
        for (std::size_t k = 0; k < W; ++k) acc[k] += h[k];
        const std::size_t next = (m + 1) * keys::chunk;
        if (next >= N || keys::id(sorted[next]) != v) break;
      }
      vec<T, W> y;
      for (std::size_t k = 0; k < W; ++k) y.v[k] = from_f32<T>(acc[k]);
      store_vec<W>(d, y);
    }
  }
};

/// Floats of scratch the token table backward needs: two key buffers and the heads.
template <std::size_t N, std::size_t V, std::size_t C>
inline constexpr std::size_t embedding_backward_scratch_v =
    2 * detail::embedding_keys<N, V>::key_floats + detail::embedding_keys<N, V>::chunks * C;

/// dtable(V, C) += scatter of dout(N, C) by idx(N): the kernels of one deterministic backward
/// (see the top of this file), in launch order: sort, passes merges, pieces, combine.
template <std::size_t N, std::size_t V, std::size_t C, class T>
struct embedding_backward_kernels {
  using keys = detail::embedding_keys<N, V>;
  using key_type = typename keys::key_type;
  embedding_sort_kernel<N, V> sort;
  key_type* a;  // the two key buffers of the merge passes
  key_type* b;
  embedding_pieces_kernel<N, V, C, T> pieces;
  embedding_combine_kernel<N, V, C, T> combine;

  /// Merge pass m (0 <= m < keys::merge_passes): runs of tile << m, read from a or b by parity.
  embedding_merge_kernel<N, V> merge(std::size_t m) const {
    const bool from_a = m % 2 == 0;
    return {from_a ? b : a, from_a ? a : b, keys::tile << m};
  }
  /// Calls f(kernel) on each kernel in launch order. When f returns a value (a cudaError_t),
  /// stops at the first that converts to true and returns it.
  template <class F>
  auto run(F&& f) const {
    using R = decltype(f(sort));
    if constexpr (std::is_void_v<R>) {
      f(sort);
      for (std::size_t m = 0; m < keys::merge_passes; ++m) f(merge(m));
      f(pieces);
      f(combine);
    } else {
      if (R e = f(sort)) return e;
      for (std::size_t m = 0; m < keys::merge_passes; ++m)
        if (R e = f(merge(m))) return e;
      if (R e = f(pieces)) return e;
      return f(combine);
    }
  }
};

/// dwpe(S, C) += sum over b of dout(B, S, C)[b].
template <std::size_t B, std::size_t S, std::size_t C, class T>
struct positional_backward_kernel {
  static constexpr std::size_t W = vector_width_v<T, C>;
  static constexpr std::size_t vectors = S * C / W;
  T* dwpe;
  const T* dout;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(vectors); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t v = c.global_rank(); v < vectors; v += c.global_threads()) {
      const std::size_t e = v * W;  // (s, col) flattened
      float acc[W] = {};
      for (std::size_t b = 0; b < B; ++b) {
        const auto g = load_vec<W>(dout + b * S * C + e);
        for (std::size_t k = 0; k < W; ++k) acc[k] += to_f32(g.v[k]);
      }
      auto x = load_vec<W>(dwpe + e);
      for (std::size_t k = 0; k < W; ++k) x.v[k] = from_f32<T>(to_f32(x.v[k]) + acc[k]);
      store_vec<W>(dwpe + e, x);
    }
  }
};

/// Token (+ position) embedding forward; wpe may be null.
template <std::size_t B, std::size_t S, std::size_t V, std::size_t C, class T>
embedding_forward_kernel<B, S, V, C, T> make_embedding_forward(T* out, const std::int32_t* idx, const T* wte,
                                                               const T* wpe) {
  return {out, idx, wte, wpe};
}
/// Token table gradient, deterministic; scratch: embedding_backward_scratch_v<N, V, C> floats.
template <std::size_t N, std::size_t V, std::size_t C, class T>
embedding_backward_kernels<N, V, C, T> make_embedding_backward(T* dtable, const T* dout, const std::int32_t* idx,
                                                               float* scratch) {
  using keys = detail::embedding_keys<N, V>;
  using key_type = typename keys::key_type;
  // scratch: key buffer a, key buffer b, heads(chunks, C). The tile sort writes a; merge pass m
  // reads a when m is even, so the sorted keys end in a after an even number of passes.
  auto* a = reinterpret_cast<key_type*>(scratch);
  auto* b = reinterpret_cast<key_type*>(scratch + keys::key_floats);
  float* heads = scratch + 2 * keys::key_floats;
  const key_type* sorted = keys::merge_passes % 2 == 0 ? a : b;
  return {{a, idx}, a, b, {dtable, heads, sorted, dout}, {dtable, heads, sorted, dout}};
}
/// Position table gradient.
template <std::size_t B, std::size_t S, std::size_t C, class T>
positional_backward_kernel<B, S, C, T> make_positional_backward(T* dwpe, const T* dout) {
  return {dwpe, dout};
}

}  // namespace weft::cuda::kernels
