// The tensor-core flash attention (backend/cuda/kernels/flash_attention.hpp) and its warp-level
// product (mma.hpp) on the emulated grid:
//   * the lane -> (row, col) coordinates of A, B and C agree with the m16n8k16 layouts written
//     independently here (CuTe's SM80_16x8x16 layouts), and the register gathers the device
//     uses rebuild every operand exactly, in both storage orders;
//   * forward (out and the kept row log-sum-exp) and backward (dq, dk, dv through the delta, dq
//     and dkv kernels) against the host attention ops in double, bf16 and f16, head dims 64 and
//     128, grouped-query heads, sequences that are not a multiple of the tiles; and with sliding
//     windows of 1 key, of a few keys (whole tiles, and a warp's part of a tile, before the
//     window skipped; tiles the window's edge crosses masked) and of at least S keys;
//   * the emulator's warp barriers: a kernel that reads another warp's shared memory across a
//     warp barrier gives different results in the two emulation orders.
#include <weft/backend/cuda/kernels/flash_attention.hpp>  // make_mma_attention_forward/backward
#include <weft/backend/cuda/kernels/mma.hpp>              // warp_mma, mma_gather_a/b, mma_*_coord
#include <weft/ops/attention.hpp>

#include "kernel_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace k = weft::cuda::kernels;
using weft::bf16;
using weft::f16;

namespace {

// ---- the m16n8k16 layouts as CuTe writes them: (thread, value) -> column-major offset ----
// A (M16 × K16): thread (4, 8):(32, 1), value (2, 2, 2):(16, 8, 128); offset = m + 16 k.
k::mma_coord cute_a(unsigned lane, unsigned v) {
  const unsigned o = 32 * (lane % 4) + (lane / 4) + 16 * (v % 2) + 8 * ((v / 2) % 2) + 128 * (v / 4);
  return {o % 16, o / 16};
}
// B (N8 × K16): thread (4, 8):(16, 1), value (2, 2):(8, 64); offset = n + 8 k. Returned as (k, n).
k::mma_coord cute_b(unsigned lane, unsigned v) {
  const unsigned o = 16 * (lane % 4) + (lane / 4) + 8 * (v % 2) + 64 * (v / 2);
  return {o / 8, o % 8};
}
// C (M16 × N8): thread (4, 8):(32, 1), value (2, 2):(16, 8); offset = m + 16 n.
k::mma_coord cute_c(unsigned lane, unsigned v) {
  const unsigned o = 32 * (lane % 4) + (lane / 4) + 16 * (v % 2) + 8 * (v / 2);
  return {o % 16, o / 16};
}

template <class T>
T from_bits(std::uint16_t b) {
  T x;
  std::memcpy(&x, &b, sizeof b);
  return x;
}

// Rebuilds A (16×16) and B (16×8) from 32 lanes' gathered registers and checks them, and each
// lane's products, against the matrices. ARS/ACS, BRS/BCS choose the storage order.
template <class T, int ARS, int ACS, int BRS, int BCS>
void gather_case(const char* what) {
  INFO(what);
  std::mt19937 rng(7);
  auto a = kcheck::random<T>(16 * 16 * 2, rng), b = kcheck::random<T>(16 * 16 * 2, rng);
  auto A = [&](unsigned m, unsigned kk) { return a[m * ARS + kk * ACS]; };
  auto Bm = [&](unsigned kk, unsigned n) { return b[kk * BRS + n * BCS]; };
  int seen_a[16][16] = {}, seen_b[16][8] = {}, seen_c[16][8] = {};
  for (unsigned lane = 0; lane < 32; ++lane) {
    std::uint32_t ra[4], rb[2];
    k::mma_gather_a<ARS, ACS>(ra, lane, a.data());
    k::mma_gather_b<BRS, BCS>(rb, lane, b.data());
    for (unsigned v = 0; v < 8; ++v) {
      const auto c = cute_a(lane, v), mine = k::mma_a_coord(lane, v);
      REQUIRE((c.row == mine.row && c.col == mine.col));
      const auto got = from_bits<T>(static_cast<std::uint16_t>(ra[v / 2] >> (16 * (v % 2))));
      CHECK(static_cast<float>(got) == static_cast<float>(A(c.row, c.col)));
      ++seen_a[c.row][c.col];
    }
    for (unsigned v = 0; v < 4; ++v) {
      const auto c = cute_b(lane, v), mine = k::mma_b_coord(lane, v);
      REQUIRE((c.row == mine.row && c.col == mine.col));
      const auto got = from_bits<T>(static_cast<std::uint16_t>(rb[v / 2] >> (16 * (v % 2))));
      CHECK(static_cast<float>(got) == static_cast<float>(Bm(c.row, c.col)));
      ++seen_b[c.row][c.col];
    }
    float acc[4] = {1, 2, 3, 4};  // accumulates onto what is there
    k::warp_mma<ARS, ACS, BRS, BCS>(acc, lane, a.data(), b.data());
    for (unsigned v = 0; v < 4; ++v) {
      const auto c = cute_c(lane, v), mine = k::mma_c_coord(lane, v);
      REQUIRE((c.row == mine.row && c.col == mine.col));
      double ref = v + 1;
      for (unsigned kk = 0; kk < 16; ++kk)
        ref += double(static_cast<float>(A(c.row, kk))) * double(static_cast<float>(Bm(kk, c.col)));
      CHECK(std::fabs(acc[v] - ref) <= 1e-5 * (1 + std::fabs(ref)));
      ++seen_c[c.row][c.col];
    }
  }
  for (auto& r : seen_a)
    for (int n : r) CHECK(n == 1);
  for (auto& r : seen_b)
    for (int n : r) CHECK(n == 1);
  for (auto& r : seen_c)
    for (int n : r) CHECK(n == 1);
}

// ---- adapters: one line each to follow a host-op signature change ----
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
void mma_attention_case() {
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + " KVH=" + std::to_string(KVH) +
                          " D=" + std::to_string(D) + (W > 0 ? " window=" + std::to_string(W) : "");
  constexpr std::size_t width = (H + 2 * KVH) * D;
  std::mt19937 rng(300 + D + S + H);
  auto qkv = kcheck::random<T>(B * S * width, rng, -2, 2);
  const auto rqkv = kcheck::widen(qkv);
  std::vector<T> out(B * S * H * D);
  std::vector<float> lse(B * H * S, NAN);
  k::emulate_launch(k::make_mma_attention_forward<B, S, H, KVH, D, W>(out.data(), lse.data(), qkv.data()));
  std::vector<double> rout(B * S * H * D), att(B * H * S * S);
  ref_attention_forward<B, S, H, KVH, D, W>(rout.data(), att.data(), rqkv.data());
  kcheck::check("mma_attention_forward out" + tag, out, rout, 2);
  std::vector<double> rlse(B * H * S);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < S; ++t) {
        const double* q = &rqkv[(b * S + t) * width + h * D];
        std::vector<double> sc;
        double mx = -INFINITY;
        for (std::size_t t2 = weft::ops::detail::window_first<W>(t); t2 <= t; ++t2) {
          const double* kk = &rqkv[(b * S + t2) * width + (H + h / (H / KVH)) * D];
          double s = 0;
          for (std::size_t i = 0; i < D; ++i) s += q[i] * kk[i];
          sc.push_back(s / std::sqrt(double(D)));
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double s : sc) sum += std::exp(s - mx);
        rlse[(b * H + h) * S + t] = mx + std::log(sum);
      }
  // lse is f32 from f32 scores: a few f32 ulps of its magnitude, plus the rounding of P to T in
  // the running sum (relative eps(T) on l, i.e. absolute eps(T) on log l)
  {
    double err = 0, mag = 1;
    for (std::size_t i = 0; i < lse.size(); ++i) {
      err = std::max(err, std::isnan(lse[i]) ? INFINITY : std::fabs(lse[i] - rlse[i]));
      mag = std::max(mag, std::fabs(rlse[i]));
    }
    kcheck::check_scalar("mma_attention_forward lse" + tag, kcheck::name_v<T>, err, 0.0, 4 * kcheck::eps_v<T> * mag);
  }

  auto dout = kcheck::random<T>(B * S * H * D, rng), dqkv = kcheck::random<T>(B * S * width, rng);
  auto rdqkv = kcheck::widen(dqkv);
  std::vector<float> delta(B * H * S, NAN);
  const auto ks = k::make_mma_attention_backward<B, S, H, KVH, D, W>(dqkv.data(), delta.data(), dout.data(),
                                                                      qkv.data(), out.data(), lse.data());
  k::emulate_launch(ks.delta);
  k::emulate_launch(ks.dq);
  k::emulate_launch(ks.dkv);
  std::vector<double> scratch(B * H * S * S);
  ref_attention_backward<B, S, H, KVH, D, W>(rdqkv.data(), scratch.data(), kcheck::widen(dout).data(), rqkv.data(),
                                             att.data());
  // each block of columns on its own: q, k and v gradients have different magnitudes
  for (const char* part : {"dq", "dk", "dv"}) {
    const std::size_t c0 = part[1] == 'q' ? 0 : part[1] == 'k' ? H * D : (H + KVH) * D;
    const std::size_t cols = part[1] == 'q' ? H * D : KVH * D;
    std::vector<T> got;
    std::vector<double> ref;
    for (std::size_t r = 0; r < B * S; ++r)
      for (std::size_t i = 0; i < cols; ++i) {
        got.push_back(dqkv[r * width + c0 + i]);
        ref.push_back(rdqkv[r * width + c0 + i]);
      }
    kcheck::check(std::string("mma_attention_backward ") + part + tag, got, ref, 2);
  }
}

// A kernel that is wrong on the device: phase 1 reads the other warp's slot, but only a warp
// barrier separates it from the write in phase 0. The emulator runs warp barriers warp by warp,
// so the result differs between the two orders.
struct cross_warp_kernel {
  int* out;  // (64)
  struct shared {
    int slot[64];
  };
  struct locals {};
  static constexpr int phases = 2;
  static constexpr bool warp_barrier_after(int) { return true; }
  k::launch_config config() const { return {{1, 1, 1}, {64, 1, 1}}; }
  WEFT_HOST_DEVICE void phase(int p, const k::block_context& c, shared& s, locals&) const {
    const unsigned t = c.thread_rank();
    if (p == 0) s.slot[t] = int(t) + 1;
    else out[t] = s.slot[(t + 32) % 64];
  }
};
// The same reading its own warp's slots: right in both orders.
struct same_warp_kernel {
  int* out;
  struct shared {
    int slot[64];
  };
  struct locals {};
  static constexpr int phases = 2;
  static constexpr bool warp_barrier_after(int) { return true; }
  k::launch_config config() const { return {{1, 1, 1}, {64, 1, 1}}; }
  WEFT_HOST_DEVICE void phase(int p, const k::block_context& c, shared& s, locals&) const {
    const unsigned t = c.thread_rank();
    if (p == 0) s.slot[t] = int(t) + 1;
    else out[t] = s.slot[(t / 32) * 32 + (t + 1) % 32];
  }
};

}  // namespace

TEST_CASE("m16n8k16 fragments: coordinates match CuTe's layouts, gathers rebuild the operands", "[kernel][mma]") {
  gather_case<bf16, 16, 1, 1, 16>("A row-major, B as (n, k) rows: the paired loads");
  gather_case<bf16, 1, 16, 8, 1>("A column-major, B as (k, n) rows: element loads");
  gather_case<f16, 24, 1, 24, 1>("f16, padded rows");
}

TEST_CASE("warp barriers: the emulator runs them warp by warp and shows a cross-warp read", "[kernel][grid]") {
  std::vector<int> fwd(64), rev(64);
  k::emulate_launch(cross_warp_kernel{fwd.data()}, k::emulation_order::forward);
  k::emulate_launch(cross_warp_kernel{rev.data()}, k::emulation_order::reverse);
  CHECK(fwd != rev);
  k::emulate_launch(same_warp_kernel{fwd.data()}, k::emulation_order::forward);
  k::emulate_launch(same_warp_kernel{rev.data()}, k::emulation_order::reverse);
  CHECK(fwd == rev);
  for (unsigned t = 0; t < 64; ++t) CHECK(fwd[t] == int((t / 32) * 32 + (t + 1) % 32) + 1);
}

TEMPLATE_TEST_CASE("flash attention on tensor cores: forward and backward against the host op", "[kernel][attention]",
                   bf16, f16) {
  mma_attention_case<TestType, 2, 70, 4, 2, 64>();   // grouped-query, ragged last tiles
  mma_attention_case<TestType, 1, 100, 2, 1, 128>(); // multi-query, head dim 128
  mma_attention_case<TestType, 1, 128, 2, 2, 64>();  // multi-head, whole tiles, 2 query tiles
  mma_attention_case<TestType, 1, 40, 2, 2, 32>();   // head dim 32
}

// Tiles (forward and dq: 64 queries × 64 keys for head dims up to 64, × 32 keys above; dkv: 64 or
// 32 keys × 32 queries) and warps (16 rows) that lie wholly before a window are skipped.
TEMPLATE_TEST_CASE("flash attention on tensor cores: sliding window", "[kernel][attention]", bf16, f16) {
  mma_attention_case<TestType, 2, 70, 4, 2, 64, 1>();    // each query sees itself only
  mma_attention_case<TestType, 2, 70, 4, 2, 64, 17>();   // the window's edge inside key tile 0
  mma_attention_case<TestType, 1, 100, 2, 1, 128, 5>();  // key tile 0 skipped by query tile 1, and by its last warp tile 1
  mma_attention_case<TestType, 1, 160, 2, 2, 64, 17>();  // query tile 2 skips key tile 0; dkv skips later query tiles
  mma_attention_case<TestType, 1, 40, 2, 2, 32, 40>();   // W = S: no key outside the window
  mma_attention_case<TestType, 1, 40, 2, 2, 32, 100>();  // W > S
}

// The kernels read rows 16 bytes at a time where a row is 16-byte aligned and element by element
// where it is not (a caller's buffer at an odd offset): the results are the same bit for bit.
TEMPLATE_TEST_CASE("flash attention on tensor cores: unaligned buffers give the aligned results", "[kernel][attention]",
                   bf16) {
  using T = TestType;
  constexpr std::size_t B = 1, S = 40, H = 2, KVH = 1, D = 32, W = (H + 2 * KVH) * D;
  std::mt19937 rng(77);
  const auto qkv = kcheck::random<T>(B * S * W, rng, -2, 2);
  const auto dout = kcheck::random<T>(B * S * H * D, rng);
  const auto dqkv0 = kcheck::random<T>(B * S * W, rng);
  struct result {
    std::vector<T> out, dqkv;
  };
  auto run = [&](std::size_t shift) {
    // copies at `shift` elements past a 16-byte boundary
    std::vector<T> q(B * S * W + 8), g(B * S * H * D + 8), d(B * S * W + 8), o(B * S * H * D + 8);
    std::copy(qkv.begin(), qkv.end(), q.begin() + shift);
    std::copy(dout.begin(), dout.end(), g.begin() + shift);
    std::copy(dqkv0.begin(), dqkv0.end(), d.begin() + shift);
    std::vector<float> lse(B * H * S), delta(B * H * S);
    k::emulate_launch(k::make_mma_attention_forward<B, S, H, KVH, D>(o.data() + shift, lse.data(), q.data() + shift));
    const auto ks = k::make_mma_attention_backward<B, S, H, KVH, D>(d.data() + shift, delta.data(), g.data() + shift,
                                                                     q.data() + shift, o.data() + shift, lse.data());
    k::emulate_launch(ks.delta);
    k::emulate_launch(ks.dq);
    k::emulate_launch(ks.dkv);
    return result{{o.begin() + shift, o.begin() + shift + B * S * H * D}, {d.begin() + shift, d.begin() + shift + B * S * W}};
  };
  const auto aligned = run(0);
  for (std::size_t shift : {1, 3}) {
    INFO("shift " << shift);
    const auto moved = run(shift);
    CHECK(std::memcmp(aligned.out.data(), moved.out.data(), aligned.out.size() * sizeof(T)) == 0);
    CHECK(std::memcmp(aligned.dqkv.data(), moved.dqkv.data(), aligned.dqkv.size() * sizeof(T)) == 0);
  }
}
