// Token + position embedding (forward, deterministic backward) and rotary embedding (forward,
// backward) on the emulated grid against the host ops in double.
#include <weft/backend/cuda/kernels/embedding.hpp>  // make_embedding_*, make_positional_backward
#include <weft/backend/cuda/kernels/rope.hpp>       // make_rope_*
#include <weft/ops/embedding.hpp>
#include <weft/ops/rope.hpp>

#include "kernel_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {
// ---- adapters: one line each to follow a host-op signature change ----
template <std::size_t N, std::size_t V, std::size_t C>
void ref_embedding_forward(double* out, const std::int32_t* idx, const double* table) {
  weft::ops::embedding_forward<N, V, C>(weft::host_context{}, out, idx, table);
}
template <std::size_t N, std::size_t V, std::size_t C>
void ref_embedding_backward(double* dtable, const double* dout, const std::int32_t* idx) {
  weft::ops::embedding_backward<N, V, C>(weft::host_context{}, dtable, dout, idx);
}
template <std::size_t B, std::size_t S, std::size_t C>
void ref_positional_forward(double* out, const double* wpe) {
  weft::ops::positional_forward<B, S, C>(weft::host_context{}, out, wpe);
}
template <std::size_t B, std::size_t S, std::size_t C>
void ref_positional_backward(double* dwpe, const double* dout) {
  weft::ops::positional_backward<B, S, C>(weft::host_context{}, dwpe, dout);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = weft::no_rope_scaling>
void ref_rope_forward(double* out, const double* in) {
  weft::ops::rope_forward<B, S, H, KVH, D, Base, R, Scaling>(weft::host_context{}, out, in);
}
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = weft::no_rope_scaling>
void ref_rope_backward(double* din, const double* dout) {
  weft::ops::rope_backward<B, S, H, KVH, D, Base, R, Scaling>(weft::host_context{}, din, dout);
}

const auto emulate = [](const auto& kernel) { k::emulate_launch(kernel); };

// The token table backward on N tokens drawn by `draw` (a run of one id may cross the sort's
// chunks of 32 and its tiles of 1024): against the host op in double, deterministic, and in f32
// the host op's bits for every id whose sorted run stays inside one chunk.
template <class T, std::size_t N, std::size_t V, std::size_t C, class Draw>
void embedding_backward_case(const std::string& what, Draw draw) {
  std::mt19937 rng(61 + N);
  std::vector<std::int32_t> idx(N);
  for (auto& i : idx) i = draw(rng);
  auto dout = kcheck::random<T>(N * C, rng), dwte = kcheck::random<T>(V * C, rng);
  auto rdwte = kcheck::widen(dwte);
  auto fdwte = std::vector<T>(dwte);
  std::vector<float> scratch(k::embedding_backward_scratch_v<N, V, C>);
  const auto ks = k::make_embedding_backward<N, V, C>(dwte.data(), dout.data(), idx.data(), scratch.data());
  ks.run(emulate);
  ref_embedding_backward<N, V, C>(rdwte.data(), kcheck::widen(dout).data(), idx.data());
  kcheck::check("embedding_backward " + what, dwte, rdwte, 4);
  // the sorted keys: ids in order, positions increasing within an id
  using keys = k::detail::embedding_keys<N, V>;
  for (std::size_t r = 0; r < N; ++r) {
    const auto key = ks.pieces.sorted[r];
    REQUIRE(keys::id(key) == static_cast<std::size_t>(idx[keys::position(key)]));
    if (r > 0) REQUIRE(ks.pieces.sorted[r - 1] < key);
  }
  if constexpr (std::is_same_v<T, float>) {
    weft::ops::embedding_backward<N, V, C>(weft::host_context{}, fdwte.data(), dout.data(), idx.data());
    std::vector<bool> crosses(V, false);  // the id's run meets a chunk boundary
    for (std::size_t r = keys::chunk; r < N; r += keys::chunk)
      if (keys::id(ks.pieces.sorted[r - 1]) == keys::id(ks.pieces.sorted[r])) crosses[keys::id(ks.pieces.sorted[r])] = true;
    std::size_t exact = 0;
    for (std::size_t v = 0; v < V; ++v) {
      if (crosses[v]) continue;
      REQUIRE(std::memcmp(&dwte[v * C], &fdwte[v * C], C * sizeof(T)) == 0);
      ++exact;
    }
    std::printf("[kernel-accuracy] embedding_backward %s: %zu of %zu rows bit-identical to the f32 host op\n",
                what.c_str(), exact, V);
  }
}
}  // namespace

TEMPLATE_TEST_CASE("token table backward: sorted runs across chunks and tiles", "[kernel][embedding]", float, bf16) {
  using T = TestType;
  // one tile, no merge pass; a third of the tokens are id 7 (its run crosses many chunks)
  embedding_backward_case<T, 200, 64, 24>("skewed N=200", [](std::mt19937& r) {
    return static_cast<std::int32_t>(r() % 3 == 0 ? 7 : r() % 64);
  });
  // five tiles of 1024 (three merge passes, the last run short); Zipf-like ids
  embedding_backward_case<T, 4100, 300, 8>("zipf N=4100", [](std::mt19937& r) {
    const double u = std::uniform_real_distribution<double>(0, 1)(r);
    return static_cast<std::int32_t>(std::min(299.0, std::floor(std::pow(300.0, u) - 1)));
  });
  // every token the same id: one run over every chunk
  embedding_backward_case<T, 100, 5, 16>("one id", [](std::mt19937&) { return std::int32_t{3}; });
  // a single token
  embedding_backward_case<T, 1, 5, 16>("N=1", [](std::mt19937&) { return std::int32_t{4}; });
}

TEMPLATE_TEST_CASE("token + position embedding forward and deterministic backward", "[kernel][embedding]", float,
                   bf16) {
  using T = TestType;
  constexpr std::size_t B = 3, S = 40, Smax = 64, V = 50, C = 96, N = B * S;  // tokens repeat ~2.4 times
  std::mt19937 rng(60);
  auto wte = kcheck::random<T>(V * C, rng), wpe = kcheck::random<T>(Smax * C, rng);
  std::vector<std::int32_t> idx(N);
  std::uniform_int_distribution<int> tok(0, V - 1);
  for (auto& i : idx) i = tok(rng);
  std::vector<T> out(N * C);
  k::emulate_launch(k::make_embedding_forward<B, S, V, C>(out.data(), idx.data(), wte.data(), wpe.data()));
  std::vector<double> rout(N * C);
  const auto rwte = kcheck::widen(wte), rwpe = kcheck::widen(wpe);
  ref_embedding_forward<N, V, C>(rout.data(), idx.data(), rwte.data());
  ref_positional_forward<B, S, C>(rout.data(), rwpe.data());
  kcheck::check("embedding_forward (token + position)", out, rout, 1);
  // token only (LLaMA): exact copy
  k::emulate_launch(k::make_embedding_forward<B, S, V, C, T>(out.data(), idx.data(), wte.data(), nullptr));
  std::vector<double> rtok(N * C);
  ref_embedding_forward<N, V, C>(rtok.data(), idx.data(), rwte.data());
  kcheck::check("embedding_forward (token only)", out, rtok, 0);

  auto dout = kcheck::random<T>(N * C, rng), dwte = kcheck::random<T>(V * C, rng),
       dwpe = kcheck::random<T>(Smax * C, rng);
  auto rdwte = kcheck::widen(dwte), rdwpe = kcheck::widen(dwpe);
  const auto rdout = kcheck::widen(dout);
  auto dwte2 = dwte;
  std::vector<float> scratch(k::embedding_backward_scratch_v<N, V, C>);
  k::make_embedding_backward<N, V, C>(dwte.data(), dout.data(), idx.data(), scratch.data()).run(emulate);
  k::emulate_launch(k::make_positional_backward<B, S, C>(dwpe.data(), dout.data()));
  ref_embedding_backward<N, V, C>(rdwte.data(), rdout.data(), idx.data());
  ref_positional_backward<B, S, C>(rdwpe.data(), rdout.data());
  kcheck::check("embedding_backward", dwte, rdwte, 4);
  kcheck::check("positional_backward", dwpe, rdwpe, 4);
  // deterministic: a second run from the same start gives the same bits
  k::make_embedding_backward<N, V, C>(dwte2.data(), dout.data(), idx.data(), scratch.data()).run(emulate);
  for (std::size_t i = 0; i < dwte.size(); ++i) REQUIRE(std::memcmp(&dwte[i], &dwte2[i], sizeof(T)) == 0);
}

// One rotary configuration: forward out of place and in place, backward accumulating.
template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000,
          std::size_t R = D, class Scaling = weft::no_rope_scaling>
void check_rope_kernels(unsigned seed) {
  constexpr std::size_t W = (H + 2 * KVH) * D;
  std::mt19937 rng(seed);
  auto in = kcheck::random<T>(B * S * W, rng);
  const auto rin = kcheck::widen(in);
  std::vector<T> out(B * S * W);
  k::emulate_launch(k::make_rope_forward<B, S, H, KVH, D, Base, R, Scaling>(out.data(), in.data()));
  std::vector<double> rout(B * S * W);
  ref_rope_forward<B, S, H, KVH, D, Base, R, Scaling>(rout.data(), rin.data());
  kcheck::check("rope_forward", out, rout, 4);
  auto inplace = in;
  k::emulate_launch(k::make_rope_forward<B, S, H, KVH, D, Base, R, Scaling>(inplace.data(), inplace.data()));
  kcheck::check("rope_forward in place", inplace, rout, 4);

  auto dout = kcheck::random<T>(B * S * W, rng), din = kcheck::random<T>(B * S * W, rng);
  auto rdin = kcheck::widen(din);
  k::emulate_launch(k::make_rope_backward<B, S, H, KVH, D, Base, R, Scaling>(din.data(), dout.data()));
  ref_rope_backward<B, S, H, KVH, D, Base, R, Scaling>(rdin.data(), kcheck::widen(dout).data());
  kcheck::check("rope_backward", din, rdin, 4);
}

TEMPLATE_TEST_CASE("rotary embedding forward (in place and out of place) and backward", "[kernel][rope]", float,
                   bf16) {
  SECTION("LLaMA's base 10000, whole head") { check_rope_kernels<TestType, 2, 300, 4, 2, 16>(70); }
  SECTION("LLaMA 3's base 500000") { check_rope_kernels<TestType, 2, 300, 4, 2, 16, 500000>(71); }
  SECTION("partial rotary: 6 of 16 (unrotated tails pass through)") {
    check_rope_kernels<TestType, 2, 37, 4, 2, 16, 10000, 6>(72);
  }
  SECTION("partial rotary, multi-query, base 1000000") { check_rope_kernels<TestType, 1, 50, 3, 1, 8, 1000000, 4>(73); }
  SECTION("LLaMA 3.1's frequency scaling, every band") {
    check_rope_kernels<TestType, 1, 300, 2, 1, 16, 500000, 16, weft::llama3_rope_scaling<8>>(74);
  }
}
