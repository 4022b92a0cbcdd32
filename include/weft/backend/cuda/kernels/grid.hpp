#pragma once
// ---- the kernel execution model: phases over a grid, run on a device or emulated on the host ----
// weft's own kernels are written once, as `WEFT_HOST_DEVICE` code, and run two ways:
//   * on a GPU, by the thin `__global__` in launch.cuh: every thread of a block runs phase 0,
//     then __syncthreads(), then phase 1, ... (the phases run back to back in one launch);
//   * on the host, by `emulate_launch` below: for each block, every thread runs phase k before
//     any thread runs phase k + 1 — exactly the ordering a barrier guarantees, and no more.
// So CI, with no GPU, runs the kernels' source against the host ops.
//
// A kernel is a plain struct of pointers and integers (nvcc rejects `__global__` template
// arguments holding a class with an array member, so no names and no shapes in it) with
//   struct shared { ... };   // the block's shared memory, one object per block (uninitialised:
//                            // the emulator fills it with 0xFF bytes, NaN for floats)
//   struct locals { ... };   // a thread's registers that live across barriers, value-initialised
//   static constexpr int phases = P;
//   launch_config config() const;                                  // grid and block
//   void phase(int p, const block_context&, shared&, locals&) const;  // WEFT_HOST_DEVICE
// A phase never returns early from the kernel as a whole: idle threads just skip work, because
// every thread must reach every barrier.
//
// Warp barriers. A kernel may also declare
//   static constexpr bool warp_barrier_after(int p);   // true: only the warp synchronises
// for phases whose successors read only what their own warp wrote (a warp's shared tile, the
// lanes of one quad exchanging partial sums). The device then runs __syncwarp() after phase p
// instead of __syncthreads(). The emulator keeps that weaker promise and no more: a run of phases
// joined by warp barriers is executed one warp at a time (warp 0 through the whole run, then warp
// 1, ...; reversed under emulation_order::reverse), so a phase that reads another warp's writes
// across a warp barrier sees them missing in one of the two orders.
//
// Block reductions are two-phase primitives (block_reduce_put in phase k, block_reduce_get in
// phase k + 1). On the device `put` reduces a warp with __shfl_xor_sync and lane 0 stores the
// warp's value; `get` combines the warps in order. On the host `put` stores every thread's value
// and `get` replays the same xor butterfly over each warp's 32 values, then the same in-order
// combination — given the same per-thread values, the host's reduction is bit-identical to the
// device's, not merely close (the per-thread arithmetic before it may still differ by FMA
// contraction and the math library's last ulp).
#include "weft/config.hpp"  // WEFT_HOST_DEVICE

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft::cuda::kernels {

// ---- indices ----

/// A grid or block extent, or an index into one (CUDA's dim3 / uint3 without CUDA headers).
struct dim {
  unsigned x = 1, y = 1, z = 1;
  /// x * y * z.
  WEFT_HOST_DEVICE constexpr unsigned count() const noexcept { return x * y * z; }
};

/// Threads in a warp; block sizes are multiples of it (the reductions assume full warps).
inline constexpr unsigned warp_size = 32;

/// Grid and block of one launch.
struct launch_config {
  dim grid;
  dim block;
};

/// What a thread knows about where it runs: CUDA's gridDim, blockDim, blockIdx, threadIdx.
/// On the device `current()` reads the builtins; the emulator fills it in.
struct block_context {
  dim grid_dim;
  dim block_dim;
  dim block_idx;
  dim thread_idx;

  /// Linear thread index inside the block (x fastest).
  WEFT_HOST_DEVICE constexpr unsigned thread_rank() const noexcept {
    return thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z);
  }
  /// Linear block index inside the grid (x fastest).
  WEFT_HOST_DEVICE constexpr unsigned block_rank() const noexcept {
    return block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
  }
  /// Threads per block.
  WEFT_HOST_DEVICE constexpr unsigned threads() const noexcept { return block_dim.count(); }
  /// Blocks in the grid.
  WEFT_HOST_DEVICE constexpr unsigned blocks() const noexcept { return grid_dim.count(); }
  WEFT_HOST_DEVICE constexpr unsigned lane() const noexcept { return thread_rank() % warp_size; }
  WEFT_HOST_DEVICE constexpr unsigned warp() const noexcept { return thread_rank() / warp_size; }
  WEFT_HOST_DEVICE constexpr unsigned warps() const noexcept { return threads() / warp_size; }
  /// Global linear thread index and count, for grid-stride loops.
  WEFT_HOST_DEVICE constexpr std::size_t global_rank() const noexcept {
    return std::size_t{block_rank()} * threads() + thread_rank();
  }
  WEFT_HOST_DEVICE constexpr std::size_t global_threads() const noexcept {
    return std::size_t{blocks()} * threads();
  }

#if defined(__CUDACC__)
  /// The calling device thread's context.
  __device__ static block_context current() noexcept {
    return {{gridDim.x, gridDim.y, gridDim.z},
            {blockDim.x, blockDim.y, blockDim.z},
            {blockIdx.x, blockIdx.y, blockIdx.z},
            {threadIdx.x, threadIdx.y, threadIdx.z}};
  }
#endif
};

/// Whether the barrier after phase p of K synchronises only each warp (K::warp_barrier_after).
template <class K>
WEFT_HOST_DEVICE constexpr bool warp_barrier_after(int p) noexcept {
  if constexpr (requires { K::warp_barrier_after(0); }) return K::warp_barrier_after(p);
  else return false;
}

/// Satisfied by a kernel written as phases (see the top of this file).
template <class K>
concept phased_kernel =
    std::is_trivially_copyable_v<K> && std::is_trivially_default_constructible_v<typename K::shared> &&
    std::is_trivially_copyable_v<typename K::shared> && std::default_initializable<typename K::locals> &&
    requires(const K& k, const block_context& c, typename K::shared& s, typename K::locals& l) {
      { K::phases } -> std::convertible_to<int>;
      { k.config() } -> std::same_as<launch_config>;
      k.phase(0, c, s, l);
    };

// ---- the host emulator ----

/// The order in which the emulator runs the blocks of a grid and the threads of a phase. A
/// correct kernel gives the same result in either: a device promises no order inside a phase,
/// so a kernel whose result changes has a race (two threads of one phase touching one element)
/// that the barrier does not cover.
enum class emulation_order { forward, reverse };

/// `reverse` when the environment variable WEFT_EMULATION_ORDER is "reverse", else `forward`
/// (CTest runs every kernel test both ways).
inline emulation_order default_emulation_order() {
  static const emulation_order order = [] {
    const char* e = std::getenv("WEFT_EMULATION_ORDER");
    return e != nullptr && std::string_view(e) == "reverse" ? emulation_order::reverse : emulation_order::forward;
  }();
  return order;
}

/// Runs `k` on the host over `cfg`'s grid: blocks one after another; inside a block, phase p
/// for every thread before phase p + 1 for any (x fastest; all reversed under
/// emulation_order::reverse). Shared memory starts as 0xFF bytes (NaN for floats), so a read of
/// an unwritten slot shows in the results.
template <phased_kernel K>
void emulate_launch(launch_config cfg, const K& k, emulation_order order = default_emulation_order()) {
  using shared = typename K::shared;
  using locals = typename K::locals;
  const unsigned threads = cfg.block.count();
  std::vector<locals> loc(threads);
  auto sh = std::make_unique<shared>();  // may be tens of KiB: not on the stack
  block_context c{cfg.grid, cfg.block, {}, {}};
  const bool rev = order == emulation_order::reverse;
  // linear index -> (x, y, z), x fastest
  auto split = [](unsigned i, dim d) { return dim{i % d.x, (i / d.x) % d.y, i / (d.x * d.y)}; };
  const unsigned blocks = cfg.grid.count();
  const unsigned warps = (threads + warp_size - 1) / warp_size;
  for (unsigned bi = 0; bi < blocks; ++bi) {
    c.block_idx = split(rev ? blocks - 1 - bi : bi, cfg.grid);
    std::memset(static_cast<void*>(sh.get()), 0xFF, sizeof(shared));
    for (auto& l : loc) l = locals{};
    for (int p = 0; p < K::phases;) {
      int q = p;  // phases p..q are joined by warp barriers: run them warp by warp
      while (q + 1 < K::phases && warp_barrier_after<K>(q)) ++q;
      if (q == p) {
        for (unsigned ti = 0; ti < threads; ++ti) {
          c.thread_idx = split(rev ? threads - 1 - ti : ti, cfg.block);
          k.phase(p, c, *sh, loc[c.thread_rank()]);
        }
      } else {
        for (unsigned wi = 0; wi < warps; ++wi) {
          const unsigned w = rev ? warps - 1 - wi : wi;
          const unsigned lanes = std::min(warp_size, threads - w * warp_size);
          for (int r = p; r <= q; ++r)
            for (unsigned li = 0; li < lanes; ++li) {
              c.thread_idx = split(w * warp_size + (rev ? lanes - 1 - li : li), cfg.block);
              k.phase(r, c, *sh, loc[c.thread_rank()]);
            }
        }
      }
      p = q + 1;
    }
  }
}

/// Runs `k` on the host over its own `config()`.
template <phased_kernel K>
void emulate_launch(const K& k, emulation_order order = default_emulation_order()) {
  emulate_launch(k.config(), k, order);
}

// ---- reductions over a block ----

/// Combines by addition.
struct sum_op {
  template <class T>
  WEFT_HOST_DEVICE constexpr T operator()(T a, T b) const noexcept {
    return a + b;
  }
};
/// Combines by maximum (a NaN operand on the right is dropped, as fmaxf does).
struct max_op {
  template <class T>
  WEFT_HOST_DEVICE constexpr T operator()(T a, T b) const noexcept {
    return b > a ? b : a;
  }
};

/// Shared memory of one block reduction of `T` over up to `Threads` threads. The device uses
/// one slot per warp, the emulator one per thread.
template <unsigned Threads, class T>
struct block_reduce_storage {
  static constexpr bool whole_warps = Threads % warp_size == 0 && Threads > 0 && Threads <= 1024;
  static_assert(whole_warps,
                "weft::cuda::kernels::block_reduce_storage: the block size is not a multiple of 32 up to 1024. "
                "Round the block size up to whole warps.");
  T slot[Threads];
};

/// First half of a block reduction (every thread calls it in the same phase): hands in `v`.
template <unsigned Threads, class T, class Op>
WEFT_HOST_DEVICE void block_reduce_put(const block_context& c, block_reduce_storage<Threads, T>& s, T v, Op op) {
#if defined(__CUDA_ARCH__)
  for (unsigned o = warp_size / 2; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (c.lane() == 0) s.slot[c.warp()] = v;
#else
  (void)op;
  s.slot[c.thread_rank()] = v;
#endif
}

/// Second half (every thread, in a later phase): the reduction of every thread's value. The
/// order is fixed — an xor butterfly inside each warp, then warps 0, 1, ... — so the result is
/// deterministic and the same on host and device.
template <unsigned Threads, class T, class Op>
WEFT_HOST_DEVICE T block_reduce_get(const block_context& c, const block_reduce_storage<Threads, T>& s, Op op) {
  const unsigned warps = c.warps();
#if defined(__CUDA_ARCH__)
  T r = s.slot[0];
  for (unsigned w = 1; w < warps; ++w) r = op(r, s.slot[w]);
  return r;
#else
  T r{};
  for (unsigned w = 0; w < warps; ++w) {
    T a[warp_size], b[warp_size];  // the 32 lanes of warp w
    for (unsigned l = 0; l < warp_size; ++l) a[l] = s.slot[w * warp_size + l];
    for (unsigned o = warp_size / 2; o > 0; o /= 2) {
      for (unsigned l = 0; l < warp_size; ++l) b[l] = op(a[l], a[l ^ o]);  // what __shfl_xor_sync does
      for (unsigned l = 0; l < warp_size; ++l) a[l] = b[l];
    }
    r = w == 0 ? a[0] : op(r, a[0]);
  }
  return r;
#endif
}

// ---- vector loads and stores ----

/// W elements of T moved as one aligned access (16 bytes at most: one LDG.128).
template <class T, std::size_t W>
struct alignas(sizeof(T) * W) vec {
  T v[W];
};

/// Loads W elements at p (p aligned to sizeof(T) * W).
template <std::size_t W, class T>
WEFT_HOST_DEVICE vec<T, W> load_vec(const T* p) noexcept {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const vec<T, W>*>(p);
#else
  vec<T, W> r;
  std::memcpy(static_cast<void*>(&r), p, sizeof r);
  return r;
#endif
}

/// Stores W elements at p (p aligned to sizeof(T) * W).
template <std::size_t W, class T>
WEFT_HOST_DEVICE void store_vec(T* p, const vec<T, W>& x) noexcept {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<vec<T, W>*>(p) = x;
#else
  std::memcpy(static_cast<void*>(p), &x, sizeof x);
#endif
}

/// Whether p is aligned for a vec<T, W> access.
template <std::size_t W, class T>
inline bool vec_aligned(const T* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * W) == 0;
}

// ---- math that has a host and a device spelling ----

namespace math {
WEFT_HOST_DEVICE float exp(float x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  return std::exp(x);
#endif
}
WEFT_HOST_DEVICE float log(float x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#else
  return std::log(x);
#endif
}
WEFT_HOST_DEVICE float tanh(float x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#else
  return std::tanh(x);
#endif
}
WEFT_HOST_DEVICE float erf(float x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::erff(x);
#else
  return std::erf(x);
#endif
}
WEFT_HOST_DEVICE float sqrt(float x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::sqrtf(x);
#else
  return std::sqrt(x);
#endif
}
WEFT_HOST_DEVICE double sqrt(double x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
WEFT_HOST_DEVICE double pow(double x, double y) noexcept {
#if defined(__CUDA_ARCH__)
  return ::pow(x, y);
#else
  return std::pow(x, y);
#endif
}
WEFT_HOST_DEVICE double cos(double x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::cos(x);
#else
  return std::cos(x);
#endif
}
WEFT_HOST_DEVICE double sin(double x) noexcept {
#if defined(__CUDA_ARCH__)
  return ::sin(x);
#else
  return std::sin(x);
#endif
}
}  // namespace math

// ---- element conversions: kernels load T, compute in float, store T ----

/// x widened to float (exact for bf16, f16 and float).
template <class T>
WEFT_HOST_DEVICE constexpr float to_f32(T x) noexcept {
  return static_cast<float>(x);
}
/// x rounded to T (to nearest, ties to even).
template <class T>
WEFT_HOST_DEVICE constexpr T from_f32(float x) noexcept {
  return static_cast<T>(x);
}

/// ceil(a / b).
WEFT_HOST_DEVICE constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return (a + b - 1) / b; }

}  // namespace weft::cuda::kernels
