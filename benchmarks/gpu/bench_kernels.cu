// benchmarks/gpu/bench_kernels.cu — each weft kernel timed on the device at GPT-2 124M's
// shapes (B=4, S=1024, C=768, 12 heads of 64, vocabulary 50257 padded to 50304), against the
// two ceilings measured in the same run: the device-to-device copy rate (bytes read + written)
// and cuBLASLt's bf16 matrix-product rate at 8192³ (random inputs). A memory-bound kernel is
// reported as the bytes it must move (each input read once, each output written once) over its
// median time, and as a fraction of the copy rate; the matrix products and attention as
// TFLOP/s and a fraction of the bf16 product rate. Inputs are random, never zeros.
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
//        -isystem $CUDA/include/cccl benchmarks/gpu/bench_kernels.cu -lcublasLt -o bench_kernels
// Exit codes: 0 measured, 1 a CUDA error, 77 no device.
#include <weft/backend/cuda/gemm.cuh>
#include <weft/backend/cuda/kernels.cuh>
#include <weft/backend/cuda/ops.cuh>  // attention on tensor cores (the op a step runs)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace k = weft::cuda::kernels;
namespace wc = weft::cuda;
using weft::bf16;

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::printf("FAIL %s: cuBLASLt status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

// Random values in [lo, hi) from a hash of the index: no host transfer, never zeros.
template <class T>
__global__ void fill_random(T* x, std::size_t n, std::uint32_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = static_cast<T>(lo + (hi - lo) * (static_cast<float>(h >> 8) * (1.0f / 16777216.0f)));
  }
}
__global__ void fill_tokens(std::int32_t* x, std::size_t n, std::int32_t v) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<std::int32_t>((i * 2654435761u) % static_cast<std::size_t>(v));
}

std::uint32_t next_seed = 1;
template <class T>
T* buffer(std::size_t n, float lo = -1, float hi = 1) {
  T* p = nullptr;
  ok(cudaMalloc(&p, n * sizeof(T) + 256), "cudaMalloc");
  fill_random<<<1024, 256>>>(p, n, next_seed++ * 0x9e3779b9u, lo, hi);
  ok(cudaGetLastError(), "fill_random");
  return p;
}

cudaStream_t stream = nullptr;

// Median milliseconds of `f` over `reps` timed runs after 3 warm-ups (events around each run).
template <class F>
double median_ms(F&& f, int reps = 20) {
  for (int i = 0; i < 3; ++i) ok(f(), "warm-up launch");
  ok(cudaStreamSynchronize(stream), "warm-up");
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a, stream);
    ok(f(), "timed launch");
    cudaEventRecord(b, stream);
    ok(cudaEventSynchronize(b), "timed run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double copy_gbs = 0, gemm_tflops = 0;

void row_bytes(const std::string& name, const char* dtype, double ms, double bytes) {
  const double gbs = bytes / (ms * 1e-3) * 1e-9;
  std::printf("| %-40s | %-4s | %9.1f us | %8.0f GB/s | %5.1f%% of copy |\n", name.c_str(), dtype, ms * 1e3, gbs,
              100.0 * gbs / copy_gbs);
}
void row_flops(const std::string& name, const char* dtype, double ms, double flops) {
  const double tf = flops / (ms * 1e-3) * 1e-12;
  std::printf("| %-40s | %-4s | %9.1f us | %6.1f TFLOP/s | %5.1f%% of bf16 gemm |\n", name.c_str(), dtype, ms * 1e3, tf,
              100.0 * tf / gemm_tflops);
}

// One product through cuBLASLt, descriptors made once (as a step would cache them).
template <std::size_t N, std::size_t C, std::size_t OC, class T, wc::linear_product P, wc::gemm_epilogue E>
double gemm_ms(cublasLtHandle_t h, void* ws, std::size_t ws_bytes, const T* a, const T* b, T* d, const T* bias, T* aux) {
  constexpr wc::gemm_plan p = wc::linear_gemm_plan<N, C, OC, T, P, E>();
  wc::gemm_descriptors g(p, bias, aux);
  ok(g.status(), "gemm descriptors");
  return median_ms([&] {
    ok(wc::gemm_run(h, stream, p, g, a, b, d, ws, ws_bytes), "cublasLtMatmul");
    return cudaSuccess;
  });
}

template <class T>
const char* dtype_name() {
  return std::is_same_v<T, bf16> ? "bf16" : "f32";
}

template <class T>
void kernels(cublasLtHandle_t h, void* ws, std::size_t ws_bytes) {
  constexpr std::size_t B = 4, S = 1024, C = 768, N = B * S, H = 12, D = 64, V = 50257, Vp = 50304;
  constexpr std::size_t F = 4 * C, W = 3 * C;
  constexpr double sz = sizeof(T);
  const char* dt = dtype_name<T>();

  // element-wise and memory helpers over a 124M-parameter-sized buffer
  constexpr std::size_t P = 124'475'904;
  {
    T* x = buffer<T>(P);
    T* y = buffer<T>(P);
    row_bytes("copy (124M elements)", dt, median_ms([&] { return k::launch_copy(stream, y, x, P); }), 2 * P * sz);
    row_bytes("accumulate y += a x", dt, median_ms([&] { return k::launch_accumulate(stream, y, x, P, 0.5f); }),
              3 * P * sz);
    double* ss = nullptr;
    double* scratch = nullptr;
    ok(cudaMalloc(&ss, sizeof(double)), "cudaMalloc");
    ok(cudaMalloc(&scratch, k::sum_squares_blocks(P) * sizeof(double)), "cudaMalloc");
    row_bytes("sum of squares (grad norm)", dt,
              median_ms([&] { return k::launch_sum_squares(stream, ss, x, P, scratch); }), P * sz);
    double norm2 = 0;
    ok(cudaMemcpy(&norm2, ss, sizeof norm2, cudaMemcpyDeviceToHost), "read back the sum of squares");
    // A limit just under the norm: every element is scaled (and written), by 0.999 a run.
    row_bytes("clip (scaling every element)", dt,
              median_ms([&] { return k::launch_clip(stream, x, P, ss, 0.999 * std::sqrt(norm2)); }), 2 * P * sz);
    float* master = buffer<float>(P);
    float* m = buffer<float>(P, -0.01f, 0.01f);
    float* v = buffer<float>(P, 0.0f, 0.001f);
    bf16* out = buffer<bf16>(P);
    const k::adamw_hyper hy{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 3};
    row_bytes("adamw (f32 master+moments, bf16 out)", dt,
              median_ms([&] { return k::launch_adamw(stream, master, x, m, v, out, P, hy); }),
              P * (sz + 3 * 4.0 + 3 * 4.0 + 2.0));
    cudaFree(ss), cudaFree(scratch), cudaFree(master), cudaFree(m), cudaFree(v), cudaFree(out), cudaFree(x), cudaFree(y);
  }
  // activations of one block
  {
    T* x = buffer<T>(N * F, -3, 3);
    T* g = buffer<T>(N * F);
    T* y = buffer<T>(N * F);
    row_bytes("gelu_forward (N x 4C)", dt, median_ms([&] { return k::launch_gelu_forward<N * F>(stream, y, x); }),
              2 * N * F * sz);
    row_bytes("gelu_backward (N x 4C)", dt,
              median_ms([&] { return k::launch_gelu_backward<N * F>(stream, y, x, g); }), 3 * N * F * sz);
    row_bytes("residual_forward (N x C)", dt,
              median_ms([&] { return k::launch_residual_forward<N * C>(stream, y, x, g); }), 3 * N * C * sz);
    cudaFree(x), cudaFree(g), cudaFree(y);
  }
  {
    T* x = buffer<T>(N * C, -2, 3);
    T* res = buffer<T>(N * C);
    T* w = buffer<T>(C, 0.5f, 1.5f);
    T* b = buffer<T>(C);
    T* hh = buffer<T>(N * C);
    T* y = buffer<T>(N * C);
    float* mean = buffer<float>(N);
    float* rstd = buffer<float>(N);
    row_bytes("residual+layernorm forward (N x C)", dt, median_ms([&] {
                return k::launch_residual_layernorm_forward<N, C>(stream, hh, y, mean, rstd, x, res, w, b);
              }),
              4 * N * C * sz);
    T* g = buffer<T>(N * C);
    T* dx = buffer<T>(N * C);
    T* dw = buffer<T>(C);
    T* db = buffer<T>(C);
    float* scratch = buffer<float>(k::layernorm_backward_scratch_v<N, C>);
    row_bytes("layernorm backward (N x C)", dt, median_ms([&] {
                return k::launch_layernorm_backward<N, C>(stream, dx, dw, db, g, hh, w, mean, rstd, scratch);
              }),
              4 * N * C * sz);  // reads g, inp; reads and writes dinp (accumulated)
    row_bytes("rmsnorm forward (N x C)", dt,
              median_ms([&] { return k::launch_rmsnorm_forward<N, C>(stream, y, rstd, x, w); }), 2 * N * C * sz);
    float* scratch2 = buffer<float>(k::rmsnorm_backward_scratch_v<N, C>);
    row_bytes("rmsnorm backward (N x C)", dt, median_ms([&] {
                return k::launch_rmsnorm_backward<N, C>(stream, dx, dw, g, x, w, rstd, scratch2);
              }),
              4 * N * C * sz);
    T* bias = buffer<T>(W);
    T* gw = buffer<T>(N * W);
    float* scratch3 = buffer<float>(k::bias_backward_scratch_v<N, W>);
    row_bytes("bias_backward (N x 3C)", dt,
              median_ms([&] { return k::launch_bias_backward<N, W>(stream, bias, gw, scratch3); }), N * W * sz);
    for (void* p : {(void*)x, (void*)res, (void*)w, (void*)b, (void*)hh, (void*)y, (void*)mean, (void*)rstd,
                    (void*)g, (void*)dx, (void*)dw, (void*)db, (void*)scratch, (void*)scratch2, (void*)bias,
                    (void*)gw, (void*)scratch3})
      cudaFree(p);
  }
  // embeddings
  {
    T* wte = buffer<T>(V * C);
    T* wpe = buffer<T>(S * C);
    T* out = buffer<T>(N * C);
    std::int32_t* idx = nullptr;
    ok(cudaMalloc(&idx, N * sizeof(std::int32_t)), "cudaMalloc");
    fill_tokens<<<64, 256>>>(idx, N, V);
    row_bytes("embedding forward (token + position)", dt,
              median_ms([&] { return k::launch_embedding_forward<B, S, V, C>(stream, out, idx, wte, wpe); }),
              3 * N * C * sz);
    float* escratch = buffer<float>(k::embedding_backward_scratch_v<N, V, C>);
    row_bytes("embedding backward (deterministic)", dt,
              median_ms([&] { return k::launch_embedding_backward<N, V, C>(stream, wte, out, idx, escratch); }),
              3 * N * C * sz);
    cudaFree(wte), cudaFree(wpe), cudaFree(out), cudaFree(idx), cudaFree(escratch);
  }
  // rotary embedding on a LLaMA-shaped qkv (8 heads, 2 kv heads, head dim 128)
  {
    constexpr std::size_t RH = 8, RKV = 2, RD = 128, RW = (RH + 2 * RKV) * RD;
    T* q = buffer<T>(N * RW);
    T* o = buffer<T>(N * RW);
    row_bytes("rope forward (8/2 heads of 128)", dt,
              median_ms([&] { return k::launch_rope_forward<B, S, RH, RKV, RD>(stream, o, q); }), 2 * N * RW * sz);
    cudaFree(q), cudaFree(o);
  }
  // fused softmax + cross-entropy over the padded vocabulary, gradient in place
  {
    T* z = buffer<T>(N * Vp, -6, 6);
    std::int32_t* t = nullptr;
    ok(cudaMalloc(&t, N * sizeof(std::int32_t)), "cudaMalloc");
    fill_tokens<<<64, 256>>>(t, N, V);
    float* l = buffer<float>(N);
    row_bytes("softmax+cross-entropy fwd+bwd (N x V)", dt, median_ms([&] {
                return k::launch_softmax_cross_entropy_forward_backward<N, V, Vp>(stream, l, z, t, 1.0f / N);
              }),
              2 * N * V * sz);
    cudaFree(z), cudaFree(t), cudaFree(l);
  }
  // attention, causal, GPT-2 124M's heads
  {
    T* qkv = buffer<T>(N * W, -2, 2);
    T* out = buffer<T>(N * C);
    float* lse = buffer<float>(B * H * S);
    const double fwd_flops = 4.0 * B * H * S * S * D / 2;  // QK^T and PV, causal half
    row_flops("flash attention fwd, CUDA cores (S 1024)", dt, median_ms([&] {
                return k::launch_flash_attention_forward<B, S, H, H, D>(stream, out, lse, qkv);
              }, 5),
              fwd_flops);
    T* g = buffer<T>(N * C);
    T* dqkv = buffer<T>(N * W);
    row_flops("flash attention bwd, CUDA cores (S 1024)", dt, median_ms([&] {
                return k::launch_flash_attention_backward<B, S, H, H, D>(stream, dqkv, g, qkv, out, lse);
              }, 5),
              2.5 * fwd_flops);
    // The op a training step runs (ops.cuh): for bf16/f16 the tensor-core flash kernels
    // (kernels/flash_attention.hpp, the causal half, a deterministic backward of 7 products per
    // tile pair, counted as FlashAttention's 5); then the cuBLASLt bodies (attention.cuh:
    // probabilities kept (B, H, S, S), the whole square computed but counted as the causal half).
    T* att = buffer<T>(B * H * S * S);
    T* dscores = buffer<T>(B * H * S * S);
    void* scratch = nullptr;
    const std::size_t scratch_bytes = std::size_t{32} << 20;
    ok(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc(scratch)");
    wc::cuda_context ctx{stream, h, scratch, scratch_bytes, ws, ws_bytes, nullptr};
    const bool flash = wc::detail::use_mma_attention<B, S, H, D>(static_cast<const T*>(att), static_cast<const T*>(qkv));
    const std::string op_name = flash ? "flash, tensor cores (op)" : "cuBLASLt (op)";
    row_flops("attention forward, " + op_name, dt, median_ms([&] {
                weft::ops::attention_forward<B, S, H, H, D>(ctx, out, att, static_cast<const T*>(qkv));
                return cudaGetLastError();
              }, 10),
              fwd_flops);
    row_flops("attention backward, " + op_name, dt, median_ms([&] {
                weft::ops::attention_backward<B, S, H, H, D>(ctx, dqkv, dscores, static_cast<const T*>(g),
                                                             static_cast<const T*>(qkv), static_cast<const T*>(att));
                return cudaGetLastError();
              }, 10),
              2.5 * fwd_flops);
    if (flash) {
      row_flops("attention forward, cuBLASLt, S x S kept", dt, median_ms([&] {
                  wc::attention_forward_tc<B, S, H, H, D>(ctx, out, att, static_cast<const T*>(qkv));
                  return cudaGetLastError();
                }, 10),
                fwd_flops);
      row_flops("attention backward, cuBLASLt, S x S kept", dt, median_ms([&] {
                  wc::attention_backward_tc<B, S, H, H, D>(ctx, dqkv, dscores, static_cast<const T*>(g),
                                                           static_cast<const T*>(qkv), static_cast<const T*>(att));
                  return cudaGetLastError();
                }, 10),
                2.5 * fwd_flops);
    }
    cudaFree(att), cudaFree(dscores), cudaFree(scratch);
    cudaFree(qkv), cudaFree(out), cudaFree(lse), cudaFree(g), cudaFree(dqkv);
  }
  // the matrix products of one block's MLP through cuBLASLt (epilogues included)
  {
    T* inp = buffer<T>(N * C);
    T* w = buffer<T>(F * C, -0.05f, 0.05f);
    T* bias = buffer<T>(F);
    T* out = buffer<T>(N * F);
    T* aux = buffer<T>(N * F);
    constexpr double flops = 2.0 * N * C * F;
    using LP = wc::linear_product;
    using E = wc::gemm_epilogue;
    row_flops("matmul fc forward + bias + GELU (aux)", dt,
              gemm_ms<N, C, F, T, LP::forward, E::gelu_aux>(h, ws, ws_bytes, w, inp, out, bias, aux), flops);
    row_flops("matmul fc backward input (dGELU)", dt,
              gemm_ms<N, C, F, T, LP::backward_input, E::dgelu>(h, ws, ws_bytes, w, out, inp, nullptr, aux), flops);
    T* dw = buffer<T>(F * C);
    row_flops("matmul fc backward weight (+ dbias)", dt,
              gemm_ms<N, C, F, T, LP::backward_weight, E::bgradb>(h, ws, ws_bytes, inp, out, dw, bias, nullptr), flops);
    cudaFree(inp), cudaFree(w), cudaFree(bias), cudaFree(out), cudaFree(aux), cudaFree(dw);
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s, %d SMs, %.0f MiB\n", prop.name, prop.multiProcessorCount,
              static_cast<double>(prop.totalGlobalMem) / (1 << 20));
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasLtHandle_t h = nullptr;
  ok(cublasLtCreate(&h), "cublasLtCreate");
  const std::size_t ws_bytes = std::size_t{32} << 20;
  void* ws = nullptr;
  ok(cudaMalloc(&ws, ws_bytes), "cudaMalloc(workspace)");

  // ceiling 1: device-to-device copy of 2 GiB (bytes read + written)
  {
    const std::size_t bytes = std::size_t{2} << 30;
    char* a = buffer<char>(bytes);
    char* b = buffer<char>(bytes);
    const double ms = median_ms([&] { return cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream); }, 10);
    copy_gbs = 2.0 * bytes / (ms * 1e-3) * 1e-9;
    cudaFree(a), cudaFree(b);
  }
  // ceiling 2: bf16 product 8192^3 through cuBLASLt, f32 accumulation, random inputs
  {
    constexpr std::size_t M = 8192;
    bf16* a = buffer<bf16>(M * M);
    bf16* b = buffer<bf16>(M * M);
    bf16* d = buffer<bf16>(M * M);
    const double ms = gemm_ms<M, M, M, bf16, wc::linear_product::forward, wc::gemm_epilogue::none>(h, ws, ws_bytes, a,
                                                                                                   b, d, nullptr, nullptr);
    gemm_tflops = 2.0 * M * M * M / (ms * 1e-3) * 1e-12;
    cudaFree(a), cudaFree(b), cudaFree(d);
  }
  std::printf("ceilings measured in this run: copy %.0f GB/s (read + write), bf16 matrix product %.1f TFLOP/s\n",
              copy_gbs, gemm_tflops);
  std::printf("| kernel (GPT-2 124M shapes, B=4 S=1024) | type | median | rate | of ceiling |\n");
  std::printf("|---|---|---|---|---|\n");
  kernels<bf16>(h, ws, ws_bytes);
  kernels<float>(h, ws, ws_bytes);
  ok(cudaDeviceSynchronize(), "final synchronize");
  std::printf("ceiling_copy_gbs %.1f\nceiling_bf16_tflops %.1f\n", copy_gbs, gemm_tflops);
  cublasLtDestroy(h);
  cudaFree(ws);
  return 0;
}
