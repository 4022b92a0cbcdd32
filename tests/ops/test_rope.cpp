// Tests for weft::ops::rope_forward / rope_backward (rotate-half rotary embedding, HF LLaMA style).
// The reference builds the HF form directly in long double: cos/sin of width D (frequencies
// repeated twice) and q * cos + rotate_half(q) * sin with rotate_half(x) = [-x2, x1].
#include "weft/ops/rope.hpp"  // rope_forward, rope_backward

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace {

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D>
struct sizes {
  static constexpr std::size_t width = (H + 2 * KVH) * D;
  static constexpr std::size_t qkv = B * S * width;
};

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// ---- HF-style reference ----
// GPT-NeoX / HF form with a base and a rotary dimension R (R = D: LLaMA's whole head): the first R
// elements of each q and k head rotate with cos/sin of width R, the rest pass through.
// HF's _compute_llama3_parameters on one inverse frequency (factor 0: no scaling).
struct llama3_reference {
  long double factor = 0, low = 1, high = 4, original = 8192;
  long double operator()(long double inv_freq) const {
    if (factor == 0) return inv_freq;
    const long double pi = 3.14159265358979323846264338327950288L;
    const long double wavelen = 2 * pi / inv_freq;
    const long double low_wavelen = original / low, high_wavelen = original / high;
    long double llama = wavelen > low_wavelen ? inv_freq / factor : inv_freq;
    const long double smooth = (original / wavelen - low) / (high - low);
    const long double smoothed = (1 - smooth) * llama / factor + smooth * llama;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    return medium ? smoothed : llama;
  }
};

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class T>
std::vector<long double> reference_forward(const std::vector<T>& qkv, llama3_reference scale = {}) {
  using sz = sizes<B, S, H, KVH, D>;
  std::vector<long double> out(qkv.begin(), qkv.end());  // v heads and unrotated tails stay as they are
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t s = 0; s < S; ++s) {
      // emb = cat(freqs, freqs); freqs[i] = pos / Base^(2i/R)
      std::vector<long double> cos_d(R), sin_d(R);
      for (std::size_t j = 0; j < R; ++j) {
        const std::size_t i = j % (R / 2);
        const long double f = static_cast<long double>(s) * scale(1 / std::pow(static_cast<long double>(Base), (2.0L * i) / R));
        cos_d[j] = std::cos(f);
        sin_d[j] = std::sin(f);
      }
      for (std::size_t head = 0; head < H + KVH; ++head) {
        const std::size_t base = (b * S + s) * sz::width + head * D;
        std::vector<long double> x(R), rot(R);
        for (std::size_t j = 0; j < R; ++j) x[j] = qkv[base + j];
        for (std::size_t j = 0; j < R / 2; ++j) {
          rot[j] = -x[j + R / 2];
          rot[j + R / 2] = x[j];
        }
        for (std::size_t j = 0; j < R; ++j) out[base + j] = x[j] * cos_d[j] + rot[j] * sin_d[j];
      }
    }
  }
  return out;
}

template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = weft::no_rope_scaling>
void check_forward_against_reference(std::uint64_t seed, llama3_reference scale = {}) {
  // a frequency scaling is applied in double (ops/rope.hpp), the rest of the table in long double
  const long double tolerance = Scaling::enabled ? 1e-13L : 1e-14L;
  using sz = sizes<B, S, H, KVH, D>;
  const auto in = random_vector<double>(sz::qkv, seed, -2.0, 2.0);
  std::vector<double> out(sz::qkv, -7.0);
  weft::ops::rope_forward<B, S, H, KVH, D, Base, R, Scaling>(weft::host_context{}, out.data(), in.data());
  const auto ref = reference_forward<B, S, H, KVH, D, Base, R>(in, scale);
  long double err = 0;
  for (std::size_t i = 0; i < sz::qkv; ++i) err = std::max(err, std::fabs(out[i] - ref[i]));
  CHECK(err < tolerance);
  // v heads and the unrotated tails are copied bit for bit
  for (std::size_t n = 0; n < B * S; ++n) {
    for (std::size_t j = (H + KVH) * D; j < sz::width; ++j) REQUIRE(out[n * sz::width + j] == in[n * sz::width + j]);
    for (std::size_t head = 0; head < H + KVH; ++head)
      for (std::size_t j = R; j < D; ++j) REQUIRE(out[n * sz::width + head * D + j] == in[n * sz::width + head * D + j]);
  }
}

double dot(const double* a, const double* b, std::size_t n) {
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<long double>(a[i]) * b[i];
  return static_cast<double>(s);
}

}  // namespace

TEST_CASE("rope forward matches the HF rotate-half reference", "[ops][rope]") {
  SECTION("grouped-query") { check_forward_against_reference<2, 7, 4, 2, 8>(11); }
  SECTION("multi-query, D = 2") { check_forward_against_reference<1, 5, 3, 1, 2>(12); }
  SECTION("large enough to run in parallel") { check_forward_against_reference<2, 128, 4, 2, 16>(13); }
  SECTION("LLaMA 3's base 500000") { check_forward_against_reference<2, 40, 4, 2, 16, 500000>(14); }
  SECTION("Qwen 2's base 1000000, multi-query") { check_forward_against_reference<1, 33, 4, 1, 8, 1000000>(15); }
  SECTION("partial rotary: 4 of 8 (GPT-NeoX rotary_pct 0.5)") { check_forward_against_reference<2, 9, 4, 2, 8, 10000, 4>(16); }
  SECTION("partial rotary: 6 of 16 with base 500000") { check_forward_against_reference<2, 17, 2, 1, 16, 500000, 6>(17); }
  SECTION("partial rotary in parallel") { check_forward_against_reference<2, 128, 4, 2, 16, 10000, 2>(18); }
  // base 500000 over 16: wavelengths from 6 to ~10^5, so every band of the scaling is crossed
  SECTION("LLaMA 3.1's frequency scaling") {
    check_forward_against_reference<1, 300, 2, 1, 16, 500000, 16, weft::llama3_rope_scaling<8>>(20, {8, 1, 4, 8192});
  }
  SECTION("LLaMA 3.2's, a small original context") {
    check_forward_against_reference<2, 40, 4, 2, 8, 500000, 8, weft::llama3_rope_scaling<32, 1, 4, 64>>(21,
                                                                                                     {32, 1, 4, 64});
  }
}

TEST_CASE("LLaMA 3.1's frequency scaling keeps high, slows low and blends the band between", "[ops][rope]") {
  using sc = weft::llama3_rope_scaling<8>;  // low 1, high 4, original context 8192
  constexpr double pi = 3.141592653589793;
  STATIC_REQUIRE(sc::apply(1.0) == 1.0);                                    // wavelength 2π
  STATIC_REQUIRE(sc::apply(2 * pi / 2000.0) == 2 * pi / 2000.0);            // under 8192 / 4
  STATIC_REQUIRE(sc::apply(2 * pi / 10000.0) == 2 * pi / 10000.0 / 8);      // over 8192 / 1
  constexpr double mid = 2 * pi / 4096.0, smooth = (8192.0 / 4096.0 - 1) / 3;  // 1/3 of the way
  REQUIRE(sc::apply(mid) == Approx((1 - smooth) * mid / 8 + smooth * mid).epsilon(1e-15));
  STATIC_REQUIRE(weft::no_rope_scaling::apply(0.25) == 0.25);
}

TEST_CASE("rope's base changes every angle but position 0's", "[ops][rope]") {
  constexpr std::size_t B = 1, S = 8, H = 2, KVH = 1, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto in = random_vector<double>(sz::qkv, 19);
  std::vector<double> a(sz::qkv), b(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, a.data(), in.data());
  weft::ops::rope_forward<B, S, H, KVH, D, 500000>(weft::host_context{}, b.data(), in.data());
  for (std::size_t j = 0; j < sz::width; ++j) REQUIRE(a[j] == b[j]);  // position 0: the identity in both
  // at position 1 the first pair turns by 1 rad in both (i = 0: Base^0), the others by less with the larger base
  const std::size_t row1 = sz::width;
  REQUIRE(a[row1 + 0] == Approx(b[row1 + 0]).margin(1e-15));
  REQUIRE(std::fabs(a[row1 + 1] - b[row1 + 1]) > 1e-3);
}

TEST_CASE("rope preserves the norm of every rotated pair", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 33, H = 4, KVH = 2, D = 16, half = D / 2;
  using sz = sizes<B, S, H, KVH, D>;
  const auto in = random_vector<double>(sz::qkv, 21, -3.0, 3.0);
  std::vector<double> out(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), in.data());
  bool rotated = false;
  for (std::size_t n = 0; n < B * S; ++n) {
    for (std::size_t head = 0; head < H + KVH; ++head) {
      const std::size_t base = n * sz::width + head * D;
      for (std::size_t i = 0; i < half; ++i) {
        const double a = in[base + i], b = in[base + i + half];
        const double c = out[base + i], d = out[base + i + half];
        REQUIRE(c * c + d * d == Approx(a * a + b * b).epsilon(1e-13));
        if (std::fabs(c - a) > 1e-6) rotated = true;
      }
    }
  }
  REQUIRE(rotated);  // and it is not the identity
}

TEST_CASE("rope at position 0 is the identity", "[ops][rope]") {
  constexpr std::size_t B = 3, S = 4, H = 2, KVH = 1, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto in = random_vector<double>(sz::qkv, 31);
  std::vector<double> out(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), in.data());
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = 0; j < sz::width; ++j) REQUIRE(out[b * S * sz::width + j] == in[b * S * sz::width + j]);
}

TEST_CASE("rope scores depend only on the relative position", "[ops][rope]") {
  // The same q vector at every position, the same k vector at every position.
  constexpr std::size_t B = 1, S = 12, H = 1, KVH = 1, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto q = random_vector<double>(D, 41), k = random_vector<double>(D, 42);
  std::vector<double> in(sz::qkv, 0.0);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t j = 0; j < D; ++j) {
      in[s * sz::width + j] = q[j];
      in[s * sz::width + D + j] = k[j];
    }
  std::vector<double> out(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), in.data());
  auto score = [&](std::size_t m, std::size_t n) {
    return dot(out.data() + m * sz::width, out.data() + n * sz::width + D, D);
  };
  for (std::size_t m = 0; m < S; ++m) {
    for (std::size_t n = 0; n < S; ++n) {
      // shift both positions to the smallest pair with the same offset
      const std::size_t shift = std::min(m, n);
      REQUIRE(score(m, n) == Approx(score(m - shift, n - shift)).margin(1e-13));
    }
  }
  REQUIRE(std::fabs(score(3, 0) - score(0, 0)) > 1e-6);  // different offsets do differ
}

TEST_CASE("rope backward matches central finite differences", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 5, H = 2, KVH = 1, D = 6;
  using sz = sizes<B, S, H, KVH, D>;
  auto x = random_vector<double>(sz::qkv, 51);
  const auto r = random_vector<double>(sz::qkv, 52);
  auto loss = [&](const std::vector<double>& v) {
    std::vector<double> out(sz::qkv);
    weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, out.data(), v.data());
    return dot(out.data(), r.data(), sz::qkv);
  };
  std::vector<double> grad(sz::qkv, 0.0);
  weft::ops::rope_backward<B, S, H, KVH, D>(weft::host_context{}, grad.data(), r.data());

  const double eps = 1e-5;
  double err2 = 0, ref2 = 0, max_abs = 0;
  for (std::size_t i = 0; i < sz::qkv; ++i) {
    const double xi = x[i];
    x[i] = xi + eps;
    const double lp = loss(x);
    x[i] = xi - eps;
    const double lm = loss(x);
    x[i] = xi;
    const double fd = (lp - lm) / (2 * eps);
    err2 += (grad[i] - fd) * (grad[i] - fd);
    ref2 += fd * fd;
    max_abs = std::max(max_abs, std::fabs(grad[i] - fd));
  }
  REQUIRE(ref2 > 0);
  CHECK(std::sqrt(err2 / ref2) <= 1e-6);
  CHECK(max_abs <= 1e-6);
}

TEST_CASE("rope backward inverts the forward and accumulates", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 9, H = 4, KVH = 2, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto x = random_vector<double>(sz::qkv, 61);
  std::vector<double> y(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, y.data(), x.data());

  SECTION("backward of the output gives the input back (the rotation is orthogonal)") {
    std::vector<double> back(sz::qkv, 0.0);
    weft::ops::rope_backward<B, S, H, KVH, D>(weft::host_context{}, back.data(), y.data());
    for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(back[i] == Approx(x[i]).margin(1e-14));
  }
  SECTION("backward adds to what is already there") {
    const auto prior = random_vector<double>(sz::qkv, 62);
    auto back = prior;
    weft::ops::rope_backward<B, S, H, KVH, D>(weft::host_context{}, back.data(), y.data());
    for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(back[i] == Approx(prior[i] + x[i]).margin(1e-14));
  }
}

TEST_CASE("partial rotary: backward is the forward's transpose, in place equals out of place", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 7, H = 4, KVH = 2, D = 12, Base = 500000, R = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto x = random_vector<double>(sz::qkv, 63);
  const auto g = random_vector<double>(sz::qkv, 64);
  std::vector<double> y(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D, Base, R>(weft::host_context{}, y.data(), x.data());
  auto z = x;
  weft::ops::rope_forward<B, S, H, KVH, D, Base, R>(weft::host_context{}, z.data(), z.data());
  for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(z[i] == y[i]);
  // <g, rope(x)> == <rope^T(g), x> for a linear map, and rope^T(rope(x)) == x for an orthogonal one
  const auto prior = random_vector<double>(sz::qkv, 65);
  auto dx = prior;
  weft::ops::rope_backward<B, S, H, KVH, D, Base, R>(weft::host_context{}, dx.data(), g.data());
  std::vector<double> gt(sz::qkv);
  for (std::size_t i = 0; i < sz::qkv; ++i) gt[i] = dx[i] - prior[i];
  REQUIRE(dot(g.data(), y.data(), sz::qkv) == Approx(dot(gt.data(), x.data(), sz::qkv)).epsilon(1e-13));
  std::vector<double> back(sz::qkv, 0.0);
  weft::ops::rope_backward<B, S, H, KVH, D, Base, R>(weft::host_context{}, back.data(), y.data());
  for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(back[i] == Approx(x[i]).margin(1e-14));
}

TEST_CASE("rope forward works in place", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 6, H = 4, KVH = 2, D = 8;
  using sz = sizes<B, S, H, KVH, D>;
  const auto x = random_vector<double>(sz::qkv, 71);
  std::vector<double> y(sz::qkv);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, y.data(), x.data());
  auto z = x;
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, z.data(), z.data());
  for (std::size_t i = 0; i < sz::qkv; ++i) REQUIRE(z[i] == y[i]);
}

TEST_CASE("rope in float agrees with double", "[ops][rope]") {
  constexpr std::size_t B = 2, S = 64, H = 4, KVH = 2, D = 16;
  using sz = sizes<B, S, H, KVH, D>;
  const auto x_d = random_vector<double>(sz::qkv, 81);
  const auto g_d = random_vector<double>(sz::qkv, 82);
  const std::vector<float> x_f(x_d.begin(), x_d.end()), g_f(g_d.begin(), g_d.end());
  std::vector<double> y_d(sz::qkv), dx_d(sz::qkv, 0.0);
  std::vector<float> y_f(sz::qkv), dx_f(sz::qkv, 0.0f);
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, y_d.data(), x_d.data());
  weft::ops::rope_forward<B, S, H, KVH, D>(weft::host_context{}, y_f.data(), x_f.data());
  weft::ops::rope_backward<B, S, H, KVH, D>(weft::host_context{}, dx_d.data(), g_d.data());
  weft::ops::rope_backward<B, S, H, KVH, D>(weft::host_context{}, dx_f.data(), g_f.data());
  for (std::size_t i = 0; i < sz::qkv; ++i) {
    REQUIRE(y_f[i] == Approx(y_d[i]).margin(1e-6));
    REQUIRE(dx_f[i] == Approx(dx_d[i]).margin(1e-6));
  }
}

TEST_CASE("rope usage snippet", "[ops][rope][docs]") {
  // example-begin rope-usage
  const weft::host_context ctx;
  constexpr std::size_t B = 2, S = 16, H = 8, KVH = 2, D = 32;
  std::vector<float> qkv(B * S * (H + 2 * KVH) * D, 1.0f);  // from the qkv projection
  weft::ops::rope_forward<B, S, H, KVH, D>(ctx, qkv.data(), qkv.data());  // in place is allowed
  // ... attention_forward<B, S, H, KVH, D>(ctx, out, att, qkv) ...
  std::vector<float> dqkv_rot(qkv.size(), 0.5f), dqkv(qkv.size(), 0.0f);
  weft::ops::rope_backward<B, S, H, KVH, D>(ctx, dqkv.data(), dqkv_rot.data());  // dqkv += R^T dqkv_rot
  // example-end rope-usage
  REQUIRE(qkv[0] == 1.0f);  // position 0 is not rotated
}
