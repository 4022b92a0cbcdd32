// Composition primitives for new architectures: parallel branches (GPT-J / PaLM parallel block)
// and the bias-free layernorm. Gradients against finite differences (the public checker), the
// forward against the formula written with separate layers, and their tensor-parallel and
// recomputed forms.
#include <weft/model.hpp>
#include <weft/parallel/partition.hpp>
#include <weft/parallel/recompute.hpp>
#include <weft/parallel/tensor_parallel.hpp>
#include <weft/testing/gradient_check.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {

constexpr std::size_t C = 8;

template <class Layer, std::size_t B, std::size_t S>
void check_layer_gradients() {
  const auto r = testing::check_gradients<Layer, B, S>();
  INFO(r.summary());
  CHECK(r.ok());
  CHECK(r.tensors.size() == (Layer::param_count > 0 ? 2u : 1u));
}
template <class Layer, std::size_t B, std::size_t S>
void check_accumulates() {
  const auto r = testing::check_accumulates<Layer, B, S>();
  INFO(r.summary());
  CHECK(r.ok());
}

using gptj_block = parallel_block<layernorm<C>, attention<C, 2>, gelu_mlp<C, 4 * C>>;
using neox_like = parallel_branches<named<"ln", bias_free_layernorm<C>>, named<"attn", attention<C, 4, 2, rope, false>>,
                                    named<"mlp", swiglu_mlp<C, 12>>>;

// Forward of a layer in f64 over given parameters (kept and workspace sized by the layer).
template <class L, std::size_t B, std::size_t S>
std::vector<double> run_forward(const double* params, const std::vector<double>& x) {
  std::vector<double> kept(L::template kept_count<B, S> + 1), scratch(L::template scratch_count<B, S> + 1),
      out(B * S * L::out_width);
  frame<double, B, S, L> f;
  std::vector<double> p(params, params + L::param_count), g(L::param_count + 1);
  f.params = p.data();
  f.grads = g.data();
  f.root_params = p.data();
  f.root_grads = g.data();
  f.kept = kept.data();
  f.scratch = scratch.data();
  L::forward(f, x.data(), out.data());
  return out;
}

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& e : v) e = d(g);
  return v;
}

}  // namespace

TEST_CASE("branch_sum, parallel_branches and parallel_block gradients", "[model][composites][gradients]") {
  SECTION("one branch") { check_layer_gradients<branch_sum<linear<C, 6>>, 2, 3>(); }
  SECTION("two linears") { check_layer_gradients<branch_sum<linear<C, 6>, linear<C, 6, role::column, false>>, 2, 3>(); }
  SECTION("three branches with workspace and kept activations") {
    check_layer_gradients<branch_sum<attention<C, 2>, gelu_mlp<C, 16>, linear<C, C>>, 2, 4>();
  }
  SECTION("GPT-J parallel block") { check_layer_gradients<gptj_block, 2, 4>(); }
  SECTION("bias-free norm, GQA with rope, SwiGLU in parallel") { check_layer_gradients<neox_like, 2, 4>(); }
  SECTION("repeated parallel blocks") { check_layer_gradients<repeat<2, gptj_block>, 2, 3>(); }
}

TEST_CASE("branch_sum and parallel_block accumulate", "[model][composites][accumulate]") {
  check_accumulates<branch_sum<linear<C, 6>, linear<C, 6>>, 2, 3>();
  check_accumulates<gptj_block, 2, 3>();
}

TEST_CASE("parallel_block computes x + attn(ln(x)) + mlp(ln(x))", "[model][composites]") {
  constexpr std::size_t B = 2, S = 4;
  using ln = layernorm<C>;
  using at = attention<C, 2>;
  using ml = gelu_mlp<C, 4 * C>;
  STATIC_REQUIRE(gptj_block::param_count == ln::param_count + at::param_count + ml::param_count);
  STATIC_REQUIRE(gptj_block::find_param("ln_1.weight") == 0);
  STATIC_REQUIRE(gptj_block::find_param("attn.c_attn.weight") == ln::param_count);
  STATIC_REQUIRE(gptj_block::find_param("mlp.c_fc.weight") == ln::param_count + at::param_count);
  const auto p = random_vector(gptj_block::param_count, 7);
  const auto x = random_vector(B * S * C, 8);
  const auto y = run_forward<gptj_block, B, S>(p.data(), x);
  const auto n = run_forward<ln, B, S>(p.data(), x);
  const auto a = run_forward<at, B, S>(p.data() + ln::param_count, n);
  const auto m = run_forward<ml, B, S>(p.data() + ln::param_count + at::param_count, n);
  for (std::size_t i = 0; i < y.size(); ++i) {
    INFO("element " << i);
    CHECK(y[i] == Approx(x[i] + a[i] + m[i]).epsilon(1e-12).margin(1e-12));
  }
}

TEST_CASE("bias_free_layernorm is layernorm with a zero bias", "[model][composites]") {
  constexpr std::size_t B = 2, S = 3;
  check_layer_gradients<bias_free_layernorm<C>, B, S>();
  check_accumulates<bias_free_layernorm<C>, B, S>();
  STATIC_REQUIRE(bias_free_layernorm<C>::param_count == C);
  const auto w = random_vector(C, 3);
  std::vector<double> wb(w);
  wb.resize(2 * C, 0.0);  // layernorm's weight, then a zero bias
  const auto x = random_vector(B * S * C, 4);
  const auto y = run_forward<bias_free_layernorm<C>, B, S>(w.data(), x);
  const auto ref = run_forward<layernorm<C>, B, S>(wb.data(), x);
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).epsilon(1e-14).margin(1e-14));
}

TEST_CASE("parallel blocks get their tensor-parallel form and recomputation", "[model][composites][parallel]") {
  constexpr std::size_t F = 4 * C, TP = 2;
  using shard = tp_shard_t<gptj_block, TP>;
  // Per rank, counted from the Megatron cuts: norm whole; c_attn and c_fc (weights and biases)
  // by their outputs; both c_proj weights by their inputs, their biases whole.
  constexpr std::size_t expected = 2 * C + (3 * C * C + 3 * C) / TP + C * C / TP + C + (F * C + F) / TP + C * F / TP + C;
  STATIC_REQUIRE(shard::param_count == expected);
  STATIC_REQUIRE(shard::param_count < gptj_block::param_count);
  // Under sequence parallelism each branch is a region of its own.
  using sp_shard = tp_shard_t<gptj_block, TP, true>;
  STATIC_REQUIRE(sp_shard::param_count == expected);

  // recompute<selective> reaches the attention inside the branches: no softmax probabilities kept.
  using sel = detail::recompute_map_t<gptj_block, recompute_kind::selective>;
  constexpr std::size_t probs = 2 * 2 * 4 * 4;  // (batch 2, heads 2, seq 4, seq 4)
  STATIC_REQUIRE(sel::param_count == gptj_block::param_count);
  STATIC_REQUIRE(sel::kept_count<2, 4> + probs == gptj_block::kept_count<2, 4>);
  check_layer_gradients<sel, 2, 4>();
}

namespace {
// A GPT-J-style language model: parallel blocks, untied head.
constexpr std::size_t LV = 32, LCtx = 8, LC = 16, LH = 4, LL = 2;
struct parallel_lm
    : sequential<named<"wte", token_embedding<LV, LC>>, named<"wpe", positional_embedding<LCtx, LC>>,
                 named<"h", repeat<LL, parallel_block<layernorm<LC>, attention<LC, LH>, gelu_mlp<LC, 4 * LC>>>>,
                 named<"ln_f", layernorm<LC>>, named<"head", lm_head<LV, LC>>> {
  static constexpr std::size_t vocab_size = LV, context_length = LCtx, depth = LL, width = LC, heads = LH;
  static constexpr std::size_t lookup_param_count = LV * LC + LCtx * LC;
};
}  // namespace

TEST_CASE("the plan counts a parallel-block model per rank as tensor parallelism allocates it",
          "[model][composites][parallel]") {
  // What the memory model plans per rank (model_partition) against what a rank's shard holds.
  STATIC_REQUIRE(model_partition<parallel_lm, 1>::whole.params.per_rank == parallel_lm::param_count);
  STATIC_REQUIRE(model_partition<parallel_lm, 2>::whole.params.per_rank == tp_model<parallel_lm, 2>::param_count);
  STATIC_REQUIRE(model_partition<parallel_lm, 4>::whole.params.per_rank == tp_model<parallel_lm, 4>::param_count);
  STATIC_REQUIRE(model_partition<parallel_lm, 2>::whole.params.per_rank < parallel_lm::param_count);
}

TEST_CASE("QK-norm: gradients, and every q and k head normalised", "[model][composites][qk_norm]") {
  SECTION("the layer") { check_layer_gradients<qk_norm<4, 2, 2>, 2, 3>(); }
  SECTION("one kv head") { check_layer_gradients<qk_norm<2, 1, 4>, 2, 3>(); }
  SECTION("in attention, with rope") { check_layer_gradients<qk_norm_attention<C, 4, 2>, 2, 4>(); }
  SECTION("in a block") {
    check_layer_gradients<block<rmsnorm<C>, qk_norm_attention<C, 2>, rmsnorm<C>, swiglu_mlp<C, 12>>, 2, 3>();
  }
  SECTION("accumulates") { check_accumulates<qk_norm<4, 2, 2>, 2, 3>(); }
  SECTION("forward: unit gains give heads of mean square 1; v passes through") {
    constexpr std::size_t B = 2, S = 3, H = 4, KVH = 2, D = 4, W = (H + 2 * KVH) * D;
    using L = qk_norm<H, KVH, D>;
    STATIC_REQUIRE(L::param_count == 2 * D);
    STATIC_REQUIRE(qk_norm_attention<C, 4, 2>::find_param("qk_norm.k_weight") != npos_param);
    const std::vector<double> ones(2 * D, 1.0);
    const auto x = random_vector(B * S * W, 11);
    const auto y = run_forward<L, B, S>(ones.data(), x);
    for (std::size_t r = 0; r < B * S; ++r) {
      for (std::size_t h = 0; h < H + KVH; ++h) {
        double ms = 0;
        for (std::size_t i = 0; i < D; ++i) ms += y[r * W + h * D + i] * y[r * W + h * D + i] / D;
        CHECK(ms == Approx(1.0).epsilon(1e-3));  // eps 1e-5 inside the root
      }
      for (std::size_t i = (H + KVH) * D; i < W; ++i) CHECK(y[r * W + i] == x[r * W + i]);
    }
  }
}
