#pragma once
// ---- activation and residual kernels over compile-time sizes: GELU (tanh or erf), SwiGLU, residual ----
// The sizes are template parameters, so the vector width (16 bytes where the size allows),
// the grid and the per-vector loop are fixed at compile time (flat_tiling: a weft layout of
// (vector element, vector index) -> element). Buffers must be aligned to the vector access
// (every arena buffer is 256-byte aligned); the factories assert it on the host.
// Arithmetic is in float; storage in T (float or bf16).
#include "weft/backend/cuda/kernels/grid.hpp"    // load_vec, store_vec, math, to_f32, from_f32
#include "weft/core/gelu_form.hpp"               // gelu_form
#include "weft/backend/cuda/kernels/tiling.hpp"  // flat_tiling, vector_width_v

#include <cassert>
#include <cstddef>

namespace weft::cuda::kernels {

/// One phase over the vectors of a flat_tiling: f.template apply<W>(vector's first element)
/// for every vector, grid-stride.
template <class F, class Tiling>
struct vector_kernel {
  F f;
  struct shared {};
  struct locals {};
  static constexpr int phases = 1;
  launch_config config() const { return Tiling::config(); }
  WEFT_HOST_DEVICE void phase(int, const block_context& c, shared&, locals&) const {
    for (std::size_t v = c.global_rank(); v < Tiling::vectors; v += c.global_threads())
      f.template apply<Tiling::width>(Tiling::element(v));
  }
};

namespace detail {
// sqrt(2 / pi) and the cubic coefficient of GPT-2's tanh GELU.
inline constexpr float gelu_k = 0.7978845608028654f;
inline constexpr float gelu_c = 0.044715f;

WEFT_HOST_DEVICE float gelu(float x) noexcept {
  return 0.5f * x * (1.0f + math::tanh(gelu_k * (x + gelu_c * x * x * x)));
}
WEFT_HOST_DEVICE float gelu_grad(float x) noexcept {
  const float t = math::tanh(gelu_k * (x + gelu_c * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * gelu_k * (1.0f + 3.0f * gelu_c * x * x);
}
// The exact form, 0.5 x (1 + erf(x / sqrt 2)), and its derivative Φ(x) + x φ(x).
inline constexpr float gelu_rsqrt2 = 0.70710678118654752f;
inline constexpr float gelu_rsqrt2pi = 0.39894228040143268f;
WEFT_HOST_DEVICE float gelu_erf(float x) noexcept { return 0.5f * x * (1.0f + math::erf(x * gelu_rsqrt2)); }
WEFT_HOST_DEVICE float gelu_erf_grad(float x) noexcept {
  return 0.5f * (1.0f + math::erf(x * gelu_rsqrt2)) + x * gelu_rsqrt2pi * math::exp(-0.5f * x * x);
}
WEFT_HOST_DEVICE float sigmoid(float x) noexcept { return 1.0f / (1.0f + math::exp(-x)); }

// A GELU form's value and derivative (weft::gelu_form).
template <gelu_form Form>
struct gelu_fn {
  WEFT_HOST_DEVICE static float value(float x) noexcept { return Form == gelu_form::erf ? gelu_erf(x) : gelu(x); }
  WEFT_HOST_DEVICE static float grad(float x) noexcept { return Form == gelu_form::erf ? gelu_erf_grad(x) : gelu_grad(x); }
};
}  // namespace detail

// ---- GELU ----

/// out = gelu(inp), W elements at e, in form `Form`.
template <class T, gelu_form Form = gelu_form::tanh>
struct gelu_forward_body {
  T* out;
  const T* inp;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const auto x = load_vec<W>(inp + e);
    vec<T, W> y;
    for (std::size_t k = 0; k < W; ++k) y.v[k] = from_f32<T>(detail::gelu_fn<Form>::value(to_f32(x.v[k])));
    store_vec<W>(out + e, y);
  }
};

/// dinp += gelu'(inp) * dout.
template <class T, gelu_form Form = gelu_form::tanh>
struct gelu_backward_body {
  T* dinp;
  const T* inp;
  const T* dout;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const auto x = load_vec<W>(inp + e);
    const auto dy = load_vec<W>(dout + e);
    auto dx = load_vec<W>(dinp + e);
    for (std::size_t k = 0; k < W; ++k)
      dx.v[k] = from_f32<T>(to_f32(dx.v[k]) + detail::gelu_fn<Form>::grad(to_f32(x.v[k])) * to_f32(dy.v[k]));
    store_vec<W>(dinp + e, dx);
  }
};

// ---- residual ----

/// out = a + b.
template <class T>
struct residual_forward_body {
  T* out;
  const T* a;
  const T* b;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const auto x = load_vec<W>(a + e);
    const auto y = load_vec<W>(b + e);
    vec<T, W> r;
    for (std::size_t k = 0; k < W; ++k) r.v[k] = from_f32<T>(to_f32(x.v[k]) + to_f32(y.v[k]));
    store_vec<W>(out + e, r);
  }
};

/// da += dout, db += dout.
template <class T>
struct residual_backward_body {
  T* da;
  T* db;
  const T* dout;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const auto g = load_vec<W>(dout + e);
    auto x = load_vec<W>(da + e);
    auto y = load_vec<W>(db + e);
    for (std::size_t k = 0; k < W; ++k) {
      x.v[k] = from_f32<T>(to_f32(x.v[k]) + to_f32(g.v[k]));
      y.v[k] = from_f32<T>(to_f32(y.v[k]) + to_f32(g.v[k]));
    }
    store_vec<W>(da + e, x);
    store_vec<W>(db + e, y);
  }
};

// ---- gated activations: inp (N, 2H) = [gate | up], out (N, H) = act(gate) * up ----
// A Gate gives act(g) (value) and the two gradient terms dout·up·act'(g), dout·act(g) (grads),
// each in its own order of operations: SwiGLU (silu) and GeGLU (GPT-2's tanh GELU).

namespace detail {
struct silu_gate {
  WEFT_HOST_DEVICE static float value(float g) noexcept { return g * sigmoid(g); }
  WEFT_HOST_DEVICE static void grads(float g, float d, float u, float& dg, float& du) noexcept {
    const float sig = sigmoid(g);
    dg = d * u * sig * (1.0f + g * (1.0f - sig));
    du = d * g * sig;
  }
};
struct gelu_tanh_gate {
  WEFT_HOST_DEVICE static float value(float g) noexcept { return gelu(g); }
  WEFT_HOST_DEVICE static void grads(float g, float d, float u, float& dg, float& du) noexcept {
    dg = d * u * gelu_grad(g);
    du = d * gelu(g);
  }
};
}  // namespace detail

/// Vector e of out (row n = e / H, column i = e % H; W divides H so a vector stays in its row).
template <std::size_t H, class T, class Gate>
struct gated_forward_body {
  T* out;
  const T* inp;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const std::size_t n = e / H, i = e % H;
    const auto g = load_vec<W>(inp + n * 2 * H + i);
    const auto u = load_vec<W>(inp + n * 2 * H + H + i);
    vec<T, W> y;
    for (std::size_t k = 0; k < W; ++k) y.v[k] = from_f32<T>(Gate::value(to_f32(g.v[k])) * to_f32(u.v[k]));
    store_vec<W>(out + e, y);
  }
};

/// dgate += dout * up * act'(gate), dup += dout * act(gate).
template <std::size_t H, class T, class Gate>
struct gated_backward_body {
  T* dinp;
  const T* inp;
  const T* dout;
  template <std::size_t W>
  WEFT_HOST_DEVICE void apply(std::size_t e) const {
    const std::size_t n = e / H, i = e % H;
    const std::size_t gate_at = n * 2 * H + i, up_at = gate_at + H;
    const auto g = load_vec<W>(inp + gate_at);
    const auto u = load_vec<W>(inp + up_at);
    const auto dy = load_vec<W>(dout + e);
    auto dg = load_vec<W>(dinp + gate_at);
    auto du = load_vec<W>(dinp + up_at);
    for (std::size_t k = 0; k < W; ++k) {
      float tg, tu;
      Gate::grads(to_f32(g.v[k]), to_f32(dy.v[k]), to_f32(u.v[k]), tg, tu);
      dg.v[k] = from_f32<T>(to_f32(dg.v[k]) + tg);
      du.v[k] = from_f32<T>(to_f32(du.v[k]) + tu);
    }
    store_vec<W>(dinp + gate_at, dg);
    store_vec<W>(dinp + up_at, du);
  }
};

// ---- factories ----

namespace detail {
template <std::size_t W, class... P>
inline bool all_vec_aligned(const P*... p) {
  return (vec_aligned<W>(p) && ...);
}
}  // namespace detail

/// out(N) = gelu(inp(N)) (tanh form, GPT-2, unless Form says erf).
template <std::size_t N, gelu_form Form = gelu_form::tanh, class T>
vector_kernel<gelu_forward_body<T, Form>, flat_tiling<T, N>> make_gelu_forward(T* out, const T* inp) {
  assert((detail::all_vec_aligned<flat_tiling<T, N>::width>(out, inp)));
  return {{out, inp}};
}
/// dinp(N) += gelu'(inp) * dout.
template <std::size_t N, gelu_form Form = gelu_form::tanh, class T>
vector_kernel<gelu_backward_body<T, Form>, flat_tiling<T, N>> make_gelu_backward(T* dinp, const T* inp, const T* dout) {
  assert((detail::all_vec_aligned<flat_tiling<T, N>::width>(dinp, inp, dout)));
  return {{dinp, inp, dout}};
}
/// out(N) = a(N) + b(N).
template <std::size_t N, class T>
vector_kernel<residual_forward_body<T>, flat_tiling<T, N>> make_residual_forward(T* out, const T* a, const T* b) {
  assert((detail::all_vec_aligned<flat_tiling<T, N>::width>(out, a, b)));
  return {{out, a, b}};
}
/// da(N) += dout, db(N) += dout.
template <std::size_t N, class T>
vector_kernel<residual_backward_body<T>, flat_tiling<T, N>> make_residual_backward(T* da, T* db, const T* dout) {
  assert((detail::all_vec_aligned<flat_tiling<T, N>::width>(da, db, dout)));
  return {{da, db, dout}};
}

/// Tiling of a gated activation's output (N, H): vectors that divide H.
template <std::size_t N, std::size_t H, class T>
struct swiglu_tiling : flat_tiling<T, N * H> {
  static constexpr std::size_t width = vector_width_v<T, H>;
  static constexpr std::size_t vectors = N * H / width;
  static constexpr unsigned blocks =
      static_cast<unsigned>(ceil_div(vectors, 256) < 4096 ? ceil_div(vectors, 256) : 4096);
  WEFT_HOST_DEVICE static constexpr std::size_t element(std::size_t v) noexcept { return v * width; }
  static constexpr launch_config config() noexcept { return {{blocks, 1, 1}, {256, 1, 1}}; }
};

/// out(N, H) = silu(inp[:, :H]) * inp[:, H:].
template <std::size_t N, std::size_t H, class T>
vector_kernel<gated_forward_body<H, T, detail::silu_gate>, swiglu_tiling<N, H, T>> make_swiglu_forward(T* out, const T* inp) {
  assert((detail::all_vec_aligned<swiglu_tiling<N, H, T>::width>(out, inp)));
  return {{out, inp}};
}
/// dinp(N, 2H) += the gradient of swiglu_forward.
template <std::size_t N, std::size_t H, class T>
vector_kernel<gated_backward_body<H, T, detail::silu_gate>, swiglu_tiling<N, H, T>> make_swiglu_backward(
    T* dinp, const T* inp, const T* dout) {
  assert((detail::all_vec_aligned<swiglu_tiling<N, H, T>::width>(dinp, inp, dout)));
  return {{dinp, inp, dout}};
}

/// out(N, H) = gelu(inp[:, :H]) * inp[:, H:] (swiglu's tiling).
template <std::size_t N, std::size_t H, class T>
vector_kernel<gated_forward_body<H, T, detail::gelu_tanh_gate>, swiglu_tiling<N, H, T>> make_geglu_forward(T* out, const T* inp) {
  assert((detail::all_vec_aligned<swiglu_tiling<N, H, T>::width>(out, inp)));
  return {{out, inp}};
}
/// dinp(N, 2H) += the gradient of geglu_forward.
template <std::size_t N, std::size_t H, class T>
vector_kernel<gated_backward_body<H, T, detail::gelu_tanh_gate>, swiglu_tiling<N, H, T>> make_geglu_backward(
    T* dinp, const T* inp, const T* dout) {
  assert((detail::all_vec_aligned<swiglu_tiling<N, H, T>::width>(dinp, inp, dout)));
  return {{dinp, inp, dout}};
}

}  // namespace weft::cuda::kernels
