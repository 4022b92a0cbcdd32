// Activation recomputation in the host executor: recompute<full> and recompute<selective> train
// bit-identically to recompute<none> and keep fewer activations.
#include <weft/model.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/parallel/recompute.hpp>
#include <weft/parallel/strategy.hpp>
#include <weft/comm/single.hpp>
#include <weft/exec/data_parallel_step.hpp>
#include <weft/exec/training_step.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {

using tiny_gpt = gpt<gpt_config<vocab<13>, context<8>, width<16>, heads<2>, depth<3>>>;
using tiny_llama = llama<llama_config<vocab<13>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>>>;
using tiny_batch = batch<micro<2>, seq<8>>;

template <class M, class Policy>
using plan_of = plan<M, tiny_batch, strategy<mesh<axis<"dp">>, recompute<Policy>>>;

struct run_result {
  std::vector<double> losses;
  std::vector<float> params;
};

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 7;
  o.grad_accum = 2;
  return o;
}

// `steps` AdamW steps, two micro-batches each, on a repeating pattern, by the step `make()`
// returns (a training_step or a data_parallel_step).
template <class Make>
run_result train_with(std::size_t steps, Make make) {
  auto st = make();
  const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
  std::size_t start = 0;
  run_result r;
  for (std::size_t s = 0; s < steps; ++s) {
    auto m = st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = pattern[(start + i) % pattern.size()];
        targets[i] = pattern[(start + i + 1) % pattern.size()];
      }
      start += 4;
    });
    r.losses.push_back(m.loss);
  }
  if constexpr (requires { st.local(); }) {
    const auto p = st.parameters();  // ZeRO-3: all-gathered from the shards
    r.params.assign(p.begin(), p.end());
  } else {
    r.params.assign(st.params().begin(), st.params().end());
  }
  return r;
}
template <class Plan>
run_result train(std::size_t steps) {
  return train_with(steps, [] { return training_step<Plan>(options()); });
}

template <class A, class B>
bool same_parameters() {
  const auto a = A::parameters(), b = B::parameters();
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].offset != b[i].offset || a[i].size != b[i].size) return false;
  return true;
}

template <class M, class Block>
void check_model() {
  using p_none = plan_of<M, none>;
  using p_full = plan_of<M, full>;
  using p_sel = plan_of<M, selective>;
  constexpr std::size_t B = p_none::B, S = p_none::S, N = M::depth;

  // recompute<none> executes the model as written; the others a mapped model.
  STATIC_REQUIRE(std::is_same_v<typename p_none::model, M>);
  STATIC_REQUIRE(!std::is_same_v<typename p_full::model, M>);
  STATIC_REQUIRE(!std::is_same_v<typename p_sel::model, M>);
  STATIC_REQUIRE(p_full::param_count == p_none::param_count);
  CHECK(same_parameters<p_none, p_full>());
  CHECK(same_parameters<p_none, p_sel>());

  // full: N-1 blocks' kept activations fewer (each copy's input is still kept).
  constexpr std::size_t block_kept = Block::template kept_count<B, S>;
  STATIC_REQUIRE(block_kept > 0);
  CHECK(p_none::kept_count - p_full::kept_count == (N - 1) * block_kept);
  CHECK(p_full::scratch_count >= p_none::scratch_count);
  // selective: every layer's softmax probabilities (batch, heads, seq, seq) fewer.
  CHECK(p_none::kept_count - p_sel::kept_count == N * B * M::heads * S * S);

  const run_result r_none = train<p_none>(4);
  const run_result r_full = train<p_full>(4);
  const run_result r_sel = train<p_sel>(4);
  REQUIRE(r_none.losses.size() == 4);
  CHECK(r_none.losses.front() != r_none.losses.back());  // it trains
  CHECK(r_full.losses == r_none.losses);                 // bit-identical
  CHECK(r_sel.losses == r_none.losses);
  REQUIRE(r_full.params.size() == r_none.params.size());
  REQUIRE(r_sel.params.size() == r_none.params.size());
  CHECK(std::memcmp(r_full.params.data(), r_none.params.data(), r_none.params.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(r_sel.params.data(), r_none.params.data(), r_none.params.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("gpt: recompute<full> and <selective> train bit-identically and keep less", "[model][recompute]") {
  check_model<tiny_gpt, typename tiny_gpt::template child<2>::inner::block_type>();
}

TEST_CASE("llama (rope, grouped kv): recompute<full> and <selective> train bit-identically and keep less",
          "[model][recompute]") {
  check_model<tiny_llama, typename tiny_llama::template child<1>::inner::block_type>();
}

TEST_CASE("with_recompute_t maps repeats and attention cores, nothing else", "[model][recompute]") {
  using rep = repeat<2, gelu_mlp<8, 16>>;
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<rep, none>, rep>);
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<rep, full>, recomputed<rep>>);
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<named<"h", rep>, full>, named<"h", recomputed<rep>>>);
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<causal_attention<2, 1, 4>, selective>, selective_attention<2, 1, 4>>);
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<causal_attention<2, 1, 4>, full>, causal_attention<2, 1, 4>>);
  // a single copy keeps its block's activations as before and is never re-run
  using one = repeat<1, gelu_mlp<8, 16>>;
  STATIC_REQUIRE(recomputed<one>::kept_count<2, 4> == one::kept_count<2, 4>);
  STATIC_REQUIRE(recomputed<one>::scratch_count<2, 4> == one::scratch_count<2, 4>);
  // selective_attention keeps only the rotated q, k, v under rope
  STATIC_REQUIRE(selective_attention<2, 1, 4>::kept_count<2, 4> == 0);
  STATIC_REQUIRE(selective_attention<2, 1, 4, rope>::kept_count<2, 4> == 2 * 4 * (2 + 2) * 4);
}

TEST_CASE("data_parallel_step runs the recomputed model: bit-identical, gradient buckets ready during backward",
          "[model][recompute]") {
  // ZeRO-2 with 512-byte buckets: reductions start from the grad-ready reports of recomputed copies.
  using p_none = plan_of<tiny_gpt, none>;
  using p_full = plan_of<tiny_gpt, full>;
  single_world w1, w2;
  const run_result a = train_with(3, [&] { return data_parallel_step<p_none, single_world, 2>(w1, options(), 512); });
  const run_result b = train_with(3, [&] { return data_parallel_step<p_full, single_world, 2>(w2, options(), 512); });
  CHECK(a.losses == b.losses);
  REQUIRE(a.params.size() == b.params.size());
  CHECK(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
  // ZeRO-3: the recomputed stack (recomputed<repeat<>>) asks for its parameter and gradient
  // windows as repeat<> does, re-running each copy's forward on the window it gathered.
  STATIC_REQUIRE(data_parallel_step<p_full, single_world, 3>::layer_by_layer &&
                 data_parallel_step<p_full, single_world, 3>::grads_by_layer);
  single_world w3, w4;
  const run_result c = train_with(3, [&] { return data_parallel_step<p_none, single_world, 3>(w3, options(), 512); });
  const run_result d = train_with(3, [&] { return data_parallel_step<p_full, single_world, 3>(w4, options(), 512); });
  CHECK(c.losses == d.losses);
  CHECK(c.losses == a.losses);
  REQUIRE(c.params.size() == d.params.size());
  CHECK(std::memcmp(c.params.data(), d.params.data(), c.params.size() * sizeof(float)) == 0);
}
