#pragma once
// ---- sum of squares: the squared global gradient norm, deterministic, in double ----
// Two passes and no atomics, so the result depends only on n (not on timing):
//   1. `partial`: blocks(n) blocks; each thread sums x² over a grid-stride run in double, the
//      block reduces its threads (xor butterfly, then warps in order) into partial[block];
//   2. `total`: one block sums partial[0 .. blocks) the same way into *out (or adds onto it,
//      so that several runs of a buffer add up to one norm on the device).
// The order differs from the host op's eight lanes; both are within n ulps of double.
// The same two passes with `square` off and a scale of 1/n give the mean loss.
#include "weft/backend/cuda/kernels/grid.hpp"  // block_context, block_reduce_*, ceil_div

#include <cstddef>

namespace weft::cuda::kernels {

/// Blocks of the first pass for n elements (and doubles of scratch it needs).
inline constexpr unsigned sum_squares_threads = 256;
inline std::size_t sum_squares_blocks(std::size_t n) noexcept {
  const std::size_t b = ceil_div(n, sum_squares_threads * 8);
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

/// Pass 1: partial(blocks) = per-block sums of x(n)² (or of x(n) when square is false).
template <class T>
struct sum_squares_partial_kernel {
  const T* x;
  std::size_t n;
  double* partial;  // (blocks)
  bool square = true;
  struct shared {
    block_reduce_storage<sum_squares_threads, double> r;
  };
  struct locals {};
  static constexpr int phases = 2;
  launch_config config() const {
    return {{static_cast<unsigned>(sum_squares_blocks(n)), 1, 1}, {sum_squares_threads, 1, 1}};
  }
  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals&) const {
    if (p == 0) {
      double acc = 0;
      for (std::size_t i = c.global_rank(); i < n; i += c.global_threads()) {
        const double v = static_cast<double>(to_f32(x[i]));
        acc += square ? v * v : v;
      }
      block_reduce_put(c, s.r, acc, sum_op{});
    } else {
      const double r = block_reduce_get(c, s.r, sum_op{});
      if (c.thread_rank() == 0) partial[c.block_rank()] = r;
    }
  }
};

/// Pass 2: *out = (accumulate ? *out : 0) + scale * sum of partial(count).
struct sum_squares_total_kernel {
  const double* partial;
  std::size_t count;
  double* out;
  bool accumulate;
  double scale = 1.0;
  struct shared {
    block_reduce_storage<sum_squares_threads, double> r;
  };
  struct locals {};
  static constexpr int phases = 2;
  launch_config config() const { return {{1, 1, 1}, {sum_squares_threads, 1, 1}}; }
  WEFT_HOST_DEVICE void phase(int p, const block_context& c, shared& s, locals&) const {
    if (p == 0) {
      double acc = 0;
      for (std::size_t i = c.thread_rank(); i < count; i += c.threads()) acc += partial[i];
      block_reduce_put(c, s.r, acc, sum_op{});
    } else {
      const double r = block_reduce_get(c, s.r, sum_op{});
      if (c.thread_rank() == 0) *out = (accumulate ? *out : 0.0) + scale * r;
    }
  }
};

/// The two passes over x(n): scratch holds sum_squares_blocks(n) doubles.
template <class T>
struct sum_squares_kernels {
  sum_squares_partial_kernel<T> partial;
  sum_squares_total_kernel total;
};
template <class T>
sum_squares_kernels<T> make_sum_squares(double* out, const T* x, std::size_t n, double* scratch,
                                        bool accumulate = false) {
  return {{x, n, scratch, true}, {scratch, sum_squares_blocks(n), out, accumulate, 1.0}};
}

/// *out = (losses(0) + ... + losses(n-1)) / n in double (ops::mean_loss on the device; the
/// order is the two passes', not the host's running sum). scratch: sum_squares_blocks(n) doubles.
template <class T>
sum_squares_kernels<T> make_mean_loss(double* out, const T* losses, std::size_t n, double* scratch) {
  return {{losses, n, scratch, false}, {scratch, sum_squares_blocks(n), out, false, 1.0 / static_cast<double>(n)}};
}

}  // namespace weft::cuda::kernels
