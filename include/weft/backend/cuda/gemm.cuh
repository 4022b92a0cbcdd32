#pragma once
// ---- matrix products through cuBLASLt: the descriptor, layout and epilogue choices ----
// weft's buffers are row-major; cuBLASLt is column-major. A row-major (R, C) buffer read
// column-major is its transpose (C, R) with leading dimension C, so each product of a linear
// layer (weight stored like nn.Linear, (OC, C)) becomes, with no copy:
//   forward          out(N, OC) = inp(N, C) · W^T + bias
//                    D(OC x N) = op_T(A = W as C x OC) · op_N(B = inp as C x N)      m=OC n=N  k=C
//   backward input   dinp(N, C) (+)= dout(N, OC) · W
//                    D(C x N)  = op_N(A = W as C x OC) · op_N(B = dout as OC x N)    m=C  n=N  k=OC
//   backward weight  dW(OC, C) += dout^T · inp
//                    D(C x OC) = op_N(A = inp as C x N) · op_T(B = dout as OC x N)   m=C  n=OC k=N
// Epilogues: BIAS (a length-m vector, i.e. per output feature) and GELU_AUX_BIAS (D = gelu(x),
// the pre-activation x kept in the aux buffer, ld = m) on the forward; DGELU (D ⊙= gelu'(aux))
// on backward-input into a GELU layer's pre-activation; BGRADB (dbias = Σ over k of B's rows:
// the column sums of dout) on backward-weight. `linear_gemm_plan` is that table as a constexpr
// function of the compile-time sizes, the dtype, the product and the epilogue, returning a
// plain struct; `gemm_descriptors` turns a plan into cuBLASLt objects (no device needed);
// `gemm_run` executes one (needs a device, a handle and a workspace).
#include "weft/core/dtype.hpp"  // bf16, f32

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace weft::cuda {

/// Which product of a linear layer.
enum class linear_product { forward, backward_input, backward_weight };

/// Fused work after the product.
enum class gemm_epilogue {
  none,       ///< D = alpha AB + beta C
  bias,       ///< + bias (forward)
  gelu_aux,   ///< + bias, then GELU; the pre-activation is written to aux (forward of an MLP's fc)
  dgelu,      ///< ⊙ gelu'(aux) (backward input into the fc's pre-activation)
  bgradb,     ///< and dbias = column sums of dout (backward weight)
};

/// Everything cuBLASLt is told about one product, as plain values.
struct gemm_plan {
  cublasOperation_t trans_a, trans_b;
  std::uint64_t m, n, k;            // D is m x n (column-major)
  std::int64_t lda, ldb, ldc;       // A, B as stored; C and D share ldc
  std::uint64_t a_rows, a_cols;     // A's stored (column-major) shape
  std::uint64_t b_rows, b_cols;     // B's stored shape
  cudaDataType_t io_type;           // A, B, C, D
  cublasComputeType_t compute;      // accumulation
  cudaDataType_t scale_type;        // alpha, beta
  cublasLtEpilogue_t epilogue;
  float beta;                       // 0 overwrite, 1 accumulate
  std::int64_t aux_ld;              // for gelu_aux / dgelu (0 otherwise)
  std::uint64_t bias_length;        // bias (forward) or bias gradient (bgradb) length, 0 if none
};

namespace detail {
template <class T>
constexpr cudaDataType_t cuda_data_type() {
  if constexpr (std::is_same_v<T, bf16>) return CUDA_R_16BF;
  else if constexpr (std::is_same_v<T, f16>) return CUDA_R_16F;
  else if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  else return CUDA_R_64F;
}
}  // namespace detail

/// The plan of product P of a linear layer (N rows, C in, OC out features) in T with epilogue E.
/// Reduced-precision inputs accumulate in f32; f64 in f64.
template <std::size_t N, std::size_t C, std::size_t OC, class T, linear_product P, gemm_epilogue E = gemm_epilogue::none>
constexpr gemm_plan linear_gemm_plan() {
  constexpr bool fwd = P == linear_product::forward;
  constexpr bool bin = P == linear_product::backward_input;
  static_assert(!(E == gemm_epilogue::bias || E == gemm_epilogue::gelu_aux) || fwd,
                "weft::cuda::gemm: the bias and GELU epilogues belong to the forward product. Use them on "
                "linear_product::forward.");
  static_assert(E != gemm_epilogue::dgelu || bin,
                "weft::cuda::gemm: the GELU-gradient epilogue belongs to the backward-input product.");
  static_assert(E != gemm_epilogue::bgradb || P == linear_product::backward_weight,
                "weft::cuda::gemm: the bias-gradient epilogue belongs to the backward-weight product.");
  gemm_plan p{};
  if constexpr (fwd) {
    p.trans_a = CUBLAS_OP_T, p.trans_b = CUBLAS_OP_N;
    p.m = OC, p.n = N, p.k = C;
    p.a_rows = C, p.a_cols = OC, p.lda = C;  // W (OC, C) row-major
    p.b_rows = C, p.b_cols = N, p.ldb = C;   // inp (N, C)
    p.ldc = OC;                              // out (N, OC)
    p.beta = 0;
  } else if constexpr (bin) {
    p.trans_a = CUBLAS_OP_N, p.trans_b = CUBLAS_OP_N;
    p.m = C, p.n = N, p.k = OC;
    p.a_rows = C, p.a_cols = OC, p.lda = C;   // W (OC, C)
    p.b_rows = OC, p.b_cols = N, p.ldb = OC;  // dout (N, OC)
    p.ldc = C;                                // dinp (N, C)
    p.beta = E == gemm_epilogue::dgelu ? 0.0f : 1.0f;  // the pre-activation gradient is fresh; dinp accumulates
  } else {
    p.trans_a = CUBLAS_OP_N, p.trans_b = CUBLAS_OP_T;
    p.m = C, p.n = OC, p.k = N;
    p.a_rows = C, p.a_cols = N, p.lda = C;    // inp (N, C)
    p.b_rows = OC, p.b_cols = N, p.ldb = OC;  // dout (N, OC)
    p.ldc = C;                                // dW (OC, C)
    p.beta = 1;                               // weight gradients accumulate
  }
  p.io_type = detail::cuda_data_type<T>();
  p.compute = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  p.scale_type = std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;
  switch (E) {
    case gemm_epilogue::none: p.epilogue = CUBLASLT_EPILOGUE_DEFAULT; break;
    case gemm_epilogue::bias: p.epilogue = CUBLASLT_EPILOGUE_BIAS, p.bias_length = p.m; break;
    case gemm_epilogue::gelu_aux:
      p.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS, p.bias_length = p.m, p.aux_ld = static_cast<std::int64_t>(p.m);
      break;
    case gemm_epilogue::dgelu: p.epilogue = CUBLASLT_EPILOGUE_DGELU, p.aux_ld = static_cast<std::int64_t>(p.m); break;
    case gemm_epilogue::bgradb: p.epilogue = CUBLASLT_EPILOGUE_BGRADB, p.bias_length = p.n; break;
  }
  return p;
}

/// Whether cuBLASLt accepts the plan's aux buffer: its ld must be a multiple of 8 (and >= m).
constexpr bool aux_ld_ok(const gemm_plan& p) { return p.aux_ld == 0 || (p.aux_ld % 8 == 0 && p.aux_ld >= std::int64_t(p.m)); }

/// The cuBLASLt objects of one plan: an operation descriptor and four matrix layouts. Created
/// on the host, no device needed; destroyed with the object. `status` is the first failure.
class gemm_descriptors {
 public:
  /// bias: the forward bias (read) or the bias gradient (written, bgradb); aux: the GELU
  /// pre-activation (written by gelu_aux, read by dgelu). Either may be null where unused.
  explicit gemm_descriptors(const gemm_plan& p, const void* bias = nullptr, const void* aux = nullptr) {
    ok(cublasLtMatmulDescCreate(&op_, p.compute, p.scale_type));
    ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &p.trans_a, sizeof p.trans_a));
    ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &p.trans_b, sizeof p.trans_b));
    ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &p.epilogue, sizeof p.epilogue));
    if (p.bias_length != 0) {
      ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
      ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &p.io_type, sizeof p.io_type));
    }
    if (p.aux_ld != 0) {
      ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
      ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &p.aux_ld, sizeof p.aux_ld));
      ok(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &p.io_type,
                                        sizeof p.io_type));
    }
    ok(cublasLtMatrixLayoutCreate(&a_, p.io_type, p.a_rows, p.a_cols, p.lda));
    ok(cublasLtMatrixLayoutCreate(&b_, p.io_type, p.b_rows, p.b_cols, p.ldb));
    ok(cublasLtMatrixLayoutCreate(&c_, p.io_type, p.m, p.n, p.ldc));
    ok(cublasLtMatrixLayoutCreate(&d_, p.io_type, p.m, p.n, p.ldc));
  }
  gemm_descriptors(const gemm_descriptors&) = delete;
  gemm_descriptors& operator=(const gemm_descriptors&) = delete;
  ~gemm_descriptors() {
    if (d_) cublasLtMatrixLayoutDestroy(d_);
    if (c_) cublasLtMatrixLayoutDestroy(c_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (op_) cublasLtMatmulDescDestroy(op_);
  }

  /// Points the epilogue at other bias / aux buffers (the same plan over other layers' buffers).
  cublasStatus_t set_epilogue_pointers(const gemm_plan& p, const void* bias, const void* aux) {
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (p.bias_length != 0)
      s = cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (s == CUBLAS_STATUS_SUCCESS && p.aux_ld != 0)
      s = cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
    return s;
  }
  cublasStatus_t status() const { return status_; }
  cublasLtMatmulDesc_t op() const { return op_; }
  cublasLtMatrixLayout_t a() const { return a_; }
  cublasLtMatrixLayout_t b() const { return b_; }
  cublasLtMatrixLayout_t c() const { return c_; }
  cublasLtMatrixLayout_t d() const { return d_; }

 private:
  void ok(cublasStatus_t s) {
    if (status_ == CUBLAS_STATUS_SUCCESS) status_ = s;
  }
  cublasStatus_t status_ = CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
};

/// The largest power of two, at most 256, that divides the address: the alignment cuBLASLt is
/// told a buffer has. cuBLASLt's heuristic otherwise assumes 256 bytes and may pick a kernel that
/// a less aligned buffer makes fail (CUBLAS_STATUS_EXECUTION_FAILED) or refuse
/// (CUBLAS_STATUS_NOT_SUPPORTED).
inline std::uint32_t pointer_alignment(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t r = 256;
  while (r > 1 && a % r != 0) r /= 2;
  return r;
}

/// Chooses the algorithm of a plan for buffers of the given alignments (bytes) within
/// `workspace_bytes`: cuBLASLt's first heuristic choice. CUBLAS_STATUS_NOT_SUPPORTED when it has
/// none. Needs a handle, not a device.
inline cublasStatus_t gemm_select(cublasLtHandle_t handle, const gemm_descriptors& g, std::size_t workspace_bytes,
                                  std::uint32_t align_a, std::uint32_t align_b, std::uint32_t align_d,
                                  cublasLtMatmulAlgo_t& algo) {
  if (g.status() != CUBLAS_STATUS_SUCCESS) return g.status();
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  auto set = [&](cublasLtMatmulPreferenceAttributes_t a, const auto& v) {
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, a, &v, sizeof v);
  };
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);  // C is D (accumulation in place)
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(handle, g.op(), g.a(), g.b(), g.c(), g.d(), pref, 1, &heuristic, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (found == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  algo = heuristic.algo;
  return CUBLAS_STATUS_SUCCESS;
}

/// Runs a plan with a chosen algorithm: D = epilogue(alpha op(A) op(B) + beta C), C = D.
inline cublasStatus_t gemm_execute(cublasLtHandle_t handle, cudaStream_t stream, const gemm_plan& p,
                                   const gemm_descriptors& g, const cublasLtMatmulAlgo_t& algo, const void* a,
                                   const void* b, void* d, void* workspace, std::size_t workspace_bytes) {
  const float alpha = 1.0f, beta = p.beta;
  const double alpha_d = 1.0, beta_d = p.beta;
  const bool f64 = p.scale_type == CUDA_R_64F;
  return cublasLtMatmul(handle, g.op(), f64 ? static_cast<const void*>(&alpha_d) : &alpha, a, g.a(), b, g.b(),
                        f64 ? static_cast<const void*>(&beta_d) : &beta, d, g.c(), d, g.d(), &algo, workspace,
                        workspace_bytes, stream);
}

/// Chooses and runs a plan in one call (the algorithm for these buffers' alignments). Needs a
/// device, a handle and a workspace. A step caches the choice instead (ops.cuh).
inline cublasStatus_t gemm_run(cublasLtHandle_t handle, cudaStream_t stream, const gemm_plan& p,
                               const gemm_descriptors& g, const void* a, const void* b, void* d, void* workspace,
                               std::size_t workspace_bytes) {
  cublasLtMatmulAlgo_t algo{};
  const cublasStatus_t s = gemm_select(handle, g, workspace_bytes, pointer_alignment(a), pointer_alignment(b),
                                       pointer_alignment(d), algo);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return gemm_execute(handle, stream, p, g, algo, a, b, d, workspace, workspace_bytes);
}

}  // namespace weft::cuda
