// The Gemma 3 preset (gemma3<gemma3_config<…>>): a tiny model against finite differences; its
// blocks' local and global attention against a stack written by hand from single-form blocks
// (block i global when (i + 1) % pattern == 0), also for a pipeline stage's blocks (the index is
// the model-wide one); Gemma's (1 + w) RMSNorm and QK-norm (formula, zero init, gradients);
// training under training_step (loss falls; flash_attention and selective recomputation agree)
// and make_training_step (plain and ZeRO-3 over a world of one); the plan's FLOPs counting the
// local layers' window; tensor-parallel shard counts and the structure text.
#include <weft/comm/single.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/model.hpp>
#include <weft/model/structure.hpp>
#include <weft/parallel/partition.hpp>
#include <weft/parallel/pipeline_stage.hpp>
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

// 2 query heads and 1 kv head of 4 on a width of 8; window 3 and every second layer global, so
// that the window bites within 8 tokens and both forms occur; the global layers' frequencies
// scaled linearly by 4.
using tiny_cfg = gemma3_config<vocab<13>, context<8>, width<8>, heads<2>, kv_heads<1>, head_dim<4>, depth<3>, ffn<12>,
                               sliding_window<3>, layer_pattern<2>, rope_scaling<linear_rope_scaling<4>>>;
using tiny = gemma3<tiny_cfg>;
// depth 4, pattern 3: with two stages of two blocks, block 2 (the second stage's first) is the
// only global one — a stage counting its blocks from 0 would put it at 1.
using pp_cfg = gemma3_config<vocab<13>, context<8>, width<8>, heads<2>, kv_heads<1>, head_dim<4>, depth<4>, ffn<12>,
                             sliding_window<3>, layer_pattern<3>>;
using pp_model = gemma3<pp_cfg>;

static_assert(language_model<tiny> && language_model<pp_model>);
static_assert(tiny_cfg::global_layers == 1 && pp_cfg::global_layers == 1);
static_assert(tiny_cfg::norm_epsilon == 1e-6 && tiny_cfg::rope_theta == 1000000 && tiny_cfg::rope_local_base == 10000);

// The blocks written by hand with one attention form each (the same parameters).
template <class Cfg, class Core>
using hand_block = sequential<
    residual<sequential<named<"input_layernorm", detail::gemma3_norm<Cfg>>,
                        named<"self_attn", sequential<named<"c_attn", linear<8, 16, role::column, false, init::normal<20>,
                                                                             export_layout::as_is, packed<8, 4, 4>>>,
                                                      named<"qk_norm", qk_norm<2, 1, 4, 1e-6, true>>, Core,
                                                      named<"c_proj", linear<8, 8, role::row, false>>>>,
                        named<"post_attention_layernorm", detail::gemma3_norm<Cfg>>>>,
    residual<sequential<named<"pre_feedforward_layernorm", detail::gemma3_norm<Cfg>>, named<"mlp", geglu_mlp<8, 12>>,
                        named<"post_feedforward_layernorm", detail::gemma3_norm<Cfg>>>>>;
template <class Cfg>
using local_core = causal_attention<2, 1, 4, rotary<10000>, 3>;
template <class Cfg>
using global_core = causal_attention<2, 1, 4, typename Cfg::global_position, 0>;
template <class Cfg>
using local_block = hand_block<Cfg, local_core<Cfg>>;
template <class Cfg>
using global_block = hand_block<Cfg, global_core<Cfg>>;
template <class... Blocks>
struct hand_model : sequential<named<"embed", token_embedding<13, 8>>, embedding_scale<8>,
                               named<"layers", sequential<Blocks...>>, named<"norm", rmsnorm<8, 1e-6, true>>,
                               named<"head", lm_head<13, 8, tied<"embed.weight">>>> {};
// tiny: layers 0 and 2 local, 1 global
using tiny_by_hand = hand_model<named<"0", local_block<tiny_cfg>>, named<"1", global_block<tiny_cfg>>,
                                named<"2", local_block<tiny_cfg>>>;
using tiny_all_local = hand_model<named<"0", local_block<tiny_cfg>>, named<"1", local_block<tiny_cfg>>,
                                  named<"2", local_block<tiny_cfg>>>;
using tiny_all_global = hand_model<named<"0", global_block<tiny_cfg>>, named<"1", global_block<tiny_cfg>>,
                                   named<"2", global_block<tiny_cfg>>>;
static_assert(std::is_same_v<detail::gemma3_core<tiny_cfg>,
                             local_global_attention<2, local_core<tiny_cfg>, global_core<tiny_cfg>>>);
static_assert(tiny_by_hand::param_count == tiny::param_count);

std::vector<double> random_vector(std::size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  std::vector<double> v(n);
  for (auto& e : v) e = d(g);
  return v;
}

// Forward of a layer in f64 over given parameters; `layer` is the frame's block index.
template <class L, std::size_t B, std::size_t S, class Root = L>
std::vector<double> run_forward(const std::vector<double>& params, const double* x, const std::int32_t* tokens = nullptr,
                                std::size_t layer = 0) {
  std::vector<double> kept(L::template kept_count<B, S> + 1), scratch(L::template scratch_count<B, S> + 1),
      out(B * S * L::out_width);
  std::vector<double> p(params), g(params.size() + 1);
  frame<double, B, S, Root> f;
  f.params = p.data();
  f.grads = g.data();
  f.root_params = p.data();
  f.root_grads = g.data();
  f.kept = kept.data();
  f.scratch = scratch.data();
  f.tokens = tokens;
  f.layer = layer;
  L::forward(f, x, out.data());
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 5;
  return o;
}

const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 11, 12, 10};

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

TEST_CASE("Gemma's RMSNorm is x̂·(1 + w), its weight initialised to 0", "[model][gemma3][norm]") {
  constexpr std::size_t B = 2, S = 3, C = 8;
  using unit = rmsnorm<C, 1e-6, true>;
  using plain = rmsnorm<C, 1e-6>;
  STATIC_REQUIRE(unit::param_count == C && unit::scratch_count<B, S> == C && plain::scratch_count<B, S> == 0);
  unit::visit_params("", 0, init_context{}, [](const param_info& p) {
    CHECK(p.name == "weight");
    CHECK(!p.random_init);
    CHECK(p.init_constant == 0.0);
  });
  const auto w = random_vector(C, 3, 0.5);
  const auto x = random_vector(B * S * C, 4);
  std::vector<double> one_plus_w(C);
  for (std::size_t i = 0; i < C; ++i) one_plus_w[i] = 1 + w[i];
  const auto y = run_forward<unit, B, S>(w, x.data());
  const auto ref = run_forward<plain, B, S>(one_plus_w, x.data());
  CHECK(max_abs_diff(y, ref) == 0.0);
  // the formula itself, row by row
  for (std::size_t r = 0; r < B * S; ++r) {
    double ms = 0;
    for (std::size_t i = 0; i < C; ++i) ms += x[r * C + i] * x[r * C + i];
    const double inv = 1 / std::sqrt(ms / C + 1e-6);
    for (std::size_t i = 0; i < C; ++i) CHECK(y[r * C + i] == Approx(x[r * C + i] * inv * (1 + w[i])).epsilon(1e-13));
  }
  SECTION("gradients") {
    const auto g = testing::check_gradients<unit, B, S>();
    INFO(g.summary());
    CHECK(g.ok());
    const auto a = testing::check_accumulates<unit, B, S>();
    INFO(a.summary());
    CHECK(a.ok());
  }
  SECTION("QK-norm with the unit offset") {
    using qk = qk_norm<2, 1, 4, 1e-6, true>;
    using qk_plain = qk_norm<2, 1, 4, 1e-6>;
    const auto gw = random_vector(qk::param_count, 5, 0.5);
    std::vector<double> g1(gw);
    for (auto& e : g1) e += 1;
    const auto xq = random_vector(B * S * qk::in_width, 6);
    CHECK(max_abs_diff(run_forward<qk, B, S>(gw, xq.data()), run_forward<qk_plain, B, S>(g1, xq.data())) == 0.0);
    const auto g = testing::check_gradients<qk, B, S>();
    INFO(g.summary());
    CHECK(g.ok());
    const auto a = testing::check_accumulates<qk, B, S>();
    INFO(a.summary());
    CHECK(a.ok());
    // its tensor-parallel form keeps the offset
    STATIC_REQUIRE(std::is_same_v<tp_shard_t<qk_norm<2, 2, 4, 1e-6, true>, 2, false, true>,
                                  tensor_parallel_qk_norm<1, 1, 4, 2, false, 1e-6, true>>);
  }
}

TEST_CASE("linear rope scaling turns position p into p / factor", "[model][gemma3][rope]") {
  STATIC_REQUIRE(linear_rope_scaling<8>::apply(1.0) == 0.125);
  STATIC_REQUIRE(linear_rope_scaling<8>::enabled && linear_rope_scaling<1>::apply(0.3) == 0.3);
  // every row holds the same q|k|v: the scaled rotation of row 4 is the plain rotation of row 1
  constexpr std::size_t S = 8, W = 3 * 4;  // one q, one k and one v head of 4
  const auto row = random_vector(W, 21);
  std::vector<double> in(S * W), scaled(S * W), plain(S * W);
  for (std::size_t r = 0; r < S; ++r) std::copy(row.begin(), row.end(), in.begin() + static_cast<std::ptrdiff_t>(r * W));
  frame<double, 1, S, tiny> f;
  ops::rope_forward<1, S, 1, 1, 4, 10000, 4, linear_rope_scaling<4>>(f.ctx, view<S, W>(f, scaled.data()), view<S, W>(f, in.data()));
  ops::rope_forward<1, S, 1, 1, 4, 10000, 4>(f.ctx, view<S, W>(f, plain.data()), view<S, W>(f, in.data()));
  for (std::size_t i = 0; i < W; ++i) CHECK(scaled[4 * W + i] == Approx(plain[1 * W + i]).epsilon(1e-14).margin(1e-15));
  CHECK(std::fabs(scaled[1 * W] - plain[1 * W]) > 1e-6);  // the scaling changes something
}

TEST_CASE("a tiny Gemma 3's gradients equal finite differences", "[model][gemma3][gradients]") {
  const auto r = testing::check_gradients<tiny, 1, 8>();
  INFO(r.summary());
  CHECK(r.ok());
  const auto b = testing::check_gradients<local_global_attention<2, local_core<tiny_cfg>, global_core<tiny_cfg>>, 2, 4>();
  INFO(b.summary());
  CHECK(b.ok());
}

TEST_CASE("block i of a Gemma 3 attends globally exactly when (i + 1) % pattern == 0", "[model][gemma3]") {
  constexpr std::size_t B = 2, S = 8;
  const auto p = random_vector(tiny::param_count, 11, 0.3);
  std::vector<std::int32_t> tokens(B * S);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7 + 3) % 13);
  const auto y = run_forward<tiny, B, S>(p, nullptr, tokens.data());
  const auto hand = run_forward<tiny_by_hand, B, S>(p, nullptr, tokens.data());
  const auto local = run_forward<tiny_all_local, B, S>(p, nullptr, tokens.data());
  const auto global = run_forward<tiny_all_global, B, S>(p, nullptr, tokens.data());
  CHECK(max_abs_diff(y, hand) <= 1e-12);
  // the test bites: neither single form gives the model's logits
  CHECK(max_abs_diff(y, local) > 1e-6);
  CHECK(max_abs_diff(y, global) > 1e-6);

  // the parameter names map one to one onto Hugging Face's
  STATIC_REQUIRE(tiny::find_param("embed.weight") == 0);
  STATIC_REQUIRE(tiny::find_param("layers.1.self_attn.qk_norm.k_weight") != npos_param);
  STATIC_REQUIRE(tiny::find_param("layers.2.post_feedforward_layernorm.weight") != npos_param);
  STATIC_REQUIRE(tiny::find_param("norm.weight") + 8 == tiny::param_count);  // the head owns none
  STATIC_REQUIRE(tiny_by_hand::find_param("layers.1.mlp.down.weight") == tiny::find_param("layers.1.mlp.down.weight"));
}

TEST_CASE("a pipeline stage's Gemma 3 blocks use the model-wide layer index", "[model][gemma3][pipeline]") {
  constexpr std::size_t B = 1, S = 8, C = 8;
  using stage1 = pipeline_stage<pp_model, 2, 1>;
  STATIC_REQUIRE(stage1::first_block == 2 && stage1::blocks == 2);
  using body = typename stage1::body::inner;  // repeat<2, Block, 2>
  using block_t = detail::gemma3_block<pp_cfg>;
  STATIC_REQUIRE(std::is_same_v<body, repeat<2, block_t, 2>>);
  const auto p = random_vector(body::param_count, 12, 0.3);
  const auto x = random_vector(B * S * C, 13);
  const auto y = run_forward<body, B, S>(p, x.data());
  // by hand: block 2 global, block 3 local
  using hand = sequential<named<"2", global_block<pp_cfg>>, named<"3", local_block<pp_cfg>>>;
  const auto h = run_forward<hand, B, S>(p, x.data());
  CHECK(max_abs_diff(y, h) <= 1e-12);
  using wrong = sequential<named<"2", local_block<pp_cfg>>, named<"3", global_block<pp_cfg>>>;  // counted from 0
  CHECK(max_abs_diff(y, run_forward<wrong, B, S>(p, x.data())) > 1e-6);
  // the same under full recomputation, which re-runs the copies
  const auto r = run_forward<recomputed<body>, B, S>(p, x.data());
  CHECK(max_abs_diff(y, r) <= 1e-12);
}

TEST_CASE("a tiny Gemma 3 trains, through training_step and make_training_step alike", "[model][gemma3][train]") {
  using p64 = plan<tiny, batch<micro<2>, seq<8>>, precision<double>>;
  const auto a = losses<p64>(8);
  CHECK(a.back() < a.front() - 0.1);  // it learns the pattern
  for (double l : a) CHECK(std::isfinite(l));

  // flash_attention and selective recomputation compute the same
  using pf = plan<tiny, batch<micro<2>, seq<8>>, precision<double>, flash_attention>;
  const auto fl = losses<pf>(8);
  using ps = plan<tiny, batch<micro<2>, seq<8>>, precision<double>, recompute<selective>>;
  const auto se = losses<ps>(8);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(std::fabs(fl[i] - a[i]) <= 1e-12 * std::fabs(a[i]));
    CHECK(std::fabs(se[i] - a[i]) <= 1e-12 * std::fabs(a[i]));
  }

  auto through_entry = [](auto& step) {
    pattern_source src;
    std::vector<double> r;
    for (int s = 0; s < 8; ++s) r.push_back(step.step(src).loss);
    return r;
  };
  single_world world;
  auto plain_step = make_training_step<p64>(world, options());
  const auto e = through_entry(plain_step);
  using z3 = plan<tiny, batch<micro<2>, seq<8>>, precision<double>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>>>;
  auto zero3_step = make_training_step<z3>(world, options());
  const auto z = through_entry(zero3_step);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(e[i] == a[i]);
    CHECK(std::fabs(z[i] - a[i]) <= 1e-12 * std::fabs(a[i]));
  }
}

TEST_CASE("Gemma 3's FLOPs count the local layers' window, its shards and structure", "[model][gemma3][parallel]") {
  // per token: 6 per multiplied parameter, 12·H·D per key each layer's queries see: the global
  // layer all 8, the local ones 3
  using p = plan<tiny, batch<micro<1>, seq<8>>>;
  STATIC_REQUIRE(p::flops_per_token == 6 * tiny::param_count + 12 * 2 * 4 * (8 + 2 * 3));
  constexpr planner::model_desc d = planner::describe<tiny>();
  STATIC_REQUIRE(d.window == 3 && d.global_layers == 1 && d.params() == tiny::param_count);
  CHECK(d.flops_per_token(8) == Approx(static_cast<double>(p::flops_per_token)));

  // tp 2 (kv_heads 1 does not divide: use a model with 2 kv heads): norms whole, the rest halved
  using tp_cfg = gemma3_config<vocab<16>, context<8>, width<8>, heads<2>, kv_heads<2>, head_dim<4>, depth<2>, ffn<12>,
                               sliding_window<3>, layer_pattern<2>>;
  using tp_model_t = gemma3<tp_cfg>;
  constexpr std::size_t C = 8, F = 12, TP = 2;
  constexpr std::size_t block_shard = 4 * C + 2 * 4 + (3 * 8 * C) / TP + 8 * C / TP + 3 * C * F / TP;
  STATIC_REQUIRE(tp_shard_t<detail::gemma3_block<tp_cfg>, TP>::param_count == block_shard);
  STATIC_REQUIRE(tp_shard_t<detail::gemma3_block<tp_cfg>, TP, true>::param_count == block_shard);
  STATIC_REQUIRE(model_partition<tp_model_t, 2>::whole.params.per_rank == tp_model<tp_model_t, 2>::param_count);

  const std::string text = structure_of<tiny>();
  INFO(text);
  CHECK(text.find("local_global(pattern=2,local=causal_attention(heads=2,kv_heads=1,head_size=4,window=3,rope)") !=
        std::string::npos);
  CHECK(text.find("rope(base=1000000,dims=4,linear_scaling=4)") != std::string::npos);
  CHECK(text.find("rmsnorm_unit_offset(eps=1e-06)") != std::string::npos);
  CHECK(text.find("unit_offset)") != std::string::npos);  // qk_norm
  CHECK(text.find("geglu_tanh") != std::string::npos);
}
