#pragma once
// ---- memory kernels: cast, fill/zero, copy, accumulate, scale, clip ----
// Run-time counts (a rank's gradient block, a parameter shard), so these are grid-stride
// loops over scalars: no alignment is assumed of a region that starts anywhere in an arena.
// Each is one phase; the functor is the per-element body shared by host and device.
#include "weft/backend/cuda/kernels/grid.hpp"    // block_context, launch_config, to_f32, from_f32, math
#include "weft/backend/cuda/kernels/tiling.hpp"  // flat_config

#include <cstddef>

namespace weft::cuda::kernels {

/// One phase, f(i) for every i < n over a grid-stride loop. F is a trivially copyable functor
/// of pointers and numbers with a WEFT_HOST_DEVICE operator()(std::size_t).
template <class F>
struct elementwise_kernel {
  F f;
  std::size_t n;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(n); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t i = c.global_rank(); i < n; i += c.global_threads()) f(i);
  }
};

// ---- bodies ----

/// dst[i] = Dst(src[i]), through float when either side is a 16-bit type.
template <class Dst, class Src>
struct cast_body {
  Dst* dst;
  const Src* src;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const { dst[i] = static_cast<Dst>(src[i]); }
};

/// x[i] = value (any trivially copyable T: zero is fill with T{}).
template <class T>
struct fill_body {
  T* x;
  T value;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const { x[i] = value; }
};

/// dst[i] = src[i] (no overlap).
template <class T>
struct copy_body {
  T* dst;
  const T* src;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const { dst[i] = src[i]; }
};

/// y[i] += alpha * x[i], computed in float and rounded once.
template <class T>
struct accumulate_body {
  T* y;
  const T* x;
  float alpha;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const {
    y[i] = from_f32<T>(to_f32(y[i]) + alpha * to_f32(x[i]));
  }
};

/// x[i] *= factor.
template <class T>
struct scale_body {
  T* x;
  float factor;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const { x[i] = from_f32<T>(to_f32(x[i]) * factor); }
};

/// g[i] *= max_norm / norm when norm = sqrt(*sum_sq) > max_norm > 0 (ops::clip with the norm
/// read on the device, so the step need not wait for it). The factor is computed in double and
/// rounded to float once, as the host op rounds it to T.
template <class T>
struct clip_body {
  T* g;
  const double* sum_sq;  // (1) the squared global norm, from sum_squares
  double max_norm;
  WEFT_HOST_DEVICE void operator()(std::size_t i) const {
    const double norm = math::sqrt(*sum_sq);
    if (max_norm <= 0 || !(norm > max_norm)) return;
    const float s = static_cast<float>(max_norm / norm);
    g[i] = from_f32<T>(to_f32(g[i]) * s);
  }
};

// ---- factories: the kernel a launcher (or the emulator) runs ----

/// dst(n) = src(n) converted (f32 <-> bf16, ...).
template <class Dst, class Src>
elementwise_kernel<cast_body<Dst, Src>> make_cast(Dst* dst, const Src* src, std::size_t n) {
  return {{dst, src}, n};
}
/// x(n) = value.
template <class T>
elementwise_kernel<fill_body<T>> make_fill(T* x, std::size_t n, T value) {
  return {{x, value}, n};
}
/// x(n) = 0.
template <class T>
elementwise_kernel<fill_body<T>> make_zero(T* x, std::size_t n) {
  return {{x, T{}}, n};
}
/// dst(n) = src(n).
template <class T>
elementwise_kernel<copy_body<T>> make_copy(T* dst, const T* src, std::size_t n) {
  return {{dst, src}, n};
}
/// y(n) += alpha * x(n).
template <class T>
elementwise_kernel<accumulate_body<T>> make_accumulate(T* y, const T* x, std::size_t n, float alpha = 1.0f) {
  return {{y, x, alpha}, n};
}
/// x(n) *= factor.
template <class T>
elementwise_kernel<scale_body<T>> make_scale(T* x, std::size_t n, float factor) {
  return {{x, factor}, n};
}
/// g(n) *= max_norm / sqrt(*sum_sq) when that norm exceeds max_norm > 0.
template <class T>
elementwise_kernel<clip_body<T>> make_clip(T* g, std::size_t n, const double* sum_sq, double max_norm) {
  return {{g, sum_sq, max_norm}, n};
}

}  // namespace weft::cuda::kernels
