// Scalar flash attention forward (online softmax, grouped-query heads, causal) and backward
// (recomputed probabilities, dq and dk/dv kernels, no atomics) on the emulated grid against the
// host attention ops in double; the kept row statistic lse = log Σ exp(scores) against a direct
// double computation. Head dims 64 and 128; S not a multiple of the tiles; sliding windows of 1
// key, of a few keys (whole tiles before the window skipped, tiles its edge crosses masked), and
// of at least S keys (no window).
#include <weft/backend/cuda/kernels/attention.hpp>  // make_flash_attention_forward
#include <weft/ops/attention.hpp>

#include "kernel_check.hpp"

#include <cmath>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapter: one line to follow a host-op signature change ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W>
void ref_attention_forward(double* out, double* att, const double* qkv) {
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out, att, qkv);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W>
void ref_attention_backward(double* dqkv, double* scratch, const double* dout, const double* qkv, const double* att) {
  weft::ops::attention_backward<B, S, H, KVH, D, W>(weft::host_context{}, dqkv, scratch, dout, qkv, att);
}

// W: the sliding window (0: none).
template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void attention_case() {
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + " KVH=" + std::to_string(KVH) +
                          " D=" + std::to_string(D) + (W > 0 ? " window=" + std::to_string(W) : "");
  constexpr std::size_t width = (H + 2 * KVH) * D;
  std::mt19937 rng(100 + D + S);
  auto qkv = kcheck::random<T>(B * S * width, rng, -2, 2);
  const auto rqkv = kcheck::widen(qkv);
  std::vector<T> out(B * S * H * D);
  std::vector<float> lse(B * H * S);
  k::emulate_launch(k::make_flash_attention_forward<B, S, H, KVH, D, W>(out.data(), lse.data(), qkv.data()));
  std::vector<double> rout(B * S * H * D), att(B * H * S * S);
  ref_attention_forward<B, S, H, KVH, D, W>(rout.data(), att.data(), rqkv.data());
  kcheck::check("flash_attention_forward out" + tag, out, rout, 8);
  // lse[b, h, t] = log Σ over the keys t2 query t sees of exp(q_t . k_t2 / sqrt(D))
  std::vector<double> rlse(B * H * S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < S; ++t) {
        const double* q = &rqkv[(b * S + t) * width + h * D];
        double mx = -INFINITY;
        std::vector<double> sc;
        for (std::size_t t2 = weft::ops::detail::window_first<W>(t); t2 <= t; ++t2) {
          const double* kk = &rqkv[(b * S + t2) * width + H * D + (h / (H / KVH)) * D];
          double s = 0;
          for (std::size_t i = 0; i < D; ++i) s += q[i] * kk[i];
          sc.push_back(s / std::sqrt(double(D)));
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double s : sc) sum += std::exp(s - mx);
        rlse[(b * H + h) * S + t] = mx + std::log(sum);
      }
  kcheck::check("flash_attention_forward lse" + tag, lse, rlse, 64);

  // ---- backward from the kernel's out and lse; the host op from its own probabilities ----
  auto dout = kcheck::random<T>(B * S * H * D, rng), dqkv = kcheck::random<T>(B * S * width, rng);
  auto rdqkv = kcheck::widen(dqkv);
  auto ks = k::make_flash_attention_backward<B, S, H, KVH, D, W>(dqkv.data(), dout.data(), qkv.data(), out.data(),
                                                                lse.data());
  k::emulate_launch(ks.dq);
  k::emulate_launch(ks.dkv);
  std::vector<double> scratch(B * H * S * S);
  ref_attention_backward<B, S, H, KVH, D, W>(rdqkv.data(), scratch.data(), kcheck::widen(dout).data(), rqkv.data(),
                                             att.data());
  kcheck::check("flash_attention_backward dqkv" + tag, dqkv, rdqkv, 16);
}
}  // namespace

TEMPLATE_TEST_CASE("flash attention forward and backward, scalar form, GQA, head dims 64 and 128", "[kernel][attention]", float,
                   bf16) {
  attention_case<TestType, 2, 70, 4, 2, 64>();   // grouped-query, 3 query tiles (last short)
  attention_case<TestType, 1, 40, 2, 1, 128>();  // multi-query, head dim 128
  attention_case<TestType, 1, 33, 2, 2, 64>();   // multi-head
}

TEMPLATE_TEST_CASE("flash attention forward and backward, scalar form, sliding window", "[kernel][attention]", float,
                   bf16) {
  attention_case<TestType, 2, 70, 4, 2, 64, 1>();    // each query sees itself only
  attention_case<TestType, 2, 70, 4, 2, 64, 17>();   // the last query tile skips key tile 0
  attention_case<TestType, 1, 100, 2, 1, 64, 5>();   // query tile 3 skips key tiles 0 and 1
  attention_case<TestType, 1, 40, 2, 1, 128, 33>();  // a window edge inside the second key tile
  attention_case<TestType, 1, 33, 2, 2, 64, 33>();   // W = S: no key outside the window
  attention_case<TestType, 1, 33, 2, 2, 64, 64>();   // W > S
}
