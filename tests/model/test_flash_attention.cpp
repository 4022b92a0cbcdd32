// The flash_attention option: every causal_attention of a plan's model keeps row statistics and
// its output instead of (batch, heads, seq, seq) probabilities (model/flash_attention.hpp).
// Trained in f64 it follows the probabilities model to rounding; combined with recompute<full>
// it trains bit-identically to itself without recomputation; the plan keeps what the layer says.
#include <weft/model.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/parallel/recompute.hpp>
#include <weft/parallel/strategy.hpp>
#include <weft/parallel/tensor_parallel.hpp>
#include <weft/comm/single.hpp>
#include <weft/exec/data_parallel_step.hpp>
#include <weft/exec/training_step.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {

using tiny_gpt = gpt<gpt_config<vocab<13>, context<16>, width<16>, heads<2>, depth<3>>>;
using tiny_llama = llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>>>;
using tiny_batch = batch<micro<2>, seq<16>>;
using small_llama = llama<llama_config<vocab<32>, context<64>, width<32>, heads<4>, kv_heads<2>, depth<2>>>;

template <class M, class Policy, class... Extra>
using plan_of = plan<M, tiny_batch, strategy<mesh<axis<"dp">>, recompute<Policy>, Extra...>, precision<double>>;

struct run_result {
  std::vector<double> losses;
  std::vector<double> params;
};

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 7;
  o.grad_accum = 2;
  return o;
}

template <class Plan>
run_result train(std::size_t steps) {
  training_step<Plan> st(options());
  const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 11, 12, 10};
  std::size_t start = 0;
  run_result r;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto m = st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = pattern[(start + i) % pattern.size()];
        targets[i] = pattern[(start + i + 1) % pattern.size()];
      }
      start += 5;
    });
    r.losses.push_back(m.loss);
  }
  r.params.assign(st.params().begin(), st.params().end());
  return r;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, scale = 1e-300;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(a[i] - b[i]));
    scale = std::max({scale, std::fabs(a[i]), std::fabs(b[i])});
  }
  return d / scale;
}

template <class M>
void check_model() {
  using p_none = plan_of<M, none>;
  using p_flash = plan_of<M, none, flash_attention>;
  using p_flash_full = plan_of<M, full, flash_attention>;
  using p_flash_sel = plan_of<M, selective, flash_attention>;
  constexpr std::size_t B = p_none::B, S = p_none::S, N = M::depth, H = M::heads;
  constexpr std::size_t Dh = weft::detail::head_dim_of<M>();  // width / heads unless head_dim<> is set

  STATIC_REQUIRE(p_flash::flash);
  STATIC_REQUIRE(!p_none::flash);
  STATIC_REQUIRE(!std::is_same_v<typename p_flash::model, M>);
  STATIC_REQUIRE(p_flash::param_count == p_none::param_count);
  // selective recomputation has nothing left to drop: the same executed model
  STATIC_REQUIRE(std::is_same_v<typename p_flash_sel::model, typename p_flash::model>);
  // per layer: the probabilities (B, H, S, S) give way to the row statistics (norm_stat_slots)
  // and the output copy (B, S, H·D)
  constexpr std::size_t per_layer_none = B * H * S * S, per_layer_flash = norm_stat_slots<B * H * S> + B * S * H * Dh;
  CHECK(p_none::kept_count - p_flash::kept_count == N * (per_layer_none - per_layer_flash));
  CHECK(p_flash::scratch_count <= p_none::scratch_count);
  // the analytic model (Korthikanti's terms) drops the same probabilities and adds the same
  // statistics (8-byte in f64) and output copy
  constexpr std::size_t e = sizeof(double);
  CHECK(p_none::memory::layer_bytes - p_flash::memory::layer_bytes == B * H * S * S * e - B * H * S * (e + Dh * e));

  const run_result r_none = train<p_none>(4);
  const run_result r_flash = train<p_flash>(4);
  const run_result r_flash_full = train<p_flash_full>(4);
  REQUIRE(r_flash.losses.size() == 4);
  CHECK(r_flash.losses.front() != r_flash.losses.back());  // it trains
  // f64: the two attentions differ only by rounding (the row term dout·out against Σ p·dp)
  CHECK(max_rel_diff(r_flash.losses, r_none.losses) < 1e-12);
  REQUIRE(r_flash.params.size() == r_none.params.size());
  CHECK(max_rel_diff(r_flash.params, r_none.params) < 1e-10);
  // recomputation re-runs the same flash layers: bit-identical
  CHECK(r_flash_full.losses == r_flash.losses);
  CHECK(std::memcmp(r_flash_full.params.data(), r_flash.params.data(), r_flash.params.size() * sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("gpt with flash_attention: keeps row statistics, trains as the probabilities model (f64)",
          "[model][attention]") {
  check_model<tiny_gpt>();
}

TEST_CASE("llama (rope, grouped kv) with flash_attention: keeps row statistics, trains as the probabilities model",
          "[model][attention]") {
  check_model<tiny_llama>();
}

TEST_CASE("llama with rope_theta 500000 and flash_attention: trains as the probabilities model", "[model][attention]") {
  using theta_llama =
      llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>, rope_theta<500000>>>;
  STATIC_REQUIRE(theta_llama::config::rope_theta == 500000);
  check_model<theta_llama>();
  // the base reaches the layers: the same weights and tokens give another loss than base 10000
  const run_result theta = train<plan_of<theta_llama, none>>(2), base = train<plan_of<tiny_llama, none>>(2);
  CHECK(theta.losses[0] != base.losses[0]);
  CHECK(std::fabs(theta.losses[0] - base.losses[0]) < 1e-2 * base.losses[0]);  // a small change of positions only
}

TEST_CASE("llama and gpt with a sliding window: flash and probabilities agree, and the window bites",
          "[model][attention][window]") {
  using mistral_like = llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>,
                                          sliding_window<5>>>;
  using gpt_window = gpt<gpt_config<vocab<13>, context<16>, width<16>, heads<2>, depth<3>, sliding_window<3>>>;
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<causal_attention<4, 2, 4, rope, 5>, selective, true>,
                                flash_attention_core<4, 2, 4, rope, 5>>);
  STATIC_REQUIRE(std::is_same_v<tp_shard_t<causal_attention<4, 2, 8, rope, 5>, 2, false, true>,
                                causal_attention<2, 1, 8, rope, 5>>);
  check_model<mistral_like>();
  check_model<gpt_window>();
  const run_result windowed = train<plan_of<mistral_like, none>>(1), full = train<plan_of<tiny_llama, none>>(1);
  CHECK(windowed.losses[0] != full.losses[0]);
  // selective recomputation recomputes the windowed probabilities: bit-identical training
  const run_result sel = train<plan_of<mistral_like, selective>>(2), none_2 = train<plan_of<mistral_like, none>>(2);
  CHECK(sel.losses == none_2.losses);
}

TEST_CASE("Qwen-shaped llamas (q, k, v bias; a head size of its own; QK-norm): flash and probabilities agree",
          "[model][attention]") {
  // 4 heads of 6 on a width of 16: the attention works in 24 wide
  using qwen_like = llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, head_dim<6>, depth<3>,
                                       ffn<24>, qkv_bias<>, query_key_norm<>, tie_word_embeddings<>>>;
  STATIC_REQUIRE(qwen_like::head_dim == 6);
  STATIC_REQUIRE(qwen_like::find_param("layers.0.attn.c_attn.bias") != npos_param);
  STATIC_REQUIRE(qwen_like::find_param("layers.0.attn.c_proj.bias") == npos_param);
  STATIC_REQUIRE(qwen_like::find_param("layers.0.attn.qk_norm.q_weight") != npos_param);
  STATIC_REQUIRE(qwen_like::param_count == 13 * 16 + 16 + 3 * (2 * 16 + (24 + 2 * 12) * 16 + (24 + 2 * 12) + 2 * 6 +
                                                              24 * 16 + 3 * 16 * 24));
  check_model<qwen_like>();
}

TEST_CASE("llama with LLaMA 3.1's frequency scaling and flash_attention: trains as the probabilities model",
          "[model][attention]") {
  // an original context of 16 puts the 4-wide heads' second frequency (wavelength ~4400) past it: slowed 8 times
  using scaled_llama = llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>,
                                          rope_theta<500000>, rope_scaling<llama3_rope_scaling<8, 1, 4, 16>>>>;
  using theta_llama =
      llama<llama_config<vocab<13>, context<16>, width<16>, heads<4>, kv_heads<2>, depth<3>, ffn<24>, rope_theta<500000>>>;
  check_model<scaled_llama>();
  const run_result scaled = train<plan_of<scaled_llama, none>>(1), theta = train<plan_of<theta_llama, none>>(1);
  CHECK(scaled.losses[0] != theta.losses[0]);
}

TEST_CASE("flash_attention maps every causal_attention, also as a plan option and under tensor parallelism",
          "[model][attention]") {
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<causal_attention<2, 1, 4>, none, true>, flash_attention_core<2, 1, 4>>);
  STATIC_REQUIRE(
      std::is_same_v<with_recompute_t<causal_attention<2, 1, 4, rope>, selective, true>, flash_attention_core<2, 1, 4, rope>>);
  STATIC_REQUIRE(std::is_same_v<with_recompute_t<causal_attention<2, 1, 4>, executed_policy<none, true>>,
                                flash_attention_core<2, 1, 4>>);
  // kept: lse slots + output copy (+ rotated q, k, v with rope); workspace only the rotated gradient
  STATIC_REQUIRE(flash_attention_core<2, 1, 4>::kept_count<2, 8> == norm_stat_slots<2 * 2 * 8> + 2 * 8 * 2 * 4);
  STATIC_REQUIRE(flash_attention_core<2, 1, 4>::scratch_count<2, 8> == 0);
  STATIC_REQUIRE(flash_attention_core<2, 1, 4, rope>::kept_count<2, 8> ==
                 norm_stat_slots<2 * 2 * 8> + 2 * 8 * 2 * 4 + 2 * 8 * (2 + 2) * 4);
  // the option written on the plan rather than in the strategy
  // example-begin flash-attention-plan
  // In a strategy, beside its parts ...
  using flash_strategy = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, flash_attention>;
  using flash_plan = plan<small_llama, batch<micro<8>, seq<64>>, precision<bf16, float>, flash_strategy>;
  static_assert(flash_plan::flash);  // every causal_attention runs as flash_attention_core
  // ... or as a plan option.
  using as_option = plan<tiny_gpt, tiny_batch, precision<double>, flash_attention>;
  // example-end flash-attention-plan
  STATIC_REQUIRE(flash_plan::kept_count < plan<small_llama, batch<micro<8>, seq<64>>, precision<bf16, float>,
                                              strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>::kept_count);
  using in_strategy = plan_of<tiny_gpt, none, flash_attention>;
  STATIC_REQUIRE(std::is_same_v<typename as_option::model, typename in_strategy::model>);
  STATIC_REQUIRE(as_option::kept_count == in_strategy::kept_count);
  // a tensor-parallel shard of flash_attention_core holds heads / tp of it
  STATIC_REQUIRE(std::is_same_v<tp_shard_t<flash_attention_core<4, 2, 8>, 2, false, true>, flash_attention_core<2, 1, 8>>);
}

// bf16 weights and activations, f32 master weights and statistics: the flash model's losses stay
// within bf16's reach of the probabilities model's.
TEST_CASE("flash_attention under precision<bf16, f32> follows the probabilities model", "[model][attention][bf16]") {
  using p_none = plan<tiny_llama, tiny_batch, strategy<mesh<axis<"dp">>, precision<bf16, float>>>;
  using p_flash = plan<tiny_llama, tiny_batch, strategy<mesh<axis<"dp">>, precision<bf16, float>, flash_attention>>;
  std::vector<double> a, b;
  for (int which = 0; which < 2; ++which) {
    auto run = [&](auto st) {
      const std::vector<std::int32_t> pattern{0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 11, 12, 10};
      std::size_t start = 0;
      std::vector<double> losses;
      for (int s = 0; s < 6; ++s) {
        losses.push_back(st.step([&](auto tokens, auto targets) {
                             for (std::size_t i = 0; i < tokens.size(); ++i) {
                               tokens[i] = pattern[(start + i) % pattern.size()];
                               targets[i] = pattern[(start + i + 1) % pattern.size()];
                             }
                             start += 5;
                           }).loss);
      }
      return losses;
    };
    if (which == 0) a = run(training_step<p_none>(options()));
    else b = run(training_step<p_flash>(options()));
  }
  REQUIRE(a.size() == b.size());
  CHECK(b.front() > b.back());  // it trains
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) < 0.03 * std::fabs(a[i]));
}
