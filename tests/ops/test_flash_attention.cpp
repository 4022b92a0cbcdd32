// Tests for weft::ops::flash_attention_forward / flash_attention_backward (row statistics kept,
// probabilities recomputed). The oracle is the probabilities op (ops/attention.hpp), itself
// tested against a naive long-double reference in test_attention.cpp, and an independent
// log-sum-exp computed here; the backward also against finite differences in f64.
#include "weft/core/dtype.hpp"                // bf16
#include "weft/ops/attention.hpp"             // attention_forward/backward
#include "weft/ops/flash_attention.hpp"       // flash_attention_forward/backward
#include "weft/ops/op.hpp"                    // host_context

#include "ops_test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

using weft::bf16;
using weft::host_context;
namespace ops = weft::ops;
using namespace weft::ops::test;

namespace {

std::vector<bf16> to_bf16(const std::vector<double>& v) {
  std::vector<bf16> r;
  for (double x : v) r.push_back(bf16(static_cast<float>(x)));
  return r;
}
template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> r;
  for (const T& x : v) r.push_back(static_cast<double>(static_cast<float>(x)));
  return r;
}

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct shape {
  static constexpr std::size_t W = (H + 2 * KVH) * D, qkv = B * S * W, out = B * S * H * D, rows = B * H * S;
};

// lse of every (batch, head, query) row, in long double, from the scores' definition.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
std::vector<double> reference_lse(const std::vector<double>& qkv) {
  using sz = shape<B, S, H, KVH, D>;
  std::vector<double> lse(sz::rows);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < S; ++t) {
        const std::size_t first = W > 0 && t >= W ? t + 1 - W : 0;  // the window's first key
        std::vector<long double> s;
        long double mx = -INFINITY;
        for (std::size_t u = first; u <= t; ++u) {
          s.emplace_back();
          long double dot = 0;
          for (std::size_t d = 0; d < D; ++d)
            dot += static_cast<long double>(qkv[(b * S + t) * sz::W + h * D + d]) *
                   qkv[(b * S + u) * sz::W + (H + h / (H / KVH)) * D + d];
          s.back() = dot / std::sqrt(static_cast<long double>(D));
          mx = std::max(mx, s.back());
        }
        long double sum = 0;
        for (long double x : s) sum += std::exp(x - mx);
        lse[(b * H + h) * S + t] = static_cast<double>(mx + std::log(sum));
      }
  return lse;
}

// f64: flash forward = probabilities forward (output), lse = the reference; flash backward =
// probabilities backward (dqkv, accumulated onto the same start) to rounding.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void f64_case() {
  using sz = shape<B, S, H, KVH, D>;
  INFO("B=" << B << " S=" << S << " H=" << H << " KVH=" << KVH << " D=" << D << " W=" << W);
  const auto qkv = random_vector(sz::qkv, 11 + S + H, -2, 2);
  const auto dout = random_vector(sz::out, 12 + S);
  const auto dqkv0 = random_vector(sz::qkv, 13 + D);
  std::vector<double> out(sz::out), lse(sz::rows), out_p(sz::out), att(B * H * S * S);
  ops::flash_attention_forward<B, S, H, KVH, D, W>(host_context{}, out.data(), lse.data(), qkv.data());
  ops::attention_forward<B, S, H, KVH, D, W>(host_context{}, out_p.data(), att.data(), qkv.data());
  CHECK(std::memcmp(out.data(), out_p.data(), out.size() * sizeof(double)) == 0);  // the same row loop
  CHECK(rel_err(lse, reference_lse<B, S, H, KVH, D, W>(qkv)) < 1e-13);

  auto dqkv = dqkv0, dqkv_p = dqkv0;
  std::vector<double> scratch(B * H * S * S);
  ops::flash_attention_backward<B, S, H, KVH, D, W>(host_context{}, dqkv.data(), dout.data(), qkv.data(), out.data(),
                                                    lse.data());
  ops::attention_backward<B, S, H, KVH, D, W>(host_context{}, dqkv_p.data(), scratch.data(), dout.data(), qkv.data(),
                                              att.data());
  CHECK(rel_err(minus(dqkv, dqkv0), minus(dqkv_p, dqkv0)) < 1e-12);
}

// The backward against finite differences of L = Σ dout·out through the flash forward alone.
TEST_CASE("flash attention backward: finite differences of its own forward (f64, grouped-query)", "[ops][attention]") {
  constexpr std::size_t B = 1, S = 5, H = 4, KVH = 2, D = 3;
  using sz = shape<B, S, H, KVH, D>;
  auto qkv = random_vector(sz::qkv, 5, -1.5, 1.5);
  const auto dout = random_vector(sz::out, 6);
  std::vector<double> out(sz::out), lse(sz::rows);
  auto loss = [&] {
    std::vector<double> o(sz::out), l(sz::rows);
    ops::flash_attention_forward<B, S, H, KVH, D>(host_context{}, o.data(), l.data(), qkv.data());
    return dot(o, dout);
  };
  const auto fd = fd_gradient(qkv, loss);
  ops::flash_attention_forward<B, S, H, KVH, D>(host_context{}, out.data(), lse.data(), qkv.data());
  std::vector<double> dqkv(sz::qkv, 0.0);
  ops::flash_attention_backward<B, S, H, KVH, D>(host_context{}, dqkv.data(), dout.data(), qkv.data(), out.data(),
                                                 lse.data());
  CHECK(rel_err(dqkv, fd) < 1e-7);
}

TEST_CASE("flash attention (f64) agrees with the probabilities op: MHA, GQA, MQA, long rows", "[ops][attention]") {
  f64_case<2, 7, 2, 2, 4>();
  f64_case<1, 9, 4, 2, 8>();
  f64_case<2, 6, 3, 1, 5>();
  f64_case<1, 64, 2, 1, 16>();
}

TEST_CASE("flash attention with a sliding window (f64) agrees with the windowed probabilities op", "[ops][attention][window]") {
  f64_case<2, 7, 2, 2, 4, 1>();
  f64_case<1, 9, 4, 2, 8, 3>();
  f64_case<2, 33, 4, 1, 8, 6>();
  f64_case<1, 20, 2, 2, 4, 20>();  // a window of the whole sequence
}

TEST_CASE("flash attention in f32: the output is the probabilities op's, bit for bit", "[ops][attention]") {
  constexpr std::size_t B = 2, S = 33, H = 4, KVH = 2, D = 16;
  using sz = shape<B, S, H, KVH, D>;
  const auto qkv = convert<float>(random_vector(sz::qkv, 21, -2, 2));
  std::vector<float> out(sz::out), lse(sz::rows), out_p(sz::out), att(B * H * S * S);
  ops::flash_attention_forward<B, S, H, KVH, D>(host_context{}, out.data(), lse.data(), qkv.data());
  ops::attention_forward<B, S, H, KVH, D>(host_context{}, out_p.data(), att.data(), qkv.data());
  CHECK(std::memcmp(out.data(), out_p.data(), out.size() * sizeof(float)) == 0);
}

// bf16 storage, f32 statistics and accumulation: within bf16-scaled tolerances of the f64 op.
TEST_CASE("flash attention in bf16 (f32 lse) against the f64 op", "[ops][attention][bf16]") {
  constexpr std::size_t B = 2, S = 24, H = 4, KVH = 1, D = 16;
  using sz = shape<B, S, H, KVH, D>;
  const auto qkv_bf = to_bf16(random_vector(sz::qkv, 31, -2, 2));
  const auto dout_bf = to_bf16(random_vector(sz::out, 32));
  const auto qkv = widen(qkv_bf), dout = widen(dout_bf);
  std::vector<bf16> out(sz::out), dqkv(sz::qkv, bf16(0.0f));
  std::vector<float> lse(sz::rows);
  ops::flash_attention_forward<B, S, H, KVH, D>(host_context{}, out.data(), lse.data(), qkv_bf.data());
  ops::flash_attention_backward<B, S, H, KVH, D>(host_context{}, dqkv.data(), dout_bf.data(), qkv_bf.data(),
                                                 out.data(), lse.data());
  std::vector<double> rout(sz::out), ratt(B * H * S * S), rdqkv(sz::qkv, 0.0), scratch(B * H * S * S);
  ops::attention_forward<B, S, H, KVH, D>(host_context{}, rout.data(), ratt.data(), qkv.data());
  ops::attention_backward<B, S, H, KVH, D>(host_context{}, rdqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                           ratt.data());
  constexpr double eps = 1.0 / 128;  // bf16's unit roundoff is 2^-8; two roundings and the row sums
  CHECK(rel_err(widen(out), rout) < 2 * eps);
  CHECK(rel_err(lse, reference_lse<B, S, H, KVH, D>(qkv)) < 1e-5);
  CHECK(rel_err(widen(dqkv), rdqkv) < 4 * eps);
}

TEST_CASE("flash attention: usage", "[ops][attention]") {
  // example-begin flash-attention-usage
  const weft::host_context ctx;
  constexpr std::size_t B = 2, S = 16, H = 8, KVH = 2, D = 32;
  std::vector<float> qkv(B * S * (H + 2 * KVH) * D, 0.0f);  // (batch, seq, (H + 2*KVH) * D)
  std::vector<float> out(B * S * H * D);                     // (batch, seq, H * D), kept for backward
  std::vector<float> lse(B * H * S);                         // (batch, heads, seq): all that is kept
  std::vector<float> dout(out.size(), 1.0f), dqkv(qkv.size(), 0.0f);

  weft::ops::flash_attention_forward<B, S, H, KVH, D>(ctx, out.data(), lse.data(), qkv.data());
  weft::ops::flash_attention_backward<B, S, H, KVH, D>(ctx, dqkv.data(), dout.data(), qkv.data(), out.data(),
                                                       lse.data());
  // example-end flash-attention-usage
  // All-zero qkv: row t averages t + 1 equal scores, so lse = log(t + 1).
  CHECK(lse[S - 1] == Approx(std::log(float(S))));
}

}  // namespace
