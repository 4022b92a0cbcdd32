// The row kernels of attention on tensor cores (kernels/attention_rows.hpp) on the emulated
// grid against the host attention op in double: the causal softmax of scale·q·k scores gives
// the host's kept probabilities, and d(scores) from dout·v gives the host's scratch, for a
// multi-head and a grouped-query shape, head dims 64 and 128, in f32 and bf16.
#include <weft/backend/cuda/kernels/attention_rows.hpp>
#include <weft/ops/attention.hpp>

#include "kernel_check.hpp"

#include <cmath>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
void ref_forward(double* out, double* att, const double* qkv) {
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out, att, qkv);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
void ref_backward(double* dqkv, double* scratch, const double* dout, const double* qkv, const double* att) {
  weft::ops::attention_backward<B, S, H, KVH, D>(weft::host_context{}, dqkv, scratch, dout, qkv, att);
}

template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
void rows_case() {
  constexpr std::size_t W = (H + 2 * KVH) * D, HD = H * D, group = H / KVH, rows = B * H * S;
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + "/" + std::to_string(KVH) +
                          " D=" + std::to_string(D);
  std::mt19937 rng(700 + S + D + H);
  const auto qkv = kcheck::widen(kcheck::random<T>(B * S * W, rng, -2, 2));  // values representable in T
  const auto dout = kcheck::widen(kcheck::random<T>(B * S * HD, rng));
  // The host op in double: probabilities and d(scores).
  std::vector<double> out(B * S * HD), att(rows * S), dqkv(B * S * W, 0.0), dscores(rows * S);
  ref_forward<B, S, H, KVH, D>(out.data(), att.data(), qkv.data());
  ref_backward<B, S, H, KVH, D>(dqkv.data(), dscores.data(), dout.data(), qkv.data(), att.data());
  // What cuBLASLt writes for the row kernels, in f32: scale·q·k and dout·v per (b, h, query, key).
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> scores(rows * S), dprobs(rows * S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < S; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          const double* q = &qkv[(b * S + i) * W + h * D];
          const double* kk = &qkv[(b * S + j) * W + (H + h / group) * D];
          const double* v = &qkv[(b * S + j) * W + (H + KVH + h / group) * D];
          const double* g = &dout[(b * S + i) * HD + h * D];
          double s = 0, dp = 0;
          for (std::size_t d = 0; d < D; ++d) s += q[d] * kk[d], dp += g[d] * v[d];
          scores[((b * H + h) * S + i) * S + j] = static_cast<float>(scale * s);
          dprobs[((b * H + h) * S + i) * S + j] = static_cast<float>(dp);
        }
  std::vector<T> probs(rows * S, T(7.0f));  // poisoned: every element must be written
  k::emulate_launch(k::make_causal_softmax_rows<S>(scores.data(), probs.data(), rows));
  kcheck::check("causal_softmax_rows" + tag, probs, att, 4);
  // d(scores) from the host's probabilities as T (what the forward kept).
  std::vector<T> kept(rows * S);
  for (std::size_t i = 0; i < kept.size(); ++i) kept[i] = T(static_cast<float>(att[i]));
  const auto kept_d = kcheck::widen(kept);
  std::vector<double> ref_ds(rows * S);
  for (std::size_t r = 0; r < rows; ++r) {  // the host's formula on the kept probabilities
    const std::size_t q = r % S;
    double dot = 0;
    for (std::size_t j = 0; j <= q; ++j) dot += kept_d[r * S + j] * static_cast<double>(dprobs[r * S + j]);
    for (std::size_t j = 0; j < S; ++j)
      ref_ds[r * S + j] = j <= q ? kept_d[r * S + j] * (static_cast<double>(dprobs[r * S + j]) - dot) : 0.0;
  }
  std::vector<T> ds(rows * S, T(7.0f));
  k::emulate_launch(k::make_attention_dscores_rows<S>(dprobs.data(), kept.data(), ds.data(), rows));
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
