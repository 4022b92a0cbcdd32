// The row kernels of attention on tensor cores (kernels/attention_rows.hpp) on the emulated
// grid against the host attention op in double: the causal softmax of scale·q·k scores gives
// the host's kept probabilities, and d(scores) from dout·v gives the host's scratch, for a
// multi-head and a grouped-query shape, head dims 64 and 128, in f32 and bf16; and with sliding
// windows of 1, a few and at least S keys (0 before the window as past the query).
#include <weft/backend/cuda/kernels/attention_rows.hpp>
#include <weft/ops/attention.hpp>

#include "kernel_check.hpp"

#include <cmath>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W>
void ref_forward(double* out, double* att, const double* qkv) {
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out, att, qkv);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W>
void ref_backward(double* dqkv, double* scratch, const double* dout, const double* qkv, const double* att) {
  weft::ops::attention_backward<B, S, H, KVH, D, W>(weft::host_context{}, dqkv, scratch, dout, qkv, att);
}

// W: the sliding window (0: none).
template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void rows_case() {
  constexpr std::size_t width = (H + 2 * KVH) * D, HD = H * D, group = H / KVH, rows = B * H * S;
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + "/" + std::to_string(KVH) +
                          " D=" + std::to_string(D) + (W > 0 ? " window=" + std::to_string(W) : "");
  std::mt19937 rng(700 + S + D + H);
  const auto qkv = kcheck::widen(kcheck::random<T>(B * S * width, rng, -2, 2));  // values representable in T
  const auto dout = kcheck::widen(kcheck::random<T>(B * S * HD, rng));
  // The host op in double: probabilities and d(scores).
  std::vector<double> out(B * S * HD), att(rows * S), dqkv(B * S * width, 0.0), dscores(rows * S);
  ref_forward<B, S, H, KVH, D, W>(out.data(), att.data(), qkv.data());
  ref_backward<B, S, H, KVH, D, W>(dqkv.data(), dscores.data(), dout.data(), qkv.data(), att.data());
  // What cuBLASLt writes for the row kernels, in f32: scale·q·k and dout·v per (b, h, query, key).
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> scores(rows * S), dprobs(rows * S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < S; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          const double* q = &qkv[(b * S + i) * width + h * D];
          const double* kk = &qkv[(b * S + j) * width + (H + h / group) * D];
          const double* v = &qkv[(b * S + j) * width + (H + KVH + h / group) * D];
          const double* g = &dout[(b * S + i) * HD + h * D];
          double s = 0, dp = 0;
          for (std::size_t d = 0; d < D; ++d) s += q[d] * kk[d], dp += g[d] * v[d];
          scores[((b * H + h) * S + i) * S + j] = static_cast<float>(scale * s);
          dprobs[((b * H + h) * S + i) * S + j] = static_cast<float>(dp);
        }
  std::vector<T> probs(rows * S, T(7.0f));  // poisoned: every element must be written
  k::emulate_launch(k::make_causal_softmax_rows<S, W>(scores.data(), probs.data(), rows));
  kcheck::check("causal_softmax_rows" + tag, probs, att, 4);
  // d(scores) from the host's probabilities as T (what the forward kept).
  std::vector<T> kept(rows * S);
  for (std::size_t i = 0; i < kept.size(); ++i) kept[i] = T(static_cast<float>(att[i]));
  const auto kept_d = kcheck::widen(kept);
  std::vector<double> ref_ds(rows * S);
  for (std::size_t r = 0; r < rows; ++r) {  // the host's formula on the kept probabilities
    const std::size_t q = r % S, lo = weft::ops::detail::window_first<W>(q);
    double dot = 0;
    for (std::size_t j = lo; j <= q; ++j) dot += kept_d[r * S + j] * static_cast<double>(dprobs[r * S + j]);
    for (std::size_t j = 0; j < S; ++j)
      ref_ds[r * S + j] = lo <= j && j <= q ? kept_d[r * S + j] * (static_cast<double>(dprobs[r * S + j]) - dot) : 0.0;
  }
  std::vector<T> ds(rows * S, T(7.0f));
  k::emulate_launch(k::make_attention_dscores_rows<S, W>(dprobs.data(), kept.data(), ds.data(), rows));
  kcheck::check("attention_dscores_rows" + tag, ds, ref_ds, 8);
  // ... and the host op's own d(scores) on its f64 probabilities, within the probabilities' rounding.
  kcheck::check("attention_dscores_rows vs host op" + tag, ds, dscores, 16);
}
}  // namespace

TEST_CASE("attention row kernels: causal softmax and d(scores) equal the host op", "[kernel][attention]") {
  rows_case<float, 2, 64, 4, 4, 64>();
  rows_case<float, 1, 40, 4, 2, 128>();
  rows_case<bf16, 2, 64, 4, 4, 64>();
  rows_case<bf16, 1, 40, 4, 2, 128>();
}

// S = 100 and 70: rows of vectors that start before a window's edge and end inside it.
TEST_CASE("attention row kernels: a sliding window masks the keys before it", "[kernel][attention]") {
  rows_case<float, 1, 100, 2, 1, 64, 1>();
  rows_case<float, 1, 100, 2, 1, 64, 5>();
  rows_case<float, 2, 70, 4, 2, 64, 17>();
  rows_case<float, 1, 40, 4, 2, 128, 40>();  // W = S: no window
  rows_case<bf16, 1, 100, 2, 1, 64, 1>();
  rows_case<bf16, 1, 100, 2, 1, 64, 5>();
  rows_case<bf16, 2, 70, 4, 2, 64, 17>();
  rows_case<bf16, 1, 40, 4, 2, 128, 64>();   // W > S
}
