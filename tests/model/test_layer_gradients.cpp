// Every layer type's backward against central finite differences, in double.
// For a layer L with parameters θ and input x, the test takes the scalar loss
//   loss(θ, x) = sum(L(θ, x) ⊙ R)        (R random, the shape of the output)
// whose gradient w.r.t. the output is R; so backward(dout = R) must give d loss/dθ and d loss/dx,
// which are compared with (loss(· + h) - loss(· - h)) / 2h for every element of θ and x.
#include <weft/model.hpp>
#include <weft/testing/gradient_check.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace weft;

// The checker itself is public: weft/testing/gradient_check.hpp (docs/gradient_check.md).
// These wrappers turn its reports into Catch2 assertions.

/// Checks every parameter element and every input element of `Layer` (micro-batch B x S) against
/// central finite differences; with a separate `Root`, also the root's parameters (tied weights).
template <class Layer, std::size_t B, std::size_t S, class Root = Layer>
void check_layer_gradients(unsigned seed = 1) {
  static_assert(layer<Layer>);
  const auto r = testing::check_gradients<Layer, B, S, Root>({.seed = seed});
  INFO(r.summary());
  REQUIRE(r.finite_output);
  CHECK(r.tensors.size() == (Layer::param_count > 0) + !std::is_same_v<Layer, Root> + (Layer::in_width != 0));
  for (const auto& t : r.tensors) {
    INFO(t.what);
    CHECK(t.norm <= 1e-6);
    CHECK(t.element <= 1e-6);
  }
}

/// Backward accumulates: a second backward adds the same gradients again (so the totals double),
/// and gradients already in the buffers are kept.
template <class Layer, std::size_t B, std::size_t S, class Root = Layer>
void check_accumulates(unsigned seed = 2) {
  const auto r = testing::check_accumulates<Layer, B, S, Root>(seed);
  INFO(r.summary());
  CHECK(r.ok());
}

// ---- small dimensions ----
constexpr std::size_t C = 8;   // width
constexpr std::size_t V = 11;  // vocabulary

// A root model that owns "wte.weight", so a head tied to it resolves.
using tied_head = lm_head<V, C, tied<"wte.weight">>;
using tied_root = sequential<named<"wte", token_embedding<V, C>>, tied_head>;

using norm_linear = sequential<named<"ln", layernorm<C>>, named<"fc", linear<C, C>>>;
using gpt_like_block = block<layernorm<C>, attention<C, 2>, layernorm<C>, gelu_mlp<C, 4 * C>>;
using llama_like_block = block<rmsnorm<C>, attention<C, 4, 2, rope, false>, rmsnorm<C>, swiglu_mlp<C, 12>>;

}  // namespace

// ---- leaf layers ----

TEST_CASE("token_embedding gradients", "[model][gradients]") { check_layer_gradients<token_embedding<V, C>, 2, 4>(); }

TEST_CASE("positional_embedding gradients", "[model][gradients]") {
  check_layer_gradients<positional_embedding<6, C>, 2, 4>();  // seq shorter than the context
  check_layer_gradients<positional_embedding<5, C>, 2, 5>();  // seq equal to the context
}

TEST_CASE("layernorm gradients", "[model][gradients]") {
  check_layer_gradients<layernorm<C>, 2, 3>();
  check_layer_gradients<layernorm<C, 0.5>, 2, 3>();  // a model's own epsilon (large, so that it matters)
}

TEST_CASE("rmsnorm gradients", "[model][gradients]") {
  check_layer_gradients<rmsnorm<C>, 2, 3>();
  check_layer_gradients<rmsnorm<C, 0.5>, 2, 3>();
}

TEST_CASE("linear gradients", "[model][gradients]") {
  SECTION("with bias") { check_layer_gradients<linear<C, 6>, 2, 3>(); }
  SECTION("without bias") { check_layer_gradients<linear<C, 6, role::column, false>, 2, 3>(); }
}

TEST_CASE("gelu gradients", "[model][gradients]") {
  check_layer_gradients<gelu<C>, 2, 3>();
  check_layer_gradients<gelu<C, gelu_form::erf>, 2, 3>();
}

TEST_CASE("swiglu gradients", "[model][gradients]") { check_layer_gradients<swiglu<4>, 2, 3>(); }

TEST_CASE("geglu gradients", "[model][gradients]") { check_layer_gradients<geglu<4>, 2, 3>(); }

TEST_CASE("embedding_scale gradients", "[model][gradients]") { check_layer_gradients<embedding_scale<C>, 2, 3>(); }

TEST_CASE("causal_attention gradients", "[model][gradients]") {
  SECTION("no rope") { check_layer_gradients<causal_attention<2, 2, 4, no_rope>, 2, 4>(); }
  SECTION("rope") { check_layer_gradients<causal_attention<2, 2, 4, rope>, 2, 4>(); }
  SECTION("grouped-query, rope") { check_layer_gradients<causal_attention<4, 2, 2, rope>, 2, 5>(); }
  SECTION("grouped-query, one kv head, no rope") { check_layer_gradients<causal_attention<4, 1, 2, no_rope>, 2, 4>(); }
  SECTION("rope base 500000 (LLaMA 3)") { check_layer_gradients<causal_attention<4, 2, 4, rotary<500000>>, 2, 5>(); }
  SECTION("partial rotary, 2 of 6 (GPT-NeoX style)") { check_layer_gradients<causal_attention<2, 1, 6, rotary<10000, 2>>, 2, 5>(); }
  SECTION("sliding window 2, rope") { check_layer_gradients<causal_attention<4, 2, 4, rope, 2>, 2, 5>(); }
  SECTION("sliding window 3, no rope") { check_layer_gradients<causal_attention<2, 2, 4, no_rope, 3>, 2, 6>(); }
}

TEST_CASE("lm_head gradients", "[model][gradients]") {
  SECTION("untied") { check_layer_gradients<lm_head<V, C>, 2, 3>(); }
  SECTION("tied, alone: gradient reaches the root's wte.weight") {
    STATIC_REQUIRE(tied_head::param_count == 0);
    check_layer_gradients<tied_head, 2, 3, tied_root>();
  }
  SECTION("tied, in its root: embedding and head gradients add up in wte.weight") {
    check_layer_gradients<tied_root, 2, 3>();
  }
}

// ---- compositions ----

TEST_CASE("named gradients", "[model][gradients]") { check_layer_gradients<named<"x", linear<C, 6>>, 2, 3>(); }

TEST_CASE("residual gradients", "[model][gradients]") {
  check_layer_gradients<residual<linear<C, C>>, 2, 3>();
  check_layer_gradients<residual<norm_linear>, 2, 3>();
}

TEST_CASE("sequential gradients", "[model][gradients]") {
  check_layer_gradients<sequential<linear<C, 12>>, 2, 3>();  // one child: no intermediates
  check_layer_gradients<sequential<linear<C, 12>, gelu<12>, linear<12, 6>>, 2, 3>();
  // intermediates of different widths share the ping-pong buffers
  check_layer_gradients<sequential<layernorm<C>, linear<C, 16>, swiglu<8>, linear<8, 4>, rmsnorm<4>>, 2, 4>();
}

TEST_CASE("repeat gradients", "[model][gradients]") {
  check_layer_gradients<repeat<3, residual<norm_linear>>, 2, 3>();
  check_layer_gradients<repeat<1, linear<C, C>>, 2, 3>();
}

TEST_CASE("attention gradients", "[model][gradients]") {
  SECTION("multi-head, biases, no rope") { check_layer_gradients<attention<C, 2>, 2, 4>(); }
  SECTION("grouped-query, rope, no biases") { check_layer_gradients<attention<C, 4, 2, rope, false>, 2, 4>(); }
}

TEST_CASE("gelu_mlp gradients", "[model][gradients]") {
  check_layer_gradients<gelu_mlp<C, 4 * C>, 2, 3>();
  check_layer_gradients<gelu_mlp<C, 4 * C, true, export_layout::as_is, gelu_form::erf>, 2, 3>();
}

TEST_CASE("swiglu_mlp gradients", "[model][gradients]") { check_layer_gradients<swiglu_mlp<C, 12>, 2, 3>(); }

TEST_CASE("geglu_mlp gradients", "[model][gradients]") { check_layer_gradients<geglu_mlp<C, 12>, 2, 3>(); }

TEST_CASE("block gradients", "[model][gradients]") {
  SECTION("GPT-2 style") { check_layer_gradients<gpt_like_block, 2, 4>(); }
  SECTION("LLaMA style") { check_layer_gradients<llama_like_block, 2, 4>(); }
  SECTION("repeated") { check_layer_gradients<repeat<2, gpt_like_block>, 2, 3>(); }
}

// ---- accumulation ----

TEST_CASE("backward accumulates into parameter and input gradients", "[model][gradients][accumulate]") {
  SECTION("linear") { check_accumulates<linear<C, 6>, 2, 3>(); }
  SECTION("layernorm") { check_accumulates<layernorm<C>, 2, 3>(); }
  SECTION("rmsnorm") { check_accumulates<rmsnorm<C>, 2, 3>(); }
  SECTION("causal_attention with rope") { check_accumulates<causal_attention<4, 2, 2, rope>, 2, 4>(); }
  SECTION("positional_embedding") { check_accumulates<positional_embedding<6, C>, 2, 4>(); }
  SECTION("token_embedding") { check_accumulates<token_embedding<V, C>, 2, 4>(); }
  SECTION("tied head in its root") { check_accumulates<tied_root, 2, 3>(); }
  SECTION("residual block") { check_accumulates<residual<norm_linear>, 2, 3>(); }
  SECTION("repeat of blocks") { check_accumulates<repeat<2, gpt_like_block>, 2, 3>(); }
  SECTION("swiglu_mlp") { check_accumulates<swiglu_mlp<C, 12>, 2, 3>(); }
  SECTION("geglu_mlp") { check_accumulates<geglu_mlp<C, 12>, 2, 3>(); }
  SECTION("embedding_scale") { check_accumulates<embedding_scale<C>, 2, 3>(); }
}
