#pragma once
// ---- causal attention on tensor cores: cuBLASLt products around weft's row kernels ----
// The CUDA body of ops::attention_forward / attention_backward (ops.cuh), with the host op's
// contract: `att` (B, H, S, S) keeps the probabilities (0 past the query, and before the sliding
// window of W keys when W > 0), `scratch` (B, H, S, S) receives d(scores), and dqkv accumulates.
// Per batch element, over chunks of heads:
//   forward   scores = scale·Q·Kᵀ (cuBLASLt, f32 out, in the context's scratch)
//             P = causal softmax(scores) -> att               (causal_softmax_rows)
//             out = P·V                                        (cuBLASLt)
//   backward  dP = dout·Vᵀ (f32, scratch)                      (cuBLASLt)
//             dS = P ⊙ (dP - Σ P·dP) -> scratch               (attention_dscores_rows)
//             dQ += scale·dS·K, dK += scale·dSᵀ·Q, dV += Pᵀ·dout   (cuBLASLt, accumulate)
// Every product reads the packed qkv (B, S, (H + 2·KVH)·D) in place through leading dimensions
// and batch strides (heads D apart, score matrices S·S apart): no transposes, no copies. With
// grouped-query heads (KVH < H) the products run per query head, its kv head's gradients
// accumulating in order. The f32 score chunk is borrowed from the context's scratch (S·S·4
// bytes per head; a clear error when one head does not fit). The products compute the whole
// S×S square, masked afterwards by the row kernels (causal, and the window): twice the causal
// FLOPs, on tensor cores, and more than that with a window, whose band the products do not
// skip; the tensor-core flash kernels (kernels/flash_attention.hpp) skip both.
#include "weft/backend/cuda/context.cuh"                  // cuda_context, check, cuda_error
#include "weft/backend/cuda/gemm.cuh"                     // detail::cuda_data_type, pointer_alignment
#include "weft/backend/cuda/kernels/attention_rows.cuh"  // launch_causal_softmax_rows, launch_attention_dscores_rows

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace weft::cuda {

/// One strided-batched product, column-major: D(m×n) = alpha·op(A)·op(B) + beta·D, `batch`
/// times, the i-th at A + i·stride_a, B + i·stride_b, D + i·stride_d (elements). A and B are
/// `ab_type`, C = D is `d_type`; f32 accumulation.
struct batched_gemm {
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  std::uint64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  std::int32_t batch = 1;
  cudaDataType_t ab_type = CUDA_R_32F, d_type = CUDA_R_32F;
  friend bool operator==(const batched_gemm&, const batched_gemm&) = default;
};

namespace detail {
// The cuBLASLt objects of one batched_gemm and the algorithm chosen for it (see run_batched).
class batched_gemm_choice {
 public:
  batched_gemm_choice(const batched_gemm& g, cublasLtHandle_t h, std::size_t ws, std::uint32_t al_a,
                      std::uint32_t al_b, std::uint32_t al_d) {
    const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    const cudaDataType_t scale = CUDA_R_32F;
    ok(cublasLtMatmulDescCreate(&op_, compute, scale));
    ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &g.trans_a, sizeof g.trans_a));
    ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &g.trans_b, sizeof g.trans_b));
    const bool na = g.trans_a == CUBLAS_OP_N, nb = g.trans_b == CUBLAS_OP_N;
    layout(a_, g.ab_type, na ? g.m : g.k, na ? g.k : g.m, g.lda, g.stride_a, g.batch);
    layout(b_, g.ab_type, nb ? g.k : g.n, nb ? g.n : g.k, g.ldb, g.stride_b, g.batch);
    layout(d_, g.d_type, g.m, g.n, g.ldd, g.stride_d, g.batch);
    cublasLtMatmulPreference_t pref = nullptr;
    ok(cublasLtMatmulPreferenceCreate(&pref));
    auto set = [&](cublasLtMatmulPreferenceAttributes_t a, const auto& v) {
      ok(cublasLtMatmulPreferenceSetAttribute(pref, a, &v, sizeof v));
    };
    set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al_a);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al_b);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al_d);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al_d);
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    if (status_ == CUBLAS_STATUS_SUCCESS)
      ok(cublasLtMatmulAlgoGetHeuristic(h, op_, a_, b_, d_, d_, pref, 1, &r, &found));
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (status_ == CUBLAS_STATUS_SUCCESS && found == 0) status_ = CUBLAS_STATUS_NOT_SUPPORTED;
    algo_ = r.algo;
  }
  batched_gemm_choice(const batched_gemm_choice&) = delete;
  batched_gemm_choice& operator=(const batched_gemm_choice&) = delete;
  ~batched_gemm_choice() {
    for (auto* l : {d_, b_, a_})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (op_) cublasLtMatmulDescDestroy(op_);
  }
  cublasStatus_t status() const { return status_; }
  cublasStatus_t run(cublasLtHandle_t h, cudaStream_t s, float alpha, float beta, const void* a, const void* b, void* d,
                     void* ws, std::size_t ws_bytes) const {
    return cublasLtMatmul(h, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_, ws, ws_bytes, s);
  }

 private:
  void ok(cublasStatus_t s) {
    if (status_ == CUBLAS_STATUS_SUCCESS) status_ = s;
  }
  void layout(cublasLtMatrixLayout_t& l, cudaDataType_t t, std::uint64_t rows, std::uint64_t cols, std::int64_t ld,
              std::int64_t stride, std::int32_t batch) {
    ok(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
    if (batch > 1 && status_ == CUBLAS_STATUS_SUCCESS) {
      ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
      ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  cublasStatus_t status_ = CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// Runs `g`, its descriptors and algorithm chosen once per (shape, handle, workspace, alignments)
// and kept per thread, as the linear layers' products are (ops.cuh).
inline void run_batched(const cuda_context& c, const batched_gemm& g, float alpha, float beta, const void* a,
                        const void* b, void* d, const char* who) {
  struct entry {
    batched_gemm g;
    cublasLtHandle_t handle;
    std::size_t ws;
    std::uint32_t al[3];
    std::unique_ptr<batched_gemm_choice> choice;
  };
  thread_local std::vector<entry> cache;
  const std::uint32_t al[3] = {pointer_alignment(a), pointer_alignment(b), pointer_alignment(d)};
  const batched_gemm_choice* chosen = nullptr;
  for (const auto& e : cache)
    if (e.g == g && e.handle == c.blas && e.ws == c.blas_workspace_bytes &&
        std::memcmp(e.al, al, sizeof al) == 0)
      chosen = e.choice.get();
  if (chosen == nullptr) {
    auto choice = std::make_unique<batched_gemm_choice>(g, c.blas, c.blas_workspace_bytes, al[0], al[1], al[2]);
    if (choice->status() != CUBLAS_STATUS_SUCCESS)
      throw cuda_error(std::string("weft::cuda: ") + who + ": cuBLASLt has no algorithm (status " +
                       std::to_string(static_cast<int>(choice->status())) + ") for m=" + std::to_string(g.m) +
                       " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) + " batch=" + std::to_string(g.batch));
    chosen = choice.get();
    entry e{};
    e.g = g, e.handle = c.blas, e.ws = c.blas_workspace_bytes, std::memcpy(e.al, al, sizeof al);
    e.choice = std::move(choice);
    cache.push_back(std::move(e));
  }
  check(chosen->run(c.blas, c.stream, alpha, beta, a, b, d, c.blas_workspace, c.blas_workspace_bytes), who);
}

// Shapes of one attention, and the chunk of heads whose f32 scores fit the context's scratch.
template <std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, class T>
struct attention_shape {
  static constexpr std::size_t Ld = (H + 2 * KVH) * D;  // qkv row (the q, k and v products' leading dimension)
  static constexpr std::size_t HD = H * D;             // out row
  static constexpr std::size_t group = H / KVH;
  static constexpr std::size_t q_col(std::size_t h) { return h * D; }
  static constexpr std::size_t k_col(std::size_t h) { return (H + h / group) * D; }
  static constexpr std::size_t v_col(std::size_t h) { return (H + KVH + h / group) * D; }
  static constexpr cudaDataType_t type = detail::cuda_data_type<T>();

  static std::size_t heads_per_chunk(const cuda_context& c, const char* who) {
    const std::size_t per_head = S * S * sizeof(float);
    const std::size_t fit = c.scratch_bytes / per_head;
    if (fit == 0)
      throw cuda_error(std::string("weft::cuda: ") + who + " at sequence " + std::to_string(S) + " needs " +
                       std::to_string(per_head >> 20) + " MiB of scratch per head for its f32 scores; the context has " +
                       std::to_string(c.scratch_bytes >> 20) + " MiB. Give cuda_resources more scratch.");
    return std::min(fit, H);
  }
  // scores(S_k × S_q, column-major) of heads [h, h + n): alpha·K·Qᵀ, i.e. row-major (S_q, S_k) = alpha·Q·Kᵀ.
  static batched_gemm qk(std::size_t n) {
    return {CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, Ld, Ld, S, D, D, S * S, static_cast<std::int32_t>(n), type, CUDA_R_32F};
  }
  // out (D × S_q) = Vᵀ·Pᵀ, i.e. out = P·V; n heads.
  static batched_gemm pv(std::size_t n) {
    return {CUBLAS_OP_N, CUBLAS_OP_N, D, S, S, Ld, S, HD, D, S * S, D, static_cast<std::int32_t>(n), type, type};
  }
  // dP (S_k × S_q) = V·doutᵀ, i.e. dP = dout·Vᵀ (f32).
  static batched_gemm dov(std::size_t n) {
    return {CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, Ld, HD, S, D, D, S * S, static_cast<std::int32_t>(n), type, CUDA_R_32F};
  }
  // dQᵀ (D × S_q) += Kᵀ·dSᵀ.
  static batched_gemm dq(std::size_t n) {
    return {CUBLAS_OP_N, CUBLAS_OP_N, D, S, S, Ld, S, Ld, D, S * S, D, static_cast<std::int32_t>(n), type, type};
  }
  // dKᵀ (D × S_k) += Qᵀ·dS.
  static batched_gemm dk(std::size_t n) {
    return {CUBLAS_OP_N, CUBLAS_OP_T, D, S, S, Ld, S, Ld, D, S * S, D, static_cast<std::int32_t>(n), type, type};
  }
  // dVᵀ (D × S_k) += doutᵀ·P.
  static batched_gemm dv(std::size_t n) {
    return {CUBLAS_OP_N, CUBLAS_OP_T, D, S, S, HD, S, Ld, D, S * S, D, static_cast<std::int32_t>(n), type, type};
  }
};
}  // namespace detail

/// out (B, S, H·D) = causal attention of qkv (a sliding window of W keys when W > 0); att (B, H,
/// S, S) = the probabilities.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
void attention_forward_tc(const cuda_context& c, T* out, T* att, const T* qkv) {
  using sh = detail::attention_shape<S, H, KVH, D, T>;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::size_t chunk = sh::heads_per_chunk(c, "attention_forward");
  float* scores = c.borrow<float>(chunk * S * S, 0, "attention_forward");
  for (std::size_t b = 0; b < B; ++b) {
    const T* x = qkv + b * S * sh::Ld;
    T* pb = att + b * H * S * S;
    for (std::size_t h0 = 0; h0 < H; h0 += chunk) {
      const std::size_t n = std::min(chunk, H - h0);
      if constexpr (sh::group == 1) {
        detail::run_batched(c, sh::qk(n), scale, 0.0f, x + sh::k_col(h0), x + sh::q_col(h0), scores, "attention_forward(QKᵀ)");
      } else {
        for (std::size_t h = h0; h < h0 + n; ++h)
          detail::run_batched(c, sh::qk(1), scale, 0.0f, x + sh::k_col(h), x + sh::q_col(h), scores + (h - h0) * S * S,
                              "attention_forward(QKᵀ)");
      }
      check(kernels::launch_causal_softmax_rows<S, W>(c.stream, static_cast<const float*>(scores), pb + h0 * S * S, n * S),
            "attention_forward(softmax)");
    }
    T* o = out + b * S * sh::HD;
    if constexpr (sh::group == 1) {
      detail::run_batched(c, sh::pv(H), 1.0f, 0.0f, x + sh::v_col(0), pb, o, "attention_forward(PV)");
    } else {
      for (std::size_t h = 0; h < H; ++h)
        detail::run_batched(c, sh::pv(1), 1.0f, 0.0f, x + sh::v_col(h), pb + h * S * S, o + h * D, "attention_forward(PV)");
    }
  }
}

/// dqkv += the gradient of attention_forward_tc (the same W); dscores (B, H, S, S) receives d(scores).
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
void attention_backward_tc(const cuda_context& c, T* dqkv, T* dscores, const T* dout, const T* qkv, const T* att) {
  using sh = detail::attention_shape<S, H, KVH, D, T>;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::size_t chunk = sh::heads_per_chunk(c, "attention_backward");
  float* dp = c.borrow<float>(chunk * S * S, 0, "attention_backward");
  for (std::size_t b = 0; b < B; ++b) {
    const T* x = qkv + b * S * sh::Ld;
    T* dx = dqkv + b * S * sh::Ld;
    const T* go = dout + b * S * sh::HD;
    const T* pb = att + b * H * S * S;
    T* ds = dscores + b * H * S * S;
    for (std::size_t h0 = 0; h0 < H; h0 += chunk) {
      const std::size_t n = std::min(chunk, H - h0);
      if constexpr (sh::group == 1) {
        detail::run_batched(c, sh::dov(n), 1.0f, 0.0f, x + sh::v_col(h0), go + h0 * D, dp, "attention_backward(dO·Vᵀ)");
      } else {
        for (std::size_t h = h0; h < h0 + n; ++h)
          detail::run_batched(c, sh::dov(1), 1.0f, 0.0f, x + sh::v_col(h), go + h * D, dp + (h - h0) * S * S,
                              "attention_backward(dO·Vᵀ)");
      }
      check(kernels::launch_attention_dscores_rows<S, W>(c.stream, static_cast<const float*>(dp), pb + h0 * S * S,
                                                      ds + h0 * S * S, n * S),
            "attention_backward(dscores)");
    }
    if constexpr (sh::group == 1) {
      detail::run_batched(c, sh::dq(H), scale, 1.0f, x + sh::k_col(0), ds, dx + sh::q_col(0), "attention_backward(dQ)");
      detail::run_batched(c, sh::dk(H), scale, 1.0f, x + sh::q_col(0), ds, dx + sh::k_col(0), "attention_backward(dK)");
      detail::run_batched(c, sh::dv(H), 1.0f, 1.0f, go, pb, dx + sh::v_col(0), "attention_backward(dV)");
    } else {
      for (std::size_t h = 0; h < H; ++h) {
        const T* dsh = ds + h * S * S;
        detail::run_batched(c, sh::dq(1), scale, 1.0f, x + sh::k_col(h), dsh, dx + sh::q_col(h), "attention_backward(dQ)");
        detail::run_batched(c, sh::dk(1), scale, 1.0f, x + sh::q_col(h), dsh, dx + sh::k_col(h), "attention_backward(dK)");
        detail::run_batched(c, sh::dv(1), 1.0f, 1.0f, go + h * D, pb + h * S * S, dx + sh::v_col(h), "attention_backward(dV)");
      }
    }
  }
}

}  // namespace weft::cuda
