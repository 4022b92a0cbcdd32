// The GPT-NeoX preset (gpt_neox<neox_config<…>>, EleutherAI's Pythia): its parallel-residual block
// against finite differences and against the formula written with separate layers, a tiny model
// that trains under training_step and make_training_step (single process, ZeRO-3 over a world of
// one) alike, its tensor-parallel shard counted as the plan counts it, and the planner's
// description of it.
#include <weft/comm/single.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/model.hpp>
#include <weft/model/structure.hpp>
#include <weft/parallel/partition.hpp>
#include <weft/parallel/tensor_parallel.hpp>
#include <weft/planner/model_desc.hpp>
#include <weft/testing/gradient_check.hpp>
#include <weft/weft.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {

// 4 heads of 4 on a width of 16, half of each head rotating (rotary_pct 0.5: 2 of 4 would pair
// too few elements to tell rotate-half from interleaved pairs), ffn 4·16
using tiny_cfg = neox_config<vocab<32>, context<16>, width<16>, heads<4>, depth<2>, rotary_pct<0.5>>;
using tiny_neox = gpt_neox<tiny_cfg>;
using neox_block = detail::neox_block<tiny_cfg>;
// Pythia's own proportions at a small size: a quarter of each head of 8 rotates.
using quarter_cfg = neox_config<vocab<32>, context<16>, width<16>, heads<2>, depth<2>>;

static_assert(language_model<tiny_neox>);
static_assert(tiny_cfg::rotary_dims == 2 && quarter_cfg::rotary_dims == 2 && tiny_neox::ffn == 64);

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

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 5;
  return o;
}

const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 11, 12, 10};

// Fills (tokens, targets) with the pattern from `start`, shifted by one.
struct pattern_source {
  std::size_t start = 0;
  void operator()(auto tokens, auto targets) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = pattern[(start + i) % pattern.size()];
      targets[i] = pattern[(start + i + 1) % pattern.size()];
    }
    start += 5;
  }
};

template <class Plan>
std::vector<double> losses(std::size_t steps) {
  training_step<Plan> st(options());
  pattern_source src;
  std::vector<double> r;
  for (std::size_t s = 0; s < steps; ++s) r.push_back(st.step(src).loss);
  return r;
}

}  // namespace

TEST_CASE("a GPT-NeoX block's gradients equal finite differences", "[model][gpt_neox][gradients]") {
  SECTION("half of each head rotating") {
    const auto r = testing::check_gradients<neox_block, 2, 4>();
    INFO(r.summary());
    CHECK(r.ok());
  }
  SECTION("Pythia's quarter") {
    const auto r = testing::check_gradients<detail::neox_block<quarter_cfg>, 2, 3>();
    INFO(r.summary());
    CHECK(r.ok());
  }
  SECTION("accumulates") {
    const auto r = testing::check_accumulates<neox_block, 2, 3>();
    INFO(r.summary());
    CHECK(r.ok());
  }
}

TEST_CASE("a GPT-NeoX block computes x + attn(ln_1(x)) + mlp(ln_2(x))", "[model][gpt_neox]") {
  constexpr std::size_t B = 2, S = 4, C = 16;
  using ln = layernorm<C>;
  using at = detail::neox_attention<tiny_cfg>;
  using ml = detail::neox_mlp<tiny_cfg>;
  STATIC_REQUIRE(neox_block::param_count == 2 * ln::param_count + at::param_count + ml::param_count);
  // the names, in the order of the parameter block: ln_1, attn, ln_2, mlp
  STATIC_REQUIRE(neox_block::find_param("ln_1.weight") == 0);
  STATIC_REQUIRE(neox_block::find_param("attn.c_attn.weight") == ln::param_count);
  STATIC_REQUIRE(neox_block::find_param("ln_2.bias") == ln::param_count + at::param_count + C);
  STATIC_REQUIRE(neox_block::find_param("mlp.c_fc.weight") == 2 * ln::param_count + at::param_count);
  const auto p = random_vector(neox_block::param_count, 7);
  const auto x = random_vector(B * S * C, 8);
  const auto y = run_forward<neox_block, B, S>(p.data(), x);
  const auto n1 = run_forward<ln, B, S>(p.data(), x);
  const auto a = run_forward<at, B, S>(p.data() + ln::param_count, n1);
  const auto n2 = run_forward<ln, B, S>(p.data() + ln::param_count + at::param_count, x);
  const auto m = run_forward<ml, B, S>(p.data() + 2 * ln::param_count + at::param_count, n2);
  for (std::size_t i = 0; i < y.size(); ++i) {
    INFO("element " << i);
    CHECK(y[i] == Approx(x[i] + a[i] + m[i]).epsilon(1e-12).margin(1e-12));
  }
}

TEST_CASE("a tiny GPT-NeoX trains, through training_step and make_training_step alike", "[model][gpt_neox][train]") {
  using p64 = plan<tiny_neox, batch<micro<2>, seq<16>>, precision<double>>;
  const auto a = losses<p64>(8);
  CHECK(a.back() < a.front() - 0.1);  // it learns the pattern
  for (double l : a) CHECK(std::isfinite(l));

  // the default (f32) plan too
  using p32 = plan<tiny_neox, batch<micro<2>, seq<16>>>;
  const auto f = losses<p32>(8);
  CHECK(f.back() < f.front() - 0.1);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - f[i]) <= 1e-4 * std::fabs(a[i]));

  // make_training_step over a world of one: the same arithmetic, plain and with ZeRO-3
  auto through_entry = [](auto& step) {
    pattern_source src;
    std::vector<double> r;
    for (int s = 0; s < 8; ++s) r.push_back(step.step(src).loss);
    return r;
  };
  single_world world;
  auto plain_step = make_training_step<p64>(world, options());
  const auto e = through_entry(plain_step);
  using z3 = plan<tiny_neox, batch<micro<2>, seq<16>>, precision<double>,
                  strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>>>;
  auto zero3_step = make_training_step<z3>(world, options());
  const auto z = through_entry(zero3_step);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(e[i] == a[i]);
    CHECK(std::fabs(z[i] - a[i]) <= 1e-12 * std::fabs(a[i]));
  }

  // flash_attention (row statistics instead of probabilities) computes the same
  using pf = plan<tiny_neox, batch<micro<2>, seq<16>>, precision<double>, flash_attention>;
  const auto fl = losses<pf>(8);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(fl[i] - a[i]) <= 1e-12 * std::fabs(a[i]));
}

TEST_CASE("GPT-NeoX's tensor-parallel shard, plan and planner description", "[model][gpt_neox][parallel]") {
  // Per rank of tp 2, as the Megatron cuts give it: norms whole; c_attn and c_fc (weights and
  // biases) by their outputs; the c_proj weights by their inputs, their biases whole
  constexpr std::size_t C = 16, F = 64, TP = 2;
  constexpr std::size_t block_shard = 4 * C + (3 * C * C + 3 * C) / TP + C * C / TP + C + (F * C + F) / TP + F * C / TP + C;
  STATIC_REQUIRE(tp_shard_t<neox_block, TP>::param_count == block_shard);
  STATIC_REQUIRE(tp_shard_t<neox_block, TP, true>::param_count == block_shard);  // sequence parallel
  STATIC_REQUIRE(model_partition<tiny_neox, 2>::whole.params.per_rank == tp_model<tiny_neox, 2>::param_count);
  STATIC_REQUIRE(model_partition<tiny_neox, 1>::whole.params.per_rank == tiny_neox::param_count);

  // the planner reads the model's counts as the plan does
  constexpr planner::model_desc d = planner::describe<tiny_neox>();
  STATIC_REQUIRE(d.params() == tiny_neox::param_count);
  STATIC_REQUIRE(d.lookup_params == 32 * 16 && d.tied_table == 0 && !d.gated && d.kv_heads == 4);
  CHECK(d.flops_per_token(16) == Approx(static_cast<double>(plan<tiny_neox, batch<micro<1>, seq<16>>>::flops_per_token)));

  // a plan over tp 2 × pp 2 with sequence parallelism is valid and reports its memory
  using tp_pp = plan<tiny_neox, batch<micro<2>, seq<16>>,
                     strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                              pipeline<"pp", one_f_one_b, microbatches<4>>, data_parallel<"dp", zero<1>>>>;
  STATIC_REQUIRE(tp_pp::strategy_fits);
  STATIC_REQUIRE(tp_pp::bytes_per_rank > 0);
}

TEST_CASE("GPT-NeoX's structure text names its parts, the exact GELU among them", "[model][gpt_neox]") {
  STATIC_REQUIRE(std::is_same_v<detail::neox_mlp<tiny_cfg>,
                                gelu_mlp<16, 64, true, export_layout::as_is, gelu_form::erf>>);
  const std::string text = structure_of<tiny_neox>();
  INFO(text);
  CHECK(text.find("sum(") != std::string::npos);      // the parallel branches
  CHECK(text.find("layernorm") != std::string::npos);
  CHECK(text.find("gelu_erf") != std::string::npos);   // the exact GELU, hidden_act "gelu"
  CHECK(text.find("gelu_tanh") == std::string::npos);
}
