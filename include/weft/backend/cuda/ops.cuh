#pragma once
// ---- the CUDA backend's op bodies: op_impl(tag, const cuda_context&, ...) ----
// Each overload is the device body of a host op (ops/<op>.hpp), with the same tag, the same
// compile-time sizes and the same arguments, so a layer written once (model/) runs on either
// backend: the frame's context type picks the body by argument-dependent lookup (ops/op.hpp),
// these being found in weft::cuda, the namespace of cuda_context. Buffers are device memory.
// Bodies launch weft's own kernels (kernels/*.cuh) or cuBLASLt (gemm.cuh) on the context's
// stream and throw cuda_error naming the op when a launch fails.
//
// Element types: float and bf16 (the kernels' types; losses and optimizer state are f32; norm
// statistics are f32, or bf16 where a bf16 plan's layers keep them in bf16, rounded once). Differences from the host that a caller can see, all inside buffers the layer owns:
//   attention_forward/backward  bf16/f16 with head dims 16..128 (multiples of 16): tensor-core
//                       flash attention; `att` keeps (lse, a copy of out), `scratch` unused.
//                       Otherwise (or WEFT_CUDA_ATTENTION=cublas) the host's contract
//                       (probabilities in `att`, d(scores) in `scratch`) through cuBLASLt
//                       (attention.cuh). WEFT_CUDA_SIMT_ATTENTION: the scalar flash kernels.
//   flash_attention_forward/backward (the flash_attention option) the host's contract exactly.
//   sum_squares, mean_loss  return a double to the host: one copy back and a stream sync.
#include "weft/backend/cuda/attention.cuh"  // attention_forward_tc, attention_backward_tc
#include "weft/backend/cuda/context.cuh"  // cuda_context, check
#include "weft/backend/cuda/gemm.cuh"     // linear_gemm_plan, gemm_descriptors, gemm_run
#include "weft/backend/cuda/kernels.cuh"  // launch_*
#include "weft/core/dtype.hpp"            // bf16
#include "weft/ops/accumulate.hpp"
#include "weft/ops/adamw.hpp"
#include "weft/ops/attention.hpp"
#include "weft/ops/cast.hpp"
#include "weft/ops/clip.hpp"
#include "weft/ops/copy.hpp"
#include "weft/ops/cross_entropy.hpp"
#include "weft/ops/embedding.hpp"
#include "weft/ops/fill.hpp"
#include "weft/ops/flash_attention.hpp"
#include "weft/ops/gelu.hpp"
#include "weft/ops/layernorm.hpp"
#include "weft/ops/matmul.hpp"
#include "weft/ops/mean_loss.hpp"
#include "weft/ops/residual.hpp"
#include "weft/ops/rmsnorm.hpp"
#include "weft/ops/rope.hpp"
#include "weft/ops/scale.hpp"
#include "weft/ops/sum_squares.hpp"
#include "weft/ops/geglu.hpp"
#include "weft/ops/swiglu.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft::cuda {

/// The element types the CUDA op bodies store (f16: precision<f16, f32> with dynamic loss scaling,
/// whose overflow verdict is the executor's, from the gradient norm these bodies return).
template <class T>
concept device_element = std::same_as<T, float> || std::same_as<T, bf16> || std::same_as<T, f16>;

namespace k = weft::cuda::kernels;

namespace detail {
// A scalar reduction's result, from the device to the host (one double, stream synchronised).
inline double read_back(const cuda_context& c, const double* device_value, const char* who) {
  double local = 0;
  double* dst = c.host_result ? c.host_result : &local;
  check(cudaMemcpyAsync(dst, device_value, sizeof(double), cudaMemcpyDeviceToHost, c.stream), who);
  check(cudaStreamSynchronize(c.stream), who);
  return *dst;
}
// One product of a linear layer. Its descriptors and cuBLASLt's algorithm are chosen once per
// (shape, handle, workspace, buffer alignments) and kept, per thread: a step's products repeat
// every layer and every step, and asking cuBLASLt's heuristic each time costs host time that a
// GPU step at these sizes does not have. The bias pointer is set per call.
template <std::size_t N, std::size_t C, std::size_t OC, class T, linear_product P, gemm_epilogue E = gemm_epilogue::none>
void run_linear(const cuda_context& c, const void* a, const void* b, void* d, const void* bias, const char* who) {
  constexpr gemm_plan plan = linear_gemm_plan<N, C, OC, T, P, E>();
  struct chosen {
    cublasLtHandle_t handle;
    std::size_t workspace_bytes;
    std::uint32_t alignments;
    std::unique_ptr<gemm_descriptors> g;
    cublasLtMatmulAlgo_t algo;
  };
  thread_local std::vector<chosen> cache;
  const std::uint32_t al_a = pointer_alignment(a), al_b = pointer_alignment(b), al_d = pointer_alignment(d);
  const std::uint32_t key = al_a | al_b << 9 | al_d << 18;
  chosen* e = nullptr;
  for (auto& x : cache)
    if (x.handle == c.blas && x.workspace_bytes == c.blas_workspace_bytes && x.alignments == key) e = &x;
  if (e == nullptr) {
    chosen fresh{c.blas, c.blas_workspace_bytes, key, std::make_unique<gemm_descriptors>(plan, bias), {}};
    check(fresh.g->status(), who);
    const cublasStatus_t s = gemm_select(c.blas, *fresh.g, c.blas_workspace_bytes, al_a, al_b, al_d, fresh.algo);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw cuda_error(std::string("weft::cuda: ") + who + ": cuBLASLt has no algorithm (status " +
                       std::to_string(static_cast<int>(s)) + ") for m=" + std::to_string(plan.m) + " n=" +
                       std::to_string(plan.n) + " k=" + std::to_string(plan.k) + " with buffers aligned to " +
                       std::to_string(al_a) + "/" + std::to_string(al_b) + "/" + std::to_string(al_d) + " bytes");
    cache.push_back(std::move(fresh));
    e = &cache.back();
  }
  check(e->g->set_epilogue_pointers(plan, bias, nullptr), who);
  check(gemm_execute(c.blas, c.stream, plan, *e->g, e->algo, a, b, d, c.blas_workspace, c.blas_workspace_bytes), who);
}
}  // namespace detail

// ---- memory: fill, zero, copy, accumulate, cast ----
template <device_element T>
void op_impl(ops::fill_op, const cuda_context& c, T* x, std::size_t n, std::type_identity_t<T> value) {
  check(k::launch_fill(c.stream, x, n, value), "fill");
}
template <device_element T>
void op_impl(ops::zero_op, const cuda_context& c, T* x, std::size_t n) {
  check(k::launch_zero(c.stream, x, n), "zero");
}
template <device_element T>
void op_impl(ops::copy_op, const cuda_context& c, T* dst, const std::type_identity_t<T>* src, std::size_t n) {
  check(k::launch_copy(c.stream, dst, src, n), "copy");
}
template <device_element T>
void op_impl(ops::scale_op, const cuda_context& c, T* x, std::size_t n, double factor) {
  if (factor == 1.0) return;
  check(k::launch_scale(c.stream, x, n, static_cast<float>(factor)), "scale");
}
template <device_element T>
void op_impl(ops::accumulate_op, const cuda_context& c, T* y, const std::type_identity_t<T>* x, std::size_t n) {
  check(k::launch_accumulate(c.stream, y, x, n, 1.0f), "accumulate");
}
template <device_element T>
void op_impl(ops::accumulate_op, const cuda_context& c, T* y, const std::type_identity_t<T>* x, std::size_t n,
             std::type_identity_t<T> alpha) {
  check(k::launch_accumulate(c.stream, y, x, n, static_cast<float>(alpha)), "accumulate");
}
template <std::size_t Rows, std::size_t N, device_element T>
void op_impl(ops::accumulate_rows_op<Rows, N>, const cuda_context& c, T* y, const std::type_identity_t<T>* x) {
  for (std::size_t r = 0; r < Rows; ++r) check(k::launch_accumulate(c.stream, y + r * N, x, N, 1.0f), "accumulate_rows");
}
template <device_element Dst, device_element Src>
void op_impl(ops::cast_op, const cuda_context& c, Dst* dst, const Src* src, std::size_t n) {
  check(k::launch_cast(c.stream, dst, src, n), "cast");
}

// ---- reductions read back by the executor: sum of squares, mean loss; clipping ----
template <device_element T>
double op_impl(ops::sum_squares_op, const cuda_context& c, const T* x, std::size_t n) {
  double* out = c.borrow<double>(1, 0, "sum_squares");
  double* partial = c.borrow<double>(k::sum_squares_blocks(n), 256, "sum_squares");
  check(k::launch_sum_squares(c.stream, out, x, n, partial), "sum_squares");
  return detail::read_back(c, out, "sum_squares");
}
template <device_element T>
double op_impl(ops::sum_squares_continue_op, const cuda_context& c, double carry, const T* x, std::size_t n) {
  return carry + op_impl(ops::sum_squares_op{}, c, x, n);
}
template <device_element T>
double op_impl(ops::mean_loss_op, const cuda_context& c, const T* losses, std::size_t n) {
  double* out = c.borrow<double>(1, 0, "mean_loss");
  double* partial = c.borrow<double>(k::sum_squares_blocks(n), 256, "mean_loss");
  check(k::launch_mean_loss(c.stream, out, losses, n, partial), "mean_loss");
  return detail::read_back(c, out, "mean_loss");
}
template <device_element T>
void op_impl(ops::clip_op, const cuda_context& c, T* g, std::size_t n, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return;  // the host's rule, decided on the host
  check(k::launch_scale(c.stream, g, n, static_cast<float>(max_norm / norm)), "clip");
}

// ---- AdamW: f32 master and moments (the parameters themselves when they are f32) ----
template <device_element G>
void op_impl(ops::adamw_step_op, const cuda_context& c, float* param, const G* grad, float* m, float* v, std::size_t n,
             double lr, double beta1, double beta2, double eps, double weight_decay, int t) {
  const k::adamw_hyper h{float(lr), float(beta1), float(beta2), float(eps), float(weight_decay), t};
  check(k::launch_adamw<G, float>(c.stream, param, grad, m, v, nullptr, n, h), "adamw_step");
}
template <device_element Copy, device_element G>
  requires(!std::same_as<Copy, float>)
void op_impl(ops::adamw_step_op, const cuda_context& c, float* master, Copy* param_copy, const G* grad, float* m,
             float* v, std::size_t n, double lr, double beta1, double beta2, double eps, double weight_decay, int t) {
  const k::adamw_hyper h{float(lr), float(beta1), float(beta2), float(eps), float(weight_decay), t};
  check(k::launch_adamw<G, Copy>(c.stream, master, grad, m, v, param_copy, n, h), "adamw_step");
}

// ---- embeddings ----
template <std::size_t N, std::size_t V, std::size_t C, device_element T>
void op_impl(ops::embedding_forward_op<N, V, C>, const cuda_context& c, T* out, const std::int32_t* idx, const T* table) {
  check(k::launch_embedding_forward<1, N, V, C, T>(c.stream, out, idx, table, nullptr), "embedding_forward");
}
template <std::size_t N, std::size_t V, std::size_t C, device_element T>
void op_impl(ops::embedding_backward_op<N, V, C>, const cuda_context& c, T* dtable, const T* dout, const std::int32_t* idx) {
  float* scratch = c.borrow<float>(k::embedding_backward_scratch_v<N, V, C>, 0, "embedding_backward");
  check(k::launch_embedding_backward<N, V, C>(c.stream, dtable, dout, idx, scratch), "embedding_backward");
}
template <std::size_t B, std::size_t S, std::size_t C, device_element T>
void op_impl(ops::positional_forward_op<B, S, C>, const cuda_context& c, T* out, const T* wpe) {
  // out(b) += wpe(S, C) for each batch row: B accumulations (the token embedding is written
  // first by embedding_forward, as on the host).
  for (std::size_t b = 0; b < B; ++b) check(k::launch_accumulate(c.stream, out + b * S * C, wpe, S * C, 1.0f), "positional_forward");
}
template <std::size_t B, std::size_t S, std::size_t C, device_element T>
void op_impl(ops::positional_backward_op<B, S, C>, const cuda_context& c, T* dwpe, const T* dout) {
  check(k::launch_positional_backward<B, S, C>(c.stream, dwpe, dout), "positional_backward");
}

// ---- norms: statistics in f32 (the layers keep them in ops::stat_t, model/norm_stats.hpp) ----
template <std::size_t N, std::size_t C, double Eps, device_element T>
void op_impl(ops::layernorm_forward_op<N, C, Eps>, const cuda_context& c, T* out, float* mean, float* rstd, const T* inp,
             const T* weight, const T* bias) {
  check(k::launch_layernorm_forward<N, C>(c.stream, out, mean, rstd, inp, weight, bias, float(Eps)), "layernorm_forward");
}
template <std::size_t N, std::size_t C, device_element T>
void op_impl(ops::layernorm_backward_op<N, C>, const cuda_context& c, T* dinp, T* dweight, T* dbias, const T* dout,
             const T* inp, const T* weight, const float* mean, const float* rstd) {
  float* scratch = c.borrow<float>(k::layernorm_backward_scratch_v<N, C>, 0, "layernorm_backward");
  check(k::launch_layernorm_backward<N, C>(c.stream, dinp, dweight, dbias, dout, inp, weight, mean, rstd, scratch),
        "layernorm_backward");
}
template <std::size_t N, std::size_t C, double Eps, device_element T>
void op_impl(ops::rmsnorm_forward_op<N, C, Eps>, const cuda_context& c, T* out, float* rstd, const T* inp, const T* weight) {
  check(k::launch_rmsnorm_forward<N, C>(c.stream, out, rstd, inp, weight, float(Eps)), "rmsnorm_forward");
}
template <std::size_t N, std::size_t C, device_element T>
void op_impl(ops::rmsnorm_backward_op<N, C>, const cuda_context& c, T* dinp, T* dweight, const T* dout, const T* inp,
             const T* weight, const float* rstd) {
  float* scratch = c.borrow<float>(k::rmsnorm_backward_scratch_v<N, C>, 0, "rmsnorm_backward");
  check(k::launch_rmsnorm_backward<N, C>(c.stream, dinp, dweight, dout, inp, weight, rstd, scratch), "rmsnorm_backward");
}

// ---- linear layers: cuBLASLt (bias in the epilogue), deterministic bias gradient ----
template <std::size_t N, std::size_t C, std::size_t OC, device_element T>
void op_impl(ops::matmul_forward_op<N, C, OC>, const cuda_context& c, T* out, const T* inp, const T* weight,
             const std::type_identity_t<T>* bias) {
  if (bias != nullptr)
    detail::run_linear<N, C, OC, T, linear_product::forward, gemm_epilogue::bias>(c, weight, inp, out, bias, "matmul_forward");
  else
    detail::run_linear<N, C, OC, T, linear_product::forward>(c, weight, inp, out, nullptr, "matmul_forward");
}
template <std::size_t N, std::size_t OC, device_element T>
void op_impl(ops::bias_backward_op<N, OC>, const cuda_context& c, T* dbias, const T* dout) {
  float* scratch = c.borrow<float>(k::bias_backward_scratch_v<N, OC>, 0, "bias_backward");
  check(k::launch_bias_backward<N, OC>(c.stream, dbias, dout, scratch), "bias_backward");
}
template <std::size_t N, std::size_t C, std::size_t OC, device_element T>
void op_impl(ops::matmul_backward_op<N, C, OC>, const cuda_context& c, std::type_identity_t<T>* dinp, T* dweight,
             std::type_identity_t<T>* dbias, const T* dout, const T* inp, const T* weight) {
  if (dinp != nullptr)
    detail::run_linear<N, C, OC, T, linear_product::backward_input>(c, weight, dout, dinp, nullptr, "matmul_backward(input)");
  detail::run_linear<N, C, OC, T, linear_product::backward_weight>(c, inp, dout, dweight, nullptr, "matmul_backward(weight)");
  if (dbias != nullptr) op_impl(ops::bias_backward_op<N, OC>{}, c, dbias, dout);
}

// The view form (ops/matmul.hpp): the weight is the (C, OC) matrix multiplied on the right. The
// device bodies take nn.Linear's storage, its column-major view, and run the pointer bodies above.
namespace detail {
template <std::size_t N, std::size_t C, std::size_t OC, class Out, class In, class W>
constexpr bool device_matmul_views() {
  static_assert(ops::detail::matmul_view_checks<N, C, OC, Out, In, W>());
  using w = ops::detail::gemm_operand<W>;
  using i = ops::detail::gemm_operand<In>;
  constexpr bool linear_layout = w::column_major && w::ld == C;
  static_assert(linear_layout, "weft::cuda: matmul takes the weight as nn.Linear stores it, (OC, C) dense: pass "
                               "linear_weight_view<C, OC, device_space>(weight). Other layouts are host-only for now.");
  constexpr bool dense_in = i::row_major && i::ld == C && ops::detail::gemm_operand<Out>::ld == OC;
  static_assert(dense_in, "weft::cuda: matmul reads out and inp dense and row-major.");
  return linear_layout && dense_in;
}
}  // namespace detail
template <std::size_t N, std::size_t C, std::size_t OC, device_element T, class MO, class TI, class MI, class TW,
          class MW, class Bias>
  requires std::is_same_v<std::remove_const_t<TI>, T> && std::is_same_v<std::remove_const_t<TW>, T>
void op_impl(ops::matmul_forward_op<N, C, OC> op, const cuda_context& c, tensor<T, MO, device_space> out,
             tensor<TI, MI, device_space> inp, tensor<TW, MW, device_space> w, Bias bias) {
  static_assert(detail::device_matmul_views<N, C, OC, decltype(out), decltype(inp), decltype(w)>());
  const T* b = nullptr;
  if constexpr (!std::is_same_v<Bias, ops::none_t>) b = bias.data();
  op_impl(op, c, out.data(), inp.data(), w.data(), b);
}
template <std::size_t N, std::size_t C, std::size_t OC, device_element T, class DIn, class MDW, class DBias, class TO,
          class MO, class TI, class MI, class TW, class MW>
  requires std::is_same_v<std::remove_const_t<TO>, T> && std::is_same_v<std::remove_const_t<TI>, T> &&
           std::is_same_v<std::remove_const_t<TW>, T>
void op_impl(ops::matmul_backward_op<N, C, OC> op, const cuda_context& c, DIn dinp, tensor<T, MDW, device_space> dw,
             DBias dbias, tensor<TO, MO, device_space> dout, tensor<TI, MI, device_space> inp,
             tensor<TW, MW, device_space> w) {
  static_assert(detail::device_matmul_views<N, C, OC, decltype(dout), decltype(inp), decltype(w)>());
  static_assert(detail::device_matmul_views<N, C, OC, decltype(dout), decltype(inp), decltype(dw)>());
  T* di = nullptr;
  if constexpr (!std::is_same_v<DIn, ops::none_t>) di = dinp.data();
  T* db = nullptr;
  if constexpr (!std::is_same_v<DBias, ops::none_t>) db = dbias.data();
  op_impl(op, c, di, dw.data(), db, dout.data(), inp.data(), w.data());
}

// ---- element-wise ----
template <std::size_t N, gelu_form Form, device_element T>
void op_impl(ops::gelu_forward_op<N, Form>, const cuda_context& c, T* out, const T* inp) {
  check(k::launch_gelu_forward<N, Form>(c.stream, out, inp), "gelu_forward");
}
template <std::size_t N, gelu_form Form, device_element T>
void op_impl(ops::gelu_backward_op<N, Form>, const cuda_context& c, T* dinp, const T* inp, const T* dout) {
  check(k::launch_gelu_backward<N, Form>(c.stream, dinp, inp, dout), "gelu_backward");
}
template <std::size_t N, std::size_t H, device_element T>
void op_impl(ops::swiglu_forward_op<N, H>, const cuda_context& c, T* out, const T* inp) {
  check(k::launch_swiglu_forward<N, H>(c.stream, out, inp), "swiglu_forward");
}
template <std::size_t N, std::size_t H, device_element T>
void op_impl(ops::swiglu_backward_op<N, H>, const cuda_context& c, T* dinp, const T* inp, const T* dout) {
  check(k::launch_swiglu_backward<N, H>(c.stream, dinp, inp, dout), "swiglu_backward");
}
template <std::size_t N, std::size_t H, device_element T>
void op_impl(ops::geglu_forward_op<N, H>, const cuda_context& c, T* out, const T* inp) {
  check(k::launch_geglu_forward<N, H>(c.stream, out, inp), "geglu_forward");
}
template <std::size_t N, std::size_t H, device_element T>
void op_impl(ops::geglu_backward_op<N, H>, const cuda_context& c, T* dinp, const T* inp, const T* dout) {
  check(k::launch_geglu_backward<N, H>(c.stream, dinp, inp, dout), "geglu_backward");
}
template <std::size_t N, device_element T>
void op_impl(ops::residual_forward_op<N>, const cuda_context& c, T* out, const T* a, const T* b) {
  check(k::launch_residual_forward<N>(c.stream, out, a, b), "residual_forward");
}
template <std::size_t N, device_element T>
void op_impl(ops::residual_backward_op<N>, const cuda_context& c, T* da, T* db, const T* dout) {
  check(k::launch_residual_backward<N>(c.stream, da, db, dout), "residual_backward");
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base, std::size_t R,
          class Scaling, device_element T>
void op_impl(ops::rope_forward_op<B, S, H, KVH, D, Base, R, Scaling>, const cuda_context& c, T* qkv_out, const T* qkv_in) {
  check(k::launch_rope_forward<B, S, H, KVH, D, Base, R, Scaling>(c.stream, qkv_out, qkv_in), "rope_forward");
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base, std::size_t R,
          class Scaling, device_element T>
void op_impl(ops::rope_backward_op<B, S, H, KVH, D, Base, R, Scaling>, const cuda_context& c, T* dqkv_in,
             const T* dqkv_out) {
  check(k::launch_rope_backward<B, S, H, KVH, D, Base, R, Scaling>(c.stream, dqkv_in, dqkv_out), "rope_backward");
}

// ---- attention keeping row statistics (ops/flash_attention.hpp; the flash_attention option) ----
// bf16/f16 with head dims 16..128 (multiples of 16) and a 16-byte aligned qkv: the tensor-core
// flash kernels (Δ borrowed from the context's scratch); otherwise the scalar flash kernels
// (kernels/attention.hpp, one thread per query row), which take any element type. Every body
// takes the sliding window W (0: none) and skips the key tiles outside it.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::flash_attention_forward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* out, float* lse, const T* qkv) {
  if constexpr (k::mma_attention_shape<T, D>) {
    if (reinterpret_cast<std::uintptr_t>(qkv) % 16 == 0) {
      check(k::launch_mma_attention_forward<B, S, H, KVH, D, W>(c.stream, out, lse, qkv), "flash_attention_forward");
      return;
    }
  }
  check(k::launch_flash_attention_forward<B, S, H, KVH, D, W>(c.stream, out, lse, qkv), "flash_attention_forward");
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::flash_attention_backward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* dqkv, const T* dout,
             const T* qkv, const T* out, const float* lse) {
  if constexpr (k::mma_attention_shape<T, D>) {
    if (reinterpret_cast<std::uintptr_t>(qkv) % 16 == 0) {
      float* delta = c.borrow<float>(B * H * S, 0, "flash_attention_backward");  // Δ (B, H, S)
      check(k::launch_mma_attention_backward<B, S, H, KVH, D, W>(c.stream, dqkv, delta, dout, qkv, out, lse),
            "flash_attention_backward");
      return;
    }
  }
  check(k::launch_flash_attention_backward<B, S, H, KVH, D, W>(c.stream, dqkv, dout, qkv, out, lse),
        "flash_attention_backward");
}

// ---- attention ----
// Three bodies, chosen per call (the shape at compile time, alignment and the environment at run
// time; forward and backward always agree):
//   * tensor-core flash attention, the default for bf16/f16 with a head dim that is a multiple of
//     16 up to 128: the row-statistics op above, with `att` carrying the row log-sum-exp (f32) and
//     a copy of the output; no (S, S) matrix is formed;
//   * the cuBLASLt path (attention.cuh), the host op's contract: `att` keeps the probabilities,
//     `scratch` receives d(scores). It takes every other shape (f32, other head dims), and every
//     shape when the environment sets WEFT_CUDA_ATTENTION=cublas (read once, for comparisons);
//   * WEFT_CUDA_SIMT_ATTENTION (a compile definition) selects the scalar flash kernels
//     (kernels/attention.hpp, one thread per query row) for every shape instead.
// The flash bodies need `att` to hold the row statistics and the output copy (a sequence of at
// least the head size and a few: flash_kept::fits); see use_mma_attention for the rest. All three
// take the op's sliding window W (0: none); the cuBLASLt path keeps 0 in `att` and `scratch`
// outside it, as the host op does.
namespace detail {
template <std::size_t B, std::size_t S, std::size_t H, std::size_t D, class T>
struct flash_kept {
  static constexpr std::size_t lse_bytes = (B * H * S * sizeof(float) + 255) / 256 * 256;
  static constexpr std::size_t out_elements = B * S * H * D;
  static constexpr bool fits = lse_bytes + out_elements * sizeof(T) <= B * H * S * S * sizeof(T);
  static float* lse(T* att) { return reinterpret_cast<float*>(att); }
  static const float* lse(const T* att) { return reinterpret_cast<const float*>(att); }
  static T* out(T* att) { return reinterpret_cast<T*>(reinterpret_cast<char*>(att) + lse_bytes); }
  static const T* out(const T* att) { return reinterpret_cast<const T*>(reinterpret_cast<const char*>(att) + lse_bytes); }
};

// WEFT_CUDA_ATTENTION=cublas: the cuBLASLt attention for every shape (read once per process).
inline bool attention_forced_cublas() {
  static const bool forced = [] {
    const char* e = std::getenv("WEFT_CUDA_ATTENTION");
    return e != nullptr && std::string_view(e) == "cublas";
  }();
  return forced;
}

template <std::size_t B, std::size_t S, std::size_t H, std::size_t D, class T>
inline constexpr bool mma_attention_eligible =
    k::mma_attention_shape<T, D> && flash_kept<B, S, H, D, T>::fits;

// Whether this call takes the tensor-core flash bodies: an eligible shape, not overridden, and
// `att` (row statistics, output copy) and `qkv` 16-byte aligned. Forward and backward see the same
// two buffers, so they always agree on what `att` holds. (Other buffers may sit anywhere.)
template <std::size_t B, std::size_t S, std::size_t H, std::size_t D, class T>
bool use_mma_attention(const T* att, const T* qkv) {
  if constexpr (!mma_attention_eligible<B, S, H, D, T>) {
    return false;
  } else {
    return !attention_forced_cublas() && reinterpret_cast<std::uintptr_t>(att) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(qkv) % 16 == 0;
  }
}
}  // namespace detail

#if defined(WEFT_CUDA_SIMT_ATTENTION)
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::attention_forward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* out, T* att, const T* qkv) {
  using kept = detail::flash_kept<B, S, H, D, T>;
  static_assert(kept::fits,
                "weft::cuda::attention_forward: the sequence is too short for the kept buffer to hold the row "
                "log-sum-exp and the output (needs seq >= head size + a few). Use a longer sequence on the CUDA backend.");
  check(k::launch_flash_attention_forward<B, S, H, KVH, D, W>(c.stream, out, kept::lse(att), qkv), "attention_forward");
  check(k::launch_copy(c.stream, kept::out(att), out, kept::out_elements), "attention_forward(keep output)");
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::attention_backward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* dqkv, T* /*scratch*/, const T* dout,
             const T* qkv, const T* att) {
  using kept = detail::flash_kept<B, S, H, D, T>;
  check(k::launch_flash_attention_backward<B, S, H, KVH, D, W>(c.stream, dqkv, dout, qkv, kept::out(att), kept::lse(att)),
        "attention_backward");
}
#else
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::attention_forward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* out, T* att, const T* qkv) {
  if constexpr (detail::mma_attention_eligible<B, S, H, D, T>) {
    if (detail::use_mma_attention<B, S, H, D>(att, qkv)) {
      using kept = detail::flash_kept<B, S, H, D, T>;  // the row-statistics op, then the output kept
      op_impl(ops::flash_attention_forward_op<B, S, H, KVH, D, W>{}, c, out, kept::lse(att), qkv);
      check(k::launch_copy(c.stream, kept::out(att), out, kept::out_elements), "attention_forward(keep output)");
      return;
    }
  }
  attention_forward_tc<B, S, H, KVH, D, W>(c, out, att, qkv);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W, device_element T>
void op_impl(ops::attention_backward_op<B, S, H, KVH, D, W>, const cuda_context& c, T* dqkv, T* scratch, const T* dout,
             const T* qkv, const T* att) {
  if constexpr (detail::mma_attention_eligible<B, S, H, D, T>) {
    if (detail::use_mma_attention<B, S, H, D>(att, qkv)) {
      using kept = detail::flash_kept<B, S, H, D, T>;
      op_impl(ops::flash_attention_backward_op<B, S, H, KVH, D, W>{}, c, dqkv, dout, qkv, kept::out(att),
              static_cast<const float*>(kept::lse(att)));
      return;
    }
  }
  attention_backward_tc<B, S, H, KVH, D, W>(c, dqkv, scratch, dout, qkv, att);
}
#endif

// ---- fused softmax + cross-entropy: f32 losses ----
template <std::size_t N, std::size_t V, device_element T>
void op_impl(ops::softmax_cross_entropy_forward_backward_op<N, V>, const cuda_context& c, float* losses,
             T* logits_to_dlogits, const std::int32_t* targets, float dloss) {
  check(k::launch_softmax_cross_entropy_forward_backward<N, V, V>(c.stream, losses, logits_to_dlogits, targets, dloss),
        "softmax_cross_entropy_forward_backward");
}
template <std::size_t N, std::size_t V, device_element T>
void op_impl(ops::softmax_cross_entropy_forward_op<N, V>, const cuda_context& c, float* losses, const T* logits,
             const std::int32_t* targets) {
  check(k::launch_softmax_cross_entropy_forward<N, V, V>(c.stream, losses, logits, targets),
        "softmax_cross_entropy_forward");
}

}  // namespace weft::cuda
