#pragma once
// ---- token + position embedding forward, deterministic backward ----
// Forward: out(B*S, C) = wte[idx] + wpe[s], fused (wpe may be null: token embedding only, as
// LLaMA); vectors of W along C (W from C at compile time).
// Backward, token table: no atomics and no sort. Thread (column vector j, bucket k) owns the
// columns j of every vocabulary row v with v % Buckets == k, and walks the tokens n = 0..N-1 in
// order adding dout[n] into dtable[idx[n]] when idx[n] falls in its bucket. Each element of
// dtable has one owner and one order of additions (the host op's), so the result is
// deterministic and, in f32, bit-identical to the host op's. Every thread reads all N indices
// (a warp shares its bucket, so the read is one broadcast); Buckets sets the parallelism,
// (C / W) * Buckets threads.
// Backward, position table: thread per (s, column vector) sums the B rows in order.
#include "weft/backend/cuda/kernels/grid.hpp"    // load_vec, store_vec, to_f32, from_f32
#include "weft/backend/cuda/kernels/tiling.hpp"  // vector_width_v, ceil_div

#include <cstddef>
#include <cstdint>

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

/// dtable(V, C) += scatter of dout(N, C) by idx(N), owner-computes (see the top of this file).
template <std::size_t N, std::size_t V, std::size_t C, class T, unsigned Buckets = 32>
struct embedding_backward_kernel {
  static constexpr std::size_t W = vector_width_v<T, C>;
  static constexpr std::size_t columns = C / W;  // column vectors
  static constexpr unsigned threads = columns < 128 ? static_cast<unsigned>(ceil_div(columns, 32) * 32) : 128;
  T* dtable;
  const T* dout;
  const std::int32_t* idx;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const {
    return {{static_cast<unsigned>(ceil_div(columns, threads)), Buckets, 1}, {threads, 1, 1}};
  }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    const std::size_t j = std::size_t{c.block_idx.x} * c.block_dim.x + c.thread_idx.x;
    if (j >= columns) return;
    const unsigned bucket = c.block_idx.y;
    for (std::size_t n = 0; n < N; ++n) {
      const auto v = static_cast<std::size_t>(idx[n]);
      if (v % Buckets != bucket) continue;
      T* d = dtable + v * C + j * W;
      const auto g = load_vec<W>(dout + n * C + j * W);
      auto x = load_vec<W>(d);
      for (std::size_t k = 0; k < W; ++k) x.v[k] = from_f32<T>(to_f32(x.v[k]) + to_f32(g.v[k]));
      store_vec<W>(d, x);
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
/// Token table gradient, deterministic.
template <std::size_t N, std::size_t V, std::size_t C, class T>
embedding_backward_kernel<N, V, C, T> make_embedding_backward(T* dtable, const T* dout, const std::int32_t* idx) {
  return {dtable, dout, idx};
}
/// Position table gradient.
template <std::size_t B, std::size_t S, std::size_t C, class T>
positional_backward_kernel<B, S, C, T> make_positional_backward(T* dwpe, const T* dout) {
  return {dwpe, dout};
}

}  // namespace weft::cuda::kernels
