// cuBLASLt descriptor, layout and epilogue choices of backend/cuda/gemm.cuh, checked without a
// device: (1) the plans are what a column-major reading of weft's row-major buffers needs,
// (2) cuBLASLt accepts them (descriptors and layouts are created on the host) and reports the
// attributes back, and (3) a host interpreter of a plan — column-major op(A) op(B), beta, and
// the epilogue as cuBLASLt documents it — reproduces the host ops (matmul forward/backward,
// gelu forward/backward, bias gradient) on random data. Exit 0 pass, 1 fail.
#include <weft/backend/cuda/gemm.cuh>
#include <weft/ops/gelu.hpp>
#include <weft/ops/matmul.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace wc = weft::cuda;
using lp = wc::linear_product;
using ep = wc::gemm_epilogue;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}

// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t N, std::size_t C, std::size_t OC>
void ref_matmul_forward(double* out, const double* in, const double* w, const double* b) {
  weft::ops::matmul_forward<N, C, OC>(weft::host_context{}, out, in, w, b);
}
template <std::size_t N, std::size_t C, std::size_t OC>
void ref_matmul_backward(double* din, double* dw, double* db, const double* dout, const double* in, const double* w) {
  weft::ops::matmul_backward<N, C, OC>(weft::host_context{}, din, dw, db, dout, in, w);
}
template <std::size_t N>
void ref_gelu_forward(double* out, const double* in) { weft::ops::gelu_forward<N>(weft::host_context{}, out, in); }
template <std::size_t N>
void ref_gelu_backward(double* din, const double* in, const double* dout) {
  weft::ops::gelu_backward<N>(weft::host_context{}, din, in, dout);
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_grad(double x) {
  const double k = 0.7978845608028654, c = 0.044715, t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
}

// ---- what cuBLASLt computes for a plan, on the host (column-major, as documented) ----
// D(m, n) = epilogue(op(A) op(B) + beta D); bias/aux as the epilogue says.
void interpret(const wc::gemm_plan& p, const double* a, const double* b, double* d, double* bias, double* aux) {
  auto A = [&](std::size_t i, std::size_t l) {  // op(A)(i, l), i < m, l < k
    return p.trans_a == CUBLAS_OP_N ? a[i + l * p.lda] : a[l + i * p.lda];
  };
  auto B = [&](std::size_t l, std::size_t j) {  // op(B)(l, j), l < k, j < n
    return p.trans_b == CUBLAS_OP_N ? b[l + j * p.ldb] : b[j + l * p.ldb];
  };
  for (std::size_t j = 0; j < p.n; ++j)
    for (std::size_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (std::size_t l = 0; l < p.k; ++l) s += A(i, l) * B(l, j);
      double& out = d[i + j * p.ldc];
      double x = s + p.beta * out;
      switch (p.epilogue) {
        case CUBLASLT_EPILOGUE_BIAS: x += bias[i]; break;
        case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
          x += bias[i];
          aux[i + j * p.aux_ld] = x;
          x = gelu(x);
          break;
        case CUBLASLT_EPILOGUE_DGELU: x *= gelu_grad(aux[i + j * p.aux_ld]); break;
        default: break;
      }
      out = x;
    }
  if (p.epilogue == CUBLASLT_EPILOGUE_BGRADB)  // bias gradient over the k dimension of op(B)
    for (std::size_t j = 0; j < p.n; ++j) {
      double s = 0;
      for (std::size_t l = 0; l < p.k; ++l) s += B(l, j);
      bias[j] = s;
    }
}

double max_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double e = 0;
  for (std::size_t i = 0; i < x.size(); ++i) e = std::max(e, std::fabs(x[i] - y[i]));
  return e;
}

std::vector<double> random(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// ---- (2) cuBLASLt accepts the plan and reports it back ----
template <class T>
void check_descriptors(const wc::gemm_plan& p, const char* name) {
  int dummy_bias = 0, dummy_aux = 0;
  wc::gemm_descriptors g(p, &dummy_bias, &dummy_aux);
  std::printf("  %-34s status %d\n", name, static_cast<int>(g.status()));
  expect(g.status() == CUBLAS_STATUS_SUCCESS, name);
  if (g.status() != CUBLAS_STATUS_SUCCESS) return;
  std::size_t written = 0;
  cublasOperation_t ta{}, tb{};
  cublasLtEpilogue_t e{};
  cublasLtMatmulDescGetAttribute(g.op(), CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta, &written);
  cublasLtMatmulDescGetAttribute(g.op(), CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb, &written);
  cublasLtMatmulDescGetAttribute(g.op(), CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e, &written);
  expect(ta == p.trans_a && tb == p.trans_b && e == p.epilogue, "descriptor reports the plan's ops and epilogue");
  if (p.aux_ld != 0) {
    std::int64_t ld = 0;
    cublasLtMatmulDescGetAttribute(g.op(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld, &written);
    expect(ld == p.aux_ld, "descriptor reports the aux leading dimension");
  }
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
  cudaDataType_t type{};
  cublasLtMatrixLayoutGetAttribute(g.d(), CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written);
  cublasLtMatrixLayoutGetAttribute(g.d(), CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &written);
  cublasLtMatrixLayoutGetAttribute(g.d(), CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &written);
  cublasLtMatrixLayoutGetAttribute(g.d(), CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, &written);
  expect(rows == p.m && cols == p.n && ld == p.ldc && type == wc::detail::cuda_data_type<T>(),
         "D layout reports m x n, ldc and the dtype");
  cublasLtMatrixLayoutGetAttribute(g.a(), CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written);
  cublasLtMatrixLayoutGetAttribute(g.a(), CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &written);
  expect(rows == p.a_rows && cols == p.a_cols, "A layout reports its stored shape");
  // op(A) is m x k and op(B) is k x n
  const std::uint64_t am = p.trans_a == CUBLAS_OP_N ? p.a_rows : p.a_cols;
  const std::uint64_t ak = p.trans_a == CUBLAS_OP_N ? p.a_cols : p.a_rows;
  const std::uint64_t bk = p.trans_b == CUBLAS_OP_N ? p.b_rows : p.b_cols;
  const std::uint64_t bn = p.trans_b == CUBLAS_OP_N ? p.b_cols : p.b_rows;
  expect(am == p.m && ak == p.k && bk == p.k && bn == p.n, "op(A) op(B) shapes agree with m, n, k");
}

}  // namespace

int main() {
  // ---- (1) compile-time choices at GPT-2 sizes ----
  constexpr auto fc = wc::linear_gemm_plan<4096, 768, 3072, weft::bf16, lp::forward, ep::gelu_aux>();
  static_assert(fc.m == 3072 && fc.n == 4096 && fc.k == 768 && fc.trans_a == CUBLAS_OP_T && fc.trans_b == CUBLAS_OP_N);
  static_assert(fc.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS && fc.aux_ld == 3072 && fc.bias_length == 3072);
  static_assert(fc.io_type == CUDA_R_16BF && fc.compute == CUBLAS_COMPUTE_32F && fc.beta == 0);
  static_assert(wc::aux_ld_ok(fc));
  constexpr auto bw = wc::linear_gemm_plan<4096, 768, 3072, weft::bf16, lp::backward_weight, ep::bgradb>();
  static_assert(bw.m == 768 && bw.n == 3072 && bw.k == 4096 && bw.trans_b == CUBLAS_OP_T && bw.beta == 1);
  static_assert(bw.epilogue == CUBLASLT_EPILOGUE_BGRADB && bw.bias_length == 3072);
  constexpr auto bi = wc::linear_gemm_plan<4096, 3072, 768, float, lp::backward_input, ep::dgelu>();
  static_assert(bi.m == 3072 && bi.k == 768 && bi.epilogue == CUBLASLT_EPILOGUE_DGELU && bi.beta == 0);
  static_assert(bi.io_type == CUDA_R_32F);

  // ---- (2) descriptors ----
  std::printf("cuBLASLt descriptors (no device needed):\n");
  check_descriptors<weft::bf16>(fc, "fc forward gelu_aux bf16");
  check_descriptors<weft::bf16>(bw, "backward weight bgradb bf16");
  check_descriptors<float>(bi, "backward input dgelu f32");
  check_descriptors<weft::bf16>(wc::linear_gemm_plan<4096, 768, 2304, weft::bf16, lp::forward, ep::bias>(),
                                "qkv forward bias bf16");
  check_descriptors<weft::bf16>(wc::linear_gemm_plan<4096, 768, 50304, weft::bf16, lp::forward>(),
                                "lm head forward bf16");
  check_descriptors<double>(wc::linear_gemm_plan<64, 32, 16, double, lp::backward_input>(), "backward input f64");

  // ---- (3) the plans, interpreted, reproduce the host ops ----
  constexpr std::size_t N = 6, C = 8, OC = 16;
  std::mt19937 rng(90);
  const auto inp = random(N * C, rng), w = random(OC * C, rng), bias = random(OC, rng), dout = random(N * OC, rng);
  // forward + bias, and forward + bias + GELU keeping its input
  {
    std::vector<double> ref(N * OC), got(N * OC), gelu_ref(N * OC), gelu_got(N * OC), aux(N * OC);
    ref_matmul_forward<N, C, OC>(ref.data(), inp.data(), w.data(), bias.data());
    auto b = bias;
    interpret(wc::linear_gemm_plan<N, C, OC, double, lp::forward, ep::bias>(), w.data(), inp.data(), got.data(),
              b.data(), nullptr);
    const double e1 = max_diff(got, ref);
    ref_gelu_forward<N * OC>(gelu_ref.data(), ref.data());
    interpret(wc::linear_gemm_plan<N, C, OC, double, lp::forward, ep::gelu_aux>(), w.data(), inp.data(),
              gelu_got.data(), b.data(), aux.data());
    const double e2 = max_diff(gelu_got, gelu_ref), e3 = max_diff(aux, ref);
    std::printf("forward+bias max err %.2e; forward+gelu_aux out %.2e aux %.2e\n", e1, e2, e3);
    expect(e1 < 1e-12 && e2 < 1e-12 && e3 < 1e-12, "forward plans reproduce matmul_forward (+ gelu_forward)");
  }
  // backward: dinp (accumulate), dweight (accumulate), dbias via BGRADB (written)
  {
    auto din_ref = random(N * C, rng), dw_ref = random(OC * C, rng);
    auto din_got = din_ref, dw_got = dw_ref;
    std::vector<double> db_ref(OC, 0.0), db_got(OC, -7.0);
    ref_matmul_backward<N, C, OC>(din_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), w.data());
    interpret(wc::linear_gemm_plan<N, C, OC, double, lp::backward_input>(), w.data(), dout.data(), din_got.data(),
              nullptr, nullptr);
    interpret(wc::linear_gemm_plan<N, C, OC, double, lp::backward_weight, ep::bgradb>(), inp.data(), dout.data(),
              dw_got.data(), db_got.data(), nullptr);
    const double e1 = max_diff(din_got, din_ref), e2 = max_diff(dw_got, dw_ref), e3 = max_diff(db_got, db_ref);
    std::printf("backward dinp max err %.2e, dweight %.2e, dbias (bgradb) %.2e\n", e1, e2, e3);
    expect(e1 < 1e-12 && e2 < 1e-12 && e3 < 1e-12, "backward plans reproduce matmul_backward");
  }
  // DGELU: the gradient of an fc's pre-activation from the next product's dout
  {
    constexpr std::size_t H = OC;  // the fc output (pre-activation) width feeding a proj of C outputs
    const auto pre = random(N * H, rng), w2 = random(C * H, rng), dout2 = random(N * C, rng);
    std::vector<double> dact(N * H, 0.0), dpre_ref(N * H, 0.0), dpre_got(N * H, 0.0), dw2(C * H, 0.0);
    ref_matmul_backward<N, H, C>(dact.data(), dw2.data(), nullptr, dout2.data(), pre.data(), w2.data());
    ref_gelu_backward<N * H>(dpre_ref.data(), pre.data(), dact.data());
    auto aux = pre;
    interpret(wc::linear_gemm_plan<N, H, C, double, lp::backward_input, ep::dgelu>(), w2.data(), dout2.data(),
              dpre_got.data(), nullptr, aux.data());
    const double e = max_diff(dpre_got, dpre_ref);
    std::printf("backward input + dgelu max err %.2e\n", e);
    expect(e < 1e-12, "dgelu plan reproduces matmul_backward then gelu_backward");
  }
  std::printf(failures == 0 ? "PASS\n" : "FAILED (%d)\n", failures);
  return failures == 0 ? 0 : 1;
}
