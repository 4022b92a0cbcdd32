#pragma once
// ---- compile-time tilings of the kernels, written with weft's layouts ----
// The dimensions in an op's type choose the vector width, the block size and the number of
// iterations per thread; the map from (vector element, thread, iteration) to a column is a
// weft `layout`, built with the layout algebra (zipped_divide: a row cut into vectors, the
// vectors cut among the threads) and checked against its closed form. Kernels evaluate it
// with natural coordinates, `tiling::layout_type{}(e, t, it)`, which is constant arithmetic
// on the device. So the layout in a type is what shapes the generated kernel, as CuTe's
// layouts shape CUTLASS's.
#include "weft/backend/cuda/kernels/grid.hpp"  // warp_size, ceil_div
#include "weft/core/layout.hpp"                 // layout, mode
#include "weft/core/layout_algebra.hpp"         // zipped_divide_t, tiler

#include <cstddef>
#include <type_traits>

namespace weft::cuda::kernels {

/// Elements per vector access for a row of `Cols` elements of T: the widest power of two up to
/// 16 bytes that divides Cols (so every vector stays inside its row).
template <class T, std::size_t Cols>
inline constexpr std::size_t vector_width_v = [] {
  std::size_t w = 16 / sizeof(T);
  while (w > 1 && Cols % w != 0) w /= 2;
  return w;
}();

/// Threads per block for one row of `Cols` elements read W at a time: one vector per thread,
/// rounded up to whole warps, at least one warp and at most `MaxThreads`.
template <std::size_t Cols, std::size_t W, std::size_t MaxThreads = 1024>
inline constexpr unsigned row_threads_v = [] {
  std::size_t t = ceil_div(ceil_div(Cols, W), warp_size) * warp_size;
  if (t > MaxThreads) t = MaxThreads;
  return static_cast<unsigned>(t);
}();

/// A row of `Cols` elements covered by `Threads` threads reading vectors of W elements,
/// `iters` vectors per thread. Columns at or past Cols (the last iteration's tail) are masked.
template <std::size_t Cols, std::size_t Threads, std::size_t W>
struct row_tiling {
  static constexpr bool width_divides_row = Cols % W == 0;
  static_assert(width_divides_row,
                "weft::cuda::kernels::row_tiling: the vector width does not divide the row. Use a width that divides "
                "the row length (vector_width_v picks one).");
  static constexpr std::size_t cols = Cols;
  static constexpr std::size_t threads = Threads;
  static constexpr std::size_t width = W;
  static constexpr std::size_t chunk = W * Threads;             // columns one sweep of the block covers
  static constexpr std::size_t iters = ceil_div(Cols, chunk);  // sweeps per row
  static constexpr std::size_t padded = iters * chunk;          // the row rounded up to whole sweeps
  static constexpr std::size_t per_thread = iters * W;          // elements a thread holds

  // (col) over the padded row, cut into vectors: ((vector element), (vector index)) ...
  using by_vector = zipped_divide_t<layout<mode<padded, 1>>, tiler<W>>;
  // ... and the vector index cut among the threads: ((thread), (iteration)).
  using by_thread = zipped_divide_t<layout<typename by_vector::template mode_at<1>>, tiler<Threads>>;
  /// (vector element, thread, iteration) -> column.
  using layout_type = layout<typename by_vector::template mode_at<0>, typename by_thread::template mode_at<0>,
                             typename by_thread::template mode_at<1>>;
  // The algebra gives the closed form a hand-written kernel would use.
  static_assert((W == 1 || layout_type{}(std::size_t{1}, std::size_t{0}, std::size_t{0}) == 1) &&
                    (Threads == 1 || layout_type{}(std::size_t{0}, std::size_t{1}, std::size_t{0}) == W) &&
                    (iters == 1 || layout_type{}(std::size_t{0}, std::size_t{0}, std::size_t{1}) == chunk),
                "weft::cuda::kernels::row_tiling: the layout algebra disagrees with the closed form.");

  /// First column of thread t's vector in sweep it.
  WEFT_HOST_DEVICE static constexpr std::size_t column(std::size_t t, std::size_t it) noexcept {
    return layout_type{}(std::size_t{0}, t, it);
  }
};

/// The usual row tiling of T elements: vector width and block size from the row length.
template <class T, std::size_t Cols, std::size_t MaxThreads = 1024>
using row_tiling_for =
    row_tiling<Cols, row_threads_v<Cols, vector_width_v<T, Cols>, MaxThreads>, vector_width_v<T, Cols>>;

/// Grid-stride tiling of a flat buffer of N elements of T (N a compile-time size): vectors of W
/// elements, `Threads` per block, `blocks` blocks (capped; each thread then takes several).
template <class T, std::size_t N, unsigned Threads = 256, std::size_t MaxBlocks = 4096>
struct flat_tiling {
  static constexpr std::size_t width = vector_width_v<T, N>;
  static constexpr std::size_t vectors = N / width;
  static constexpr unsigned threads = Threads;
  static constexpr unsigned blocks = static_cast<unsigned>(
      ceil_div(vectors, Threads) < MaxBlocks ? (ceil_div(vectors, Threads) > 0 ? ceil_div(vectors, Threads) : 1)
                                             : MaxBlocks);
  /// (vector element, vector index) -> element: vectors of W contiguous elements.
  using layout_type = zipped_divide_t<layout<mode<N, 1>>, tiler<width>>;
  WEFT_HOST_DEVICE static constexpr std::size_t element(std::size_t vector_index) noexcept {
    return layout_type{}(std::size_t{0}, vector_index);
  }
  static constexpr launch_config config() noexcept { return {{blocks, 1, 1}, {threads, 1, 1}}; }
};

/// Launch shape for a run-time count n handled `per_thread` elements at a time.
inline launch_config flat_config(std::size_t n, unsigned threads = 256, std::size_t max_blocks = 4096) noexcept {
  std::size_t b = ceil_div(n, threads);
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return {{static_cast<unsigned>(b), 1, 1}, {threads, 1, 1}};
}

}  // namespace weft::cuda::kernels
