// Tests for weft::ops::attention_forward / attention_backward (causal, grouped-query heads).
// The reference is an independent naive implementation in long double: full score matrix with
// -inf above the diagonal, explicit softmax, kv head chosen by index mapping.
#include "weft/core/dtype.hpp"       // bf16
#include "weft/ops/attention.hpp"  // attention_forward, attention_backward, attention_scratch_v

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace {

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct sizes {
  static constexpr std::size_t width = (H + 2 * KVH) * D;
  static constexpr std::size_t qkv = B * S * width;
  static constexpr std::size_t out = B * S * H * D;
  static constexpr std::size_t att = B * H * S * S;
};

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// ---- naive reference ----
// W > 0: a sliding window, query t sees keys t - W < u <= t.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0, class T>
void reference_forward(std::vector<long double>& out, std::vector<long double>& att, const std::vector<T>& qkv) {
  using sz = sizes<B, S, H, KVH, D>;
  out.assign(sz::out, 0.0L);
  att.assign(sz::att, 0.0L);
  const long double inf = std::numeric_limits<long double>::infinity();
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t kvh = h / (H / KVH);
      for (std::size_t t = 0; t < S; ++t) {
        std::vector<long double> scores(S);
        for (std::size_t u = 0; u < S; ++u) {
          if (u > t || (W > 0 && t - u >= W)) {
            scores[u] = -inf;
            continue;
          }
          long double dot = 0;
          for (std::size_t d = 0; d < D; ++d) {
            const long double q = qkv[(b * S + t) * sz::width + h * D + d];
            const long double k = qkv[(b * S + u) * sz::width + (H + kvh) * D + d];
            dot += q * k;
          }
          scores[u] = dot / std::sqrt(static_cast<long double>(D));
        }
        const long double m = *std::max_element(scores.begin(), scores.end());
        long double sum = 0;
        for (auto& s : scores) {
          s = std::exp(s - m);  // exp(-inf) = 0 for the masked entries
          sum += s;
        }
        for (std::size_t u = 0; u < S; ++u) {
          const long double p = scores[u] / sum;
          att[((b * H + h) * S + t) * S + u] = p;
          for (std::size_t d = 0; d < D; ++d) {
            const long double v = qkv[(b * S + u) * sz::width + (H + KVH + kvh) * D + d];
            out[(b * S + t) * H * D + h * D + d] += p * v;
          }
        }
      }
    }
  }
}

template <class T>
long double max_abs_diff(const std::vector<T>& a, const std::vector<long double>& b) {
  long double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<long double>(a[i]) - b[i]));
  return m;
}

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void check_forward_against_reference(std::uint64_t seed) {
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, seed, -2.0, 2.0);
  std::vector<double> out(sz::out, -7.0), att(sz::att, -7.0);  // junk: forward must overwrite
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out.data(), att.data(), qkv.data());

  std::vector<long double> ref_out, ref_att;
  reference_forward<B, S, H, KVH, D, W>(ref_out, ref_att, qkv);
  CHECK(max_abs_diff(out, ref_out) < 1e-13L);
  CHECK(max_abs_diff(att, ref_att) < 1e-13L);
}

// L = sum(out * R)
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
double loss(const std::vector<double>& qkv, const std::vector<double>& r) {
  using sz = sizes<B, S, H, KVH, D>;
  std::vector<double> out(sz::out), att(sz::att);
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out.data(), att.data(), qkv.data());
  long double l = 0;
  for (std::size_t i = 0; i < out.size(); ++i) l += static_cast<long double>(out[i]) * r[i];
  return static_cast<double>(l);
}

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
std::vector<double> analytic_gradient(const std::vector<double>& qkv, const std::vector<double>& r) {
  using sz = sizes<B, S, H, KVH, D>;
  std::vector<double> out(sz::out), att(sz::att), scratch(weft::ops::attention_scratch_v<B, S, H, KVH, D>);
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out.data(), att.data(), qkv.data());
  std::vector<double> dqkv(sz::qkv, 0.0);
  weft::ops::attention_backward<B, S, H, KVH, D, W>(weft::host_context{}, dqkv.data(), scratch.data(), r.data(), qkv.data(), att.data());
  return dqkv;
}

// Every element of dqkv against a central difference of L.
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void check_backward_finite_differences(std::uint64_t seed) {
  using sz = sizes<B, S, H, KVH, D>;
  auto qkv = random_vector<double>(sz::qkv, seed, -1.5, 1.5);
  const auto r = random_vector<double>(sz::out, seed + 1);
  const auto grad = analytic_gradient<B, S, H, KVH, D, W>(qkv, r);

  const double eps = 1e-5;
  double err2 = 0, ref2 = 0, max_rel = 0;
  for (std::size_t i = 0; i < sz::qkv; ++i) {
    const double x = qkv[i];
    qkv[i] = x + eps;
    const double lp = loss<B, S, H, KVH, D, W>(qkv, r);
    qkv[i] = x - eps;
    const double lm = loss<B, S, H, KVH, D, W>(qkv, r);
    qkv[i] = x;
    const double fd = (lp - lm) / (2 * eps);
    err2 += (grad[i] - fd) * (grad[i] - fd);
    ref2 += fd * fd;
    max_rel = std::max(max_rel, std::fabs(grad[i] - fd) / std::max(std::fabs(fd), 1e-3));
  }
  REQUIRE(ref2 > 0);
  CHECK(std::sqrt(err2 / ref2) <= 1e-6);  // relative error of the whole gradient
  CHECK(max_rel <= 1e-6);                 // and of each element (absolute near 0)
}

}  // namespace

TEST_CASE("attention forward matches a naive long double reference", "[ops][attention]") {
  SECTION("multi-head: kv_heads == heads") { check_forward_against_reference<2, 7, 4, 4, 8>(11); }
  SECTION("multi-query: kv_heads == 1") { check_forward_against_reference<2, 7, 4, 1, 8>(12); }
  SECTION("grouped-query: 2 kv heads for 4 heads") { check_forward_against_reference<2, 7, 4, 2, 8>(13); }
  SECTION("odd sizes, one token") { check_forward_against_reference<1, 1, 3, 3, 5>(14); }
  SECTION("large enough to run in parallel") { check_forward_against_reference<2, 64, 4, 2, 16>(15); }
}

TEST_CASE("sliding-window attention matches the masked reference and finite differences", "[ops][attention][window]") {
  SECTION("window 1: each query sees only itself") { check_forward_against_reference<2, 7, 4, 2, 8, 1>(16); }
  SECTION("window 3, grouped-query") { check_forward_against_reference<2, 9, 4, 2, 8, 3>(17); }
  SECTION("window 5, multi-query, in parallel") { check_forward_against_reference<2, 64, 4, 1, 16, 5>(18); }
  SECTION("backward, window 2") { check_backward_finite_differences<1, 6, 2, 1, 4, 2>(19); }
  SECTION("backward, window 4, grouped-query") { check_backward_finite_differences<2, 7, 4, 2, 3, 4>(20); }
}

TEST_CASE("a window of the sequence or more is plain causal attention, bit for bit", "[ops][attention][window]") {
  constexpr std::size_t B = 2, S = 9, H = 4, KVH = 2, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 21, -2.0, 2.0);
  const auto r = random_vector<double>(sz::out, 22);
  std::vector<double> out0(sz::out), att0(sz::att), outw(sz::out), attw(sz::att);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out0.data(), att0.data(), qkv.data());
  weft::ops::attention_forward<B, S, H, KVH, D, S>(weft::host_context{}, outw.data(), attw.data(), qkv.data());
  CHECK(out0 == outw);
  CHECK(att0 == attw);
  CHECK(analytic_gradient<B, S, H, KVH, D>(qkv, r) == analytic_gradient<B, S, H, KVH, D, S + 3>(qkv, r));
  // and a shorter window changes the later rows only
  weft::ops::attention_forward<B, S, H, KVH, D, 4>(weft::host_context{}, outw.data(), attw.data(), qkv.data());
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t j = 0; j < H * D; ++j) REQUIRE(outw[t * H * D + j] == out0[t * H * D + j]);
  CHECK(outw[4 * H * D] != out0[4 * H * D]);
}

TEST_CASE("sliding-window attention in bf16 follows the f64 op", "[ops][attention][window][bf16]") {
  constexpr std::size_t B = 2, S = 33, H = 4, KVH = 2, D = 16, W = 7;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 23, -1.0, 1.0);
  const auto dout = random_vector<double>(sz::out, 24);
  std::vector<weft::bf16> qkv_b, dout_b;
  for (double x : qkv) qkv_b.push_back(weft::bf16(static_cast<float>(x)));
  for (double x : dout) dout_b.push_back(weft::bf16(static_cast<float>(x)));
  std::vector<double> qkv_r, dout_r;  // the rounded inputs
  for (auto x : qkv_b) qkv_r.push_back(static_cast<float>(x));
  for (auto x : dout_b) dout_r.push_back(static_cast<float>(x));
  std::vector<weft::bf16> out_b(sz::out), att_b(sz::att), scratch_b(sz::att), dqkv_b(sz::qkv, weft::bf16(0.0f));
  std::vector<double> out(sz::out), att(sz::att), scratch(sz::att), dqkv(sz::qkv, 0.0);
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out_b.data(), att_b.data(), qkv_b.data());
  weft::ops::attention_backward<B, S, H, KVH, D, W>(weft::host_context{}, dqkv_b.data(), scratch_b.data(), dout_b.data(),
                                                    qkv_b.data(), att_b.data());
  weft::ops::attention_forward<B, S, H, KVH, D, W>(weft::host_context{}, out.data(), att.data(), qkv_r.data());
  weft::ops::attention_backward<B, S, H, KVH, D, W>(weft::host_context{}, dqkv.data(), scratch.data(), dout_r.data(),
                                                    qkv_r.data(), att.data());
  auto close = [](const std::vector<weft::bf16>& got, const std::vector<double>& want) {
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(static_cast<float>(got[i])) - want[i]));
      scale = std::max(scale, std::fabs(want[i]));
    }
    return err <= 3e-2 * scale;
  };
  CHECK(close(out_b, out));
  CHECK(close(att_b, att));
  CHECK(close(dqkv_b, dqkv));
  for (std::size_t t = W; t < S; ++t) REQUIRE(static_cast<float>(att_b[t * S + t - W]) == 0.0f);  // masked
}

TEST_CASE("attention in long double matches the reference", "[ops][attention]") {
  constexpr std::size_t B = 1, S = 6, H = 4, KVH = 2, D = 4;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<long double>(sz::qkv, 16, -2.0, 2.0);
  std::vector<long double> out(sz::out), att(sz::att);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), att.data(), qkv.data());
  std::vector<long double> ref_out, ref_att;
  reference_forward<B, S, H, KVH, D>(ref_out, ref_att, qkv);
  CHECK(max_abs_diff(out, ref_out) < 1e-16L);
  CHECK(max_abs_diff(att, ref_att) < 1e-16L);
}

TEST_CASE("attention probabilities are causal rows that sum to 1", "[ops][attention]") {
  constexpr std::size_t B = 2, S = 9, H = 4, KVH = 2, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 21, -3.0, 3.0);
  std::vector<double> out(sz::out), att(sz::att, -1.0);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), att.data(), qkv.data());
  for (std::size_t row = 0; row < B * H * S; ++row) {
    const std::size_t t = row % S;
    double sum = 0;
    for (std::size_t u = 0; u < S; ++u) {
      const double p = att[row * S + u];
      if (u > t) {
        REQUIRE(p == 0.0);
      } else {
        REQUIRE(p > 0.0);
        sum += p;
      }
    }
    REQUIRE(sum == Approx(1.0).margin(1e-14));
  }
  // Row 0 attends to itself only.
  REQUIRE(att[0] == 1.0);
}

TEST_CASE("attention is causal: a future token changes no earlier output", "[ops][attention]") {
  constexpr std::size_t B = 2, S = 8, H = 4, KVH = 2, D = 4;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 31);
  std::vector<double> out(sz::out), att(sz::att);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), att.data(), qkv.data());

  constexpr std::size_t changed = 5;  // token whose q, k and v are replaced
  auto qkv2 = qkv;
  auto noise = random_vector<double>(sz::width, 32, -5.0, 5.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = 0; j < sz::width; ++j) qkv2[(b * S + changed) * sz::width + j] = noise[j];
  std::vector<double> out2(sz::out), att2(sz::att);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out2.data(), att2.data(), qkv2.data());

  bool later_changed = false;
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t t = 0; t < S; ++t) {
      for (std::size_t j = 0; j < H * D; ++j) {
        const std::size_t i = (b * S + t) * H * D + j;
        if (t < changed) REQUIRE(out[i] == out2[i]);
        else if (out[i] != out2[i]) later_changed = true;
      }
    }
  }
  REQUIRE(later_changed);  // the change is visible from its own position on
}

TEST_CASE("grouped-query attention equals multi-head attention with repeated kv heads", "[ops][attention]") {
  constexpr std::size_t B = 2, S = 6, H = 6, KVH = 2, D = 4, group = H / KVH;
  using gqa = sizes<B, S, H, KVH, D>;
  using mha = sizes<B, S, H, H, D>;
  const auto qkv = random_vector<double>(gqa::qkv, 41, -2.0, 2.0);
  // Expand: head h of the MHA buffer gets kv head h / group of the GQA buffer.
  std::vector<double> expanded(mha::qkv);
  for (std::size_t n = 0; n < B * S; ++n) {
    const double* src = qkv.data() + n * gqa::width;
    double* dst = expanded.data() + n * mha::width;
    for (std::size_t j = 0; j < H * D; ++j) dst[j] = src[j];
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t d = 0; d < D; ++d) {
        dst[(H + h) * D + d] = src[(H + h / group) * D + d];
        dst[(2 * H + h) * D + d] = src[(H + KVH + h / group) * D + d];
      }
    }
  }
  std::vector<double> out(gqa::out), att(gqa::att), out_mha(mha::out), att_mha(mha::att);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), att.data(), qkv.data());
  weft::ops::attention_forward<B, S, H, H, D>(weft::host_context{}, out_mha.data(), att_mha.data(), expanded.data());
  for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == Approx(out_mha[i]).margin(1e-14));
  for (std::size_t i = 0; i < att.size(); ++i) REQUIRE(att[i] == Approx(att_mha[i]).margin(1e-14));
}

TEST_CASE("attention backward matches central finite differences", "[ops][attention]") {
  SECTION("multi-head") { check_backward_finite_differences<2, 5, 4, 4, 4>(51); }
  SECTION("multi-query") { check_backward_finite_differences<2, 5, 4, 1, 4>(52); }
  SECTION("grouped-query") { check_backward_finite_differences<2, 5, 4, 2, 4>(53); }
  SECTION("odd head dimension") { check_backward_finite_differences<1, 4, 3, 1, 3>(54); }
}

TEST_CASE("attention backward in parallel matches directional finite differences", "[ops][attention]") {
  // Too large for element-wise differences; <grad, u> against (L(x + eps u) - L(x - eps u)) / 2 eps.
  constexpr std::size_t B = 2, S = 64, H = 4, KVH = 2, D = 16;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 61, -1.5, 1.5);
  const auto r = random_vector<double>(sz::out, 62);
  const auto grad = analytic_gradient<B, S, H, KVH, D>(qkv, r);
  for (std::uint64_t seed = 63; seed < 66; ++seed) {
    const auto u = random_vector<double>(sz::qkv, seed);
    const double eps = 1e-5;
    auto xp = qkv, xm = qkv;
    long double dir = 0;
    for (std::size_t i = 0; i < sz::qkv; ++i) {
      xp[i] += eps * u[i];
      xm[i] -= eps * u[i];
      dir += static_cast<long double>(grad[i]) * u[i];
    }
    const double fd = (loss<B, S, H, KVH, D>(xp, r) - loss<B, S, H, KVH, D>(xm, r)) / (2 * eps);
    CHECK(std::fabs(static_cast<double>(dir) - fd) <= 1e-6 * std::fabs(fd));
  }
}

TEST_CASE("attention backward accumulates into dqkv", "[ops][attention]") {
  constexpr std::size_t B = 1, S = 5, H = 4, KVH = 2, D = 4;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv = random_vector<double>(sz::qkv, 71);
  const auto dout = random_vector<double>(sz::out, 72);
  const auto fresh = analytic_gradient<B, S, H, KVH, D>(qkv, dout);

  std::vector<double> out(sz::out), att(sz::att), scratch(weft::ops::attention_scratch_v<B, S, H, KVH, D>);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), att.data(), qkv.data());
  const auto prior = random_vector<double>(sz::qkv, 73);
  auto dqkv = prior;
  weft::ops::attention_backward<B, S, H, KVH, D>(weft::host_context{}, dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data());
  for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(dqkv[i] == Approx(prior[i] + fresh[i]).margin(1e-14));
}

TEST_CASE("attention in float agrees with double", "[ops][attention]") {
  constexpr std::size_t B = 2, S = 16, H = 4, KVH = 2, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto qkv_d = random_vector<double>(sz::qkv, 81);
  const auto dout_d = random_vector<double>(sz::out, 82);
  const std::vector<float> qkv_f(qkv_d.begin(), qkv_d.end()), dout_f(dout_d.begin(), dout_d.end());

  std::vector<double> out_d(sz::out), att_d(sz::att), scr_d(sz::att), dqkv_d(sz::qkv, 0.0);
  std::vector<float> out_f(sz::out), att_f(sz::att), scr_f(sz::att), dqkv_f(sz::qkv, 0.0f);
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out_d.data(), att_d.data(), qkv_d.data());
  weft::ops::attention_forward<B, S, H, KVH, D>(weft::host_context{}, out_f.data(), att_f.data(), qkv_f.data());
  weft::ops::attention_backward<B, S, H, KVH, D>(weft::host_context{}, dqkv_d.data(), scr_d.data(), dout_d.data(), qkv_d.data(),
                                                                       att_d.data());
  weft::ops::attention_backward<B, S, H, KVH, D>(weft::host_context{}, dqkv_f.data(), scr_f.data(), dout_f.data(), qkv_f.data(),
                                                                       att_f.data());
  for (std::size_t i = 0; i < sz::out; ++i) REQUIRE(out_f[i] == Approx(out_d[i]).margin(1e-5));
  for (std::size_t i = 0; i < sz::att; ++i) REQUIRE(att_f[i] == Approx(att_d[i]).margin(1e-5));
  for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(dqkv_f[i] == Approx(dqkv_d[i]).margin(2e-5));
}

TEST_CASE("attention usage snippet", "[ops][attention][docs]") {
  // example-begin attention-usage
  const weft::host_context ctx;  // the host backend; every op takes the context first
  constexpr std::size_t B = 2, S = 16, H = 8, KVH = 2, D = 32;  // 4 query heads per kv head
  std::vector<float> qkv(B * S * (H + 2 * KVH) * D);           // (batch, seq, (H + 2*KVH) * D)
  std::vector<float> out(B * S * H * D);                        // (batch, seq, H * D)
  std::vector<float> att(B * H * S * S);                        // (batch, heads, seq, seq) kept
  std::vector<float> scratch(weft::ops::attention_scratch_v<B, S, H, KVH, D>);
  std::vector<float> dout(out.size(), 1.0f), dqkv(qkv.size(), 0.0f);  // caller zeroes gradients

  weft::ops::attention_forward<B, S, H, KVH, D>(ctx, out.data(), att.data(), qkv.data());
  weft::ops::attention_backward<B, S, H, KVH, D>(ctx, dqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                                 att.data());
  // example-end attention-usage
  // All-zero qkv: uniform attention over the visible prefix.
  REQUIRE(att[(S - 1) * S] == Approx(1.0f / S));
}
