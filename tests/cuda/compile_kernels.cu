// nvcc instantiates every launcher of weft's own kernels (backend/cuda/kernels.cuh) at GPT-2
// small and LLaMA-like sizes, in f32 and bf16, for every architecture of the target (sm_90a and
// sm_80 in CI), and links. It launches nothing: exit 0 when built (the kernels run against the
// host ops in tests/kernel/ on the emulated grid, and in test_kernels_gpu.cu on a device).
#include <weft/backend/cuda/kernels.cuh>
#include <weft/core/dtype.hpp>

#include <cstdio>

namespace k = weft::cuda::kernels;

namespace {

// GPT-2 small, one micro-batch: B=4, S=1024, C=768, V=50257 padded to 50304, 4C MLP.
template <class T>
void gpt2(cudaStream_t s) {
  constexpr std::size_t B = 4, S = 1024, N = B * S, C = 768, V = 50257, Vp = 50304;
  T *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  float *f = nullptr, *g = nullptr, *scratch = nullptr;
  const std::int32_t* idx = nullptr;
  k::launch_embedding_forward<B, S, Vp, C>(s, a, idx, b, c);
  k::launch_embedding_backward<N, Vp, C>(s, a, b, idx, scratch);
  k::launch_positional_backward<B, S, C>(s, a, b);
  k::launch_layernorm_forward<N, C>(s, a, f, g, b, c, d);
  k::launch_residual_layernorm_forward<N, C>(s, a, b, f, g, c, d, a, b);
  k::launch_layernorm_backward<N, C>(s, a, b, c, d, a, b, f, g, scratch);
  k::launch_gelu_forward<N * 4 * C>(s, a, b);
  k::launch_gelu_backward<N * 4 * C>(s, a, b, c);
  k::launch_residual_forward<N * C>(s, a, b, c);
  k::launch_residual_backward<N * C>(s, a, b, c);
  k::launch_bias_backward<N, 3 * C>(s, a, b, scratch);
  k::launch_softmax_cross_entropy_forward_backward<N, V, Vp>(s, f, a, idx, 1.0f / N);
  k::launch_softmax_cross_entropy_forward<N, V, Vp>(s, f, a, idx);
  k::launch_flash_attention_forward<B, S, 12, 12, 64>(s, a, f, b);
  k::launch_flash_attention_backward<B, S, 12, 12, 64>(s, a, b, c, d, f);
  if constexpr (k::mma_attention_shape<T, 64>) {  // tensor cores: 16-bit elements
    k::launch_mma_attention_forward<B, S, 12, 12, 64>(s, a, f, b);
    k::launch_mma_attention_backward<B, S, 12, 12, 64>(s, a, scratch, b, c, d, f);
  }
}

// LLaMA-like: S=2048, C=4096, 32 heads of 128 with 8 kv heads, SwiGLU hidden 11008.
template <class T>
void llama(cudaStream_t s) {
  constexpr std::size_t B = 1, S = 2048, N = B * S, C = 4096, H = 32, KVH = 8, D = 128, F = 11008;
  T *a = nullptr, *b = nullptr, *c = nullptr;
  float *f = nullptr, *scratch = nullptr;
  const std::int32_t* idx = nullptr;
  k::launch_embedding_forward<B, S, 32000, C, T>(s, a, idx, b, nullptr);
  k::launch_rmsnorm_forward<N, C>(s, a, f, b, c);
  k::launch_rmsnorm_backward<N, C>(s, a, b, c, a, b, f, scratch);
  k::launch_rope_forward<B, S, H, KVH, D>(s, a, b);
  k::launch_rope_backward<B, S, H, KVH, D>(s, a, b);
  k::launch_rope_forward<B, S, H, KVH, D, 500000>(s, a, b);  // LLaMA 3's base
  k::launch_rope_backward<B, S, H, KVH, D, 10000, D / 4>(s, a, b);  // partial rotary
  k::launch_rope_forward<B, S, H, KVH, D, 500000, D, weft::llama3_rope_scaling<8>>(s, a, b);  // LLaMA 3.1
  k::launch_swiglu_forward<N, F>(s, a, b);
  k::launch_swiglu_backward<N, F>(s, a, b, c);
  k::launch_geglu_forward<N, F>(s, a, b);
  k::launch_geglu_backward<N, F>(s, a, b, c);
  k::launch_flash_attention_forward<B, S, H, KVH, D>(s, a, f, b);
  k::launch_flash_attention_backward<B, S, H, KVH, D>(s, a, b, c, a, f);
  if constexpr (k::mma_attention_shape<T, D>) {
    k::launch_mma_attention_forward<B, S, H, KVH, D>(s, a, f, b);
    k::launch_mma_attention_backward<B, S, H, KVH, D>(s, a, scratch, b, c, a, f);
  }
  // A sliding window (Mistral's 4096 keys, at half this sequence): every attention kernel.
  constexpr std::size_t Window = S / 2;
  k::launch_flash_attention_forward<B, S, H, KVH, D, Window>(s, a, f, b);
  k::launch_flash_attention_backward<B, S, H, KVH, D, Window>(s, a, b, c, a, f);
  k::launch_causal_softmax_rows<S, Window>(s, f, a, H * S);
  k::launch_attention_dscores_rows<S, Window>(s, f, a, b, H * S);
  if constexpr (k::mma_attention_shape<T, D>) {
    k::launch_mma_attention_forward<B, S, H, KVH, D, Window>(s, a, f, b);
    k::launch_mma_attention_backward<B, S, H, KVH, D, Window>(s, a, scratch, b, c, a, f);
  }
}

template <class T>
void memory(cudaStream_t s) {
  T *a = nullptr, *b = nullptr;
  float *m = nullptr, *v = nullptr, *master = nullptr;
  double *out = nullptr, *scratch = nullptr;
  k::launch_fill(s, a, 0, T(1.0f));
  k::launch_zero(s, a, 0);
  k::launch_copy(s, a, b, 0);
  k::launch_mean_loss(s, out, master, 0, scratch);
  k::launch_accumulate(s, a, b, 0, 0.5f);
  k::launch_scale(s, a, 0, 0.5f);
  k::launch_clip(s, a, 0, out, 1.0);
  k::launch_sum_squares(s, out, a, 0, scratch);
  k::launch_adamw<T, weft::bf16>(s, master, a, m, v, nullptr, 0, {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1});
  k::launch_adamw<T, float>(s, master, a, m, v, nullptr, 0, {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1});
}

}  // namespace

int main() {
  // Instantiated for both element types; the calls are never made (a launch with null
  // pointers would fault), only compiled and linked.
  volatile bool never = false;
  if (never) {
    cudaStream_t s = nullptr;
    gpt2<float>(s);
    gpt2<weft::bf16>(s);
    llama<float>(s);
    llama<weft::bf16>(s);
    memory<float>(s);
    memory<weft::bf16>(s);
    k::launch_cast<weft::bf16, float>(s, nullptr, nullptr, 0);
    k::launch_cast<float, weft::bf16>(s, nullptr, nullptr, 0);
  }
  std::printf("weft kernels compiled for this target's architectures\n");
  return 0;
}
