#pragma once
// ---- rotary embedding on the packed qkv buffer, forward and backward ----
// Rotate-half convention over the first R elements of each q/k head (pairs (i, i + R/2); R = D
// unless partial rotary), angle pos * Base^(-2i/R), pos = the token's index in its sequence, as
// ops::rope_*. One thread per work item of a token: the (H + KVH) * R/2 rotated pairs, then the
// (H + KVH) * (D - R) unrotated tail elements and the KVH * D value elements (copied forward,
// accumulated backward). The angle is
// formed and its cosine and sine taken in double, so positions up to the context length keep
// float accuracy (a float angle of ~1000 rad would lose 4 digits).
#include "weft/backend/cuda/kernels/grid.hpp"    // math, to_f32, from_f32
#include "weft/backend/cuda/kernels/tiling.hpp"  // flat_config
#include "weft/core/rope_scaling.hpp"             // no_rope_scaling

#include <cstddef>

namespace weft::cuda::kernels {

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base,
          std::size_t R, class Scaling, class T, bool Backward>
struct rope_kernel {
  static constexpr bool head_dim_even = R % 2 == 0 && R >= 2 && R <= D;
  static_assert(head_dim_even, "weft::cuda::kernels::rope: the rotary dimension is odd, 0 or above the head "
                               "dimension. Use an even R with 2 <= R <= D.");
  static constexpr std::size_t half = R / 2;
  static constexpr std::size_t pairs = (H + KVH) * half;        // rotated pairs per token
  static constexpr std::size_t tail = D - R;                    // unrotated elements per q/k head
  static constexpr std::size_t values = (H + KVH) * tail + KVH * D;  // elements passed through per token
  static constexpr std::size_t per_token = pairs + values;
  static constexpr std::size_t qkv_width = (H + 2 * KVH) * D;
  static constexpr std::size_t items = B * S * per_token;

  T* dst;        // forward: qkv_out (may equal src); backward: dqkv_in (accumulated)
  const T* src;  // forward: qkv_in; backward: dqkv_out
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return flat_config(items); }

  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t w = c.global_rank(); w < items; w += c.global_threads()) {
      const std::size_t n = w / per_token, r = w % per_token;
      const T* in = src + n * qkv_width;
      T* out = dst + n * qkv_width;
      if (r >= pairs) {  // an element passed through: an unrotated tail, then the v heads
        const std::size_t p = r - pairs;
        std::size_t j = (H + KVH) * D + p;  // a value element
        if constexpr (tail > 0) {
          if (p < (H + KVH) * tail) j = (p / tail) * D + R + p % tail;  // head p / tail's tail
          else j -= (H + KVH) * tail;
        }
        out[j] = Backward ? from_f32<T>(to_f32(out[j]) + to_f32(in[j])) : in[j];
        continue;
      }
      const std::size_t head = r / half, i = r % half;
      const double inv_freq = Scaling::apply(math::pow(double(Base), -2.0 * double(i) / double(R)));
      const double angle = double(n % S) * inv_freq;
      const float cs = static_cast<float>(math::cos(angle)), sn = static_cast<float>(math::sin(angle));
      const std::size_t a = head * D + i, b = a + half;  // b < head * D + R
      const float x1 = to_f32(in[a]), x2 = to_f32(in[b]);
      if constexpr (!Backward) {
        out[a] = from_f32<T>(x1 * cs - x2 * sn);
        out[b] = from_f32<T>(x2 * cs + x1 * sn);
      } else {  // the transpose of the rotation
        out[a] = from_f32<T>(to_f32(out[a]) + (x1 * cs + x2 * sn));
        out[b] = from_f32<T>(to_f32(out[b]) + (x2 * cs - x1 * sn));
      }
    }
  }
};

/// qkv_out = rope(qkv_in) over q and k heads, v copied; may run in place.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling, class T>
rope_kernel<B, S, H, KVH, D, Base, R, Scaling, T, false> make_rope_forward(T* qkv_out, const T* qkv_in) {
  return {qkv_out, qkv_in};
}
/// dqkv_in += rope^T(dqkv_out); the buffers must not overlap.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = no_rope_scaling, class T>
rope_kernel<B, S, H, KVH, D, Base, R, Scaling, T, true> make_rope_backward(T* dqkv_in, const T* dqkv_out) {
  return {dqkv_in, dqkv_out};
}

}  // namespace weft::cuda::kernels
