// The mixture-of-experts MLP (model/moe.hpp) and its ops: routing and dispatch against a plain
// re-computation, the layer's backward against f64 finite differences (GELU and SwiGLU experts,
// with and without a shared expert), the load-balancing loss and its gradient, the per-thread
// meter, a moe_gpt model planned by plan<> and trained on one process (the loss falls).
#include <weft/comm/expert_group_adapter.hpp>
#include <weft/comm/single.hpp>
#include <weft/model/ep_moe_mlp.hpp>
#include <weft/model/moe.hpp>
#include <weft/model/moe_gpt.hpp>
#include <weft/model/moe_llama.hpp>
#include <weft/model/mlp.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/parallel/strategy.hpp>
#include <weft/testing/gradient_check.hpp>
#include <weft/exec/data_parallel_step.hpp>
#include <weft/exec/expert_parallel_local.hpp>
#include <weft/exec/expert_parallel_step.hpp>
#include <weft/exec/training_step.hpp>

#include <catch2/catch.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace weft;

// Turns the auxiliary gradient off while a check of the main path runs (scoped).
struct aux_off {
  double saved = aux_losses().gradient_scale;
  aux_off() { aux_losses().gradient_scale = 0; }
  ~aux_off() { aux_losses().gradient_scale = saved; }
};

void require_ok(const testing::gradient_report& r) {
  std::fputs(r.summary().c_str(), stdout);  // the measured errors, in the test log
  REQUIRE(r.ok());
}

}  // namespace

TEST_CASE("top-k router: softmax, the k largest with ties to the lower index, renormalised gates", "[model][moe]") {
  constexpr std::size_t N = 3, E = 4, K = 2;
  // row 1 has a tie between experts 1 and 3 (both largest): the lower index comes first
  const std::vector<double> logits{0.1, 2.0, -1.0, 0.5, 0.0, 1.0, 0.2, 1.0, -3.0, -3.0, -3.0, 4.0};
  std::vector<double> probs(N * E), gates(N * K);
  std::vector<std::int32_t> ex(N * K);
  ops::topk_router_forward<N, E, K>(host_context{}, probs.data(), gates.data(), ex.data(), logits.data());
  CHECK(ex == std::vector<std::int32_t>{1, 3, 1, 3, 3, 0});
  for (std::size_t n = 0; n < N; ++n) {
    double z = 0;
    for (std::size_t e = 0; e < E; ++e) z += std::exp(logits[n * E + e]);
    for (std::size_t e = 0; e < E; ++e) CHECK(probs[n * E + e] == Approx(std::exp(logits[n * E + e]) / z).epsilon(1e-14));
    const double a = std::exp(logits[n * E + ex[n * K]]), b = std::exp(logits[n * E + ex[n * K + 1]]);
    CHECK(gates[n * K] == Approx(a / (a + b)).epsilon(1e-14));
    CHECK(gates[n * K + 1] == Approx(b / (a + b)).epsilon(1e-14));
  }
}

TEST_CASE("dropless dispatch groups by expert in token order and combine inverts it", "[model][moe]") {
  constexpr std::size_t N = 4, E = 3, K = 2, C = 2;
  const std::vector<std::int32_t> ex{2, 0, 0, 1, 2, 1, 0, 2};  // (N, K)
  std::vector<std::int32_t> offsets(E + 1), slot(N * K), token(N * K);
  ops::moe_dispatch_plan<N, E, K>(host_context{}, offsets.data(), slot.data(), token.data(), ex.data());
  CHECK(offsets == std::vector<std::int32_t>{0, 3, 5, 8});
  CHECK(token == std::vector<std::int32_t>{0, 1, 3, 1, 2, 0, 2, 3});  // expert 0: tokens 0,1,3 ...
  for (std::size_t i = 0; i < N * K; ++i) {
    CHECK(token[static_cast<std::size_t>(slot[i])] == static_cast<std::int32_t>(i / K));
    const auto r = slot[i];
    CHECK(r >= offsets[static_cast<std::size_t>(ex[i])]);
    CHECK(r < offsets[static_cast<std::size_t>(ex[i]) + 1]);
  }
  // gather then combine with gates summing to one reproduces x
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> gates{0.25, 0.75, 0.5, 0.5, 0.1, 0.9, 1.0, 0.0};
  std::vector<double> xe(N * K * C), y(N * C);
  ops::moe_gather<N, K, C>(host_context{}, xe.data(), x.data(), token.data());
  ops::moe_combine_forward<N, K, C>(host_context{}, y.data(), xe.data(), gates.data(), slot.data());
  for (std::size_t i = 0; i < N * C; ++i) CHECK(y[i] == Approx(x[i]).epsilon(1e-15));
}

TEST_CASE("grouped matmul equals one matmul per expert's rows", "[model][moe]") {
  constexpr std::size_t R = 5, C = 3, OC = 2, E = 3;
  const std::vector<std::int32_t> offsets{0, 2, 2, 5};  // expert 1 gets no rows
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> in(R * C), w(E * OC * C), out(R * OC);
  for (auto& v : in) v = u(g);
  for (auto& v : w) v = u(g);
  ops::grouped_matmul_forward<R, C, OC, E>(host_context{}, out.data(), in.data(), w.data(), offsets.data());
  for (std::size_t r = 0; r < R; ++r) {
    const std::size_t e = r < 2 ? 0 : 2;
    for (std::size_t o = 0; o < OC; ++o) {
      double s = 0;
      for (std::size_t c = 0; c < C; ++c) s += in[r * C + c] * w[(e * OC + o) * C + c];
      CHECK(out[r * OC + o] == Approx(s).epsilon(1e-14));
    }
  }
}

// ---- layer gradients (f64 finite differences; routing piecewise: these seeds give no near-tie) ----
using moe_gelu = moe_mlp<8, 4, 2, 6>;
using moe_swiglu = moe_mlp<8, 4, 2, 6, swiglu_experts>;
using moe_shared = moe_mlp<8, 4, 2, 6, swiglu_experts, shared_expert<swiglu_mlp<8, 5>>>;
using moe_gelu_shared = moe_mlp<8, 4, 1, 6, shared_expert<gelu_mlp<8, 5, false>>>;

TEST_CASE("moe_mlp backward against finite differences, aux gradient off", "[model][moe][gradient]") {
  aux_off off;
  require_ok(testing::check_gradients<moe_gelu, 2, 3>());
  require_ok(testing::check_gradients<moe_swiglu, 2, 3>());
  require_ok(testing::check_gradients<moe_shared, 2, 3>());
  require_ok(testing::check_gradients<moe_gelu_shared, 2, 3>());
  require_ok(testing::check_gradients<moe_mlp<8, 3, 3, 4>, 2, 3>());  // k = E: every expert
}

TEST_CASE("moe_mlp backward accumulates", "[model][moe][gradient]") {
  aux_off off;
  const auto r = testing::check_accumulates<moe_shared, 2, 3>();
  if (!r.ok()) std::fputs(r.summary().c_str(), stderr);
  REQUIRE(r.ok());
}

// With alpha > 0 the layer's backward adds the gradient of aux: check d(sum(out ⊙ R) + aux) by
// central differences (f_e is constant away from ties, so the finite difference is exact).
template <class L>
void check_with_aux(unsigned seed, double& worst_out, double& aux_share) {
  std::vector<double> without;  // the parameter gradient with the aux gradient off
  {
    aux_off off;
    testing::layer_harness<L, 2, 3> h0(seed);
    h0.forward_backward();
    without = h0.grads;
  }
  aux_losses().gradient_scale = 1.0;
  testing::layer_harness<L, 2, 3> h(seed);
  auto total = [&] {
    const double l = h.loss();  // runs forward
    return l + L::aux_loss(h.frame_of());
  };
  h.forward_backward();
  const std::vector<double> analytic_p = h.grads, analytic_x = h.din;
  double worst = 0, ref = 0;
  auto fd = [&](std::vector<double>& x, std::size_t i) {
    const double x0 = x[i];
    x[i] = x0 + 1e-5;
    const double up = total();
    x[i] = x0 - 1e-5;
    const double down = total();
    x[i] = x0;
    return (up - down) / 2e-5;
  };
  for (std::size_t i = 0; i < L::param_count; ++i) {
    const double n = fd(h.params, i);
    worst = std::max(worst, std::abs(n - analytic_p[i]));
    ref = std::max(ref, std::abs(n));
  }
  for (std::size_t i = 0; i < h.in_count; ++i) {
    const double n = fd(h.in, i);
    worst = std::max(worst, std::abs(n - analytic_x[i]));
    ref = std::max(ref, std::abs(n));
  }
  worst_out = worst / ref;
  double d = 0;
  for (std::size_t i = 0; i < L::param_count; ++i) d = std::max(d, std::abs(analytic_p[i] - without[i]));
  aux_share = d / ref;
}

TEST_CASE("moe_mlp backward includes the load-balancing loss gradient", "[model][moe][gradient][aux]") {
  using big_alpha = moe_mlp<8, 4, 2, 6, swiglu_experts, aux_loss_weight<1, 2>>;  // alpha 0.5: visible
  double rel = 0, share = 0;
  check_with_aux<big_alpha>(1, rel, share);
  std::printf("moe aux: max |fd - analytic| / max|fd| = %.3g; the aux term moves the gradient by %.3g of it\n", rel,
              share);
  CHECK(rel < 1e-8);
  CHECK(share > 1e-4);  // the aux gradient is really there: without it the check would fail
}

TEST_CASE("load-balancing loss: value and gradient w.r.t. the logits", "[model][moe][aux]") {
  constexpr std::size_t N = 5, E = 4, K = 2;
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> logits(N * E);
  for (auto& v : logits) v = u(g);
  const double alpha = 0.3;
  auto aux_of = [&](const std::vector<double>& l, std::vector<double>* dl, std::vector<std::int32_t>* ex_out) {
    std::vector<double> p(N * E), gt(N * K);
    std::vector<std::int32_t> ex(N * K);
    ops::topk_router_forward<N, E, K>(host_context{}, p.data(), gt.data(), ex.data(), l.data());
    if (ex_out) *ex_out = ex;
    return ops::load_balance_loss<N, E, K>(host_context{}, dl ? dl->data() : nullptr, p.data(), ex.data(), alpha, 1.0);
  };
  std::vector<double> dl(N * E, 0.0);
  std::vector<std::int32_t> ex;
  const double aux = aux_of(logits, &dl, &ex);
  // value from its definition
  std::vector<double> p(N * E), f(E, 0.0), pm(E, 0.0);
  for (std::size_t n = 0; n < N; ++n) {
    double z = 0;
    for (std::size_t e = 0; e < E; ++e) z += std::exp(logits[n * E + e]);
    for (std::size_t e = 0; e < E; ++e) pm[e] += std::exp(logits[n * E + e]) / z / N;
  }
  for (auto e : ex) f[static_cast<std::size_t>(e)] += 1.0 / (N * K);
  double expect = 0;
  for (std::size_t e = 0; e < E; ++e) expect += f[e] * pm[e];
  CHECK(aux == Approx(alpha * E * expect).epsilon(1e-14));
  double worst = 0;
  for (std::size_t i = 0; i < N * E; ++i) {
    auto up = logits, down = logits;
    up[i] += 1e-6;
    down[i] -= 1e-6;
    const double n = (aux_of(up, nullptr, nullptr) - aux_of(down, nullptr, nullptr)) / 2e-6;
    worst = std::max(worst, std::abs(n - dl[i]));
  }
  std::printf("load_balance_loss: max |fd - analytic| = %.3g\n", worst);
  CHECK(worst < 1e-9);
}

TEST_CASE("the meter collects one aux value per layer backward", "[model][moe][aux]") {
  using tiny = moe_gpt<gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<3>>, moe_mlp<8, 4, 2, 8>>;
  using P = plan<tiny, batch<micro<2>, seq<4>>, precision<double>>;
  training_step<P> st;
  for (auto& t : st.tokens()) t = 1;
  for (auto& t : st.targets()) t = 2;
  aux_losses().take();
  (void)st.accumulate(1.0 / P::rows);
  const auto t = aux_losses().take();
  CHECK(t.count == 3);
  CHECK(t.sum > 0);
  CHECK(std::isfinite(t.sum));
}

// ---- expert parameters a token does not use: (E - k) experts of expert_in·C + C·F each, per block ----
// Width and ffn differ on purpose (8 and 12), so that a count mixing them up fails.
using wide_ffn_moe = moe_mlp<8, 4, 1, 12, swiglu_experts>;
using wide_ffn_cfg = gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>;
static_assert(moe_gpt<wide_ffn_cfg, wide_ffn_moe>::inactive_param_count == 2 * 3 * (24 * 8 + 8 * 12));
static_assert(moe_llama<llama_config<vocab<13>, context<8>, width<8>, heads<2>, kv_heads<2>, depth<2>, ffn<12>>,
                        wide_ffn_moe>::inactive_param_count == 2 * 3 * (24 * 8 + 8 * 12));

// ---- a model ----
using tiny_moe = moe_gpt<gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>, moe_mlp<8, 4, 2, 8, swiglu_experts>>;

TEST_CASE("moe_gpt is a language model, planned by plan<>", "[model][moe][plan]") {
  STATIC_REQUIRE(language_model<tiny_moe>);
  using P = plan<tiny_moe, batch<micro<2>, seq<4>>, precision<double>>;
  // per block: ln_1 2C, attn C·3C + 3C + C·C + C, ln_2 2C, moe E·C + E·2F·C + E·C·F
  constexpr std::size_t C = 8, E = 4, F = 8;
  constexpr std::size_t block = 2 * C + (3 * C * C + 3 * C + C * C + C) + 2 * C + (E * C + E * 2 * F * C + E * C * F);
  STATIC_REQUIRE(P::param_count == 13 * C + 8 * C + 2 * block + 2 * C);
  STATIC_REQUIRE(tiny_moe::find_param("h.1.mlp.experts.down_proj") != npos_param);
  std::set<std::string> names;
  for (const auto& p : P::parameters()) names.insert(p.name);
  CHECK(names.count("h.0.mlp.gate.weight") == 1);
  CHECK(names.count("h.0.mlp.experts.gate_up_proj") == 1);
  CHECK(names.count("h.1.mlp.experts.down_proj") == 1);
  using S = moe_mlp<8, 4, 2, 6, swiglu_experts, shared_expert<swiglu_mlp<8, 5>>>;
  STATIC_REQUIRE(S::find_param("shared_expert.down.weight") == S::own_param_count + 8 * 10);
  // kept: the router's probs and gates, three (R, ·) expert buffers and the int32 routing
  constexpr std::size_t N = 8, R = 16;
  STATIC_REQUIRE(moe_mlp<8, 4, 2, 8, swiglu_experts>::kept_count<2, 4> == N * E + N * 2 + R * 2 * F + R * F + R * C + 3 * R + E + 1);
  STATIC_REQUIRE(P::kept_count > 0);
}

// Gradient of cross-entropy + the blocks' aux losses w.r.t. every parameter, by central differences.
template <class M>
double model_gradient_error() {
  using P = plan<M, batch<micro<1>, seq<4>>, precision<double>>;
  aux_losses().gradient_scale = 1.0;
  training_step<P> st;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (auto& p : st.params()) p = u(g);
  for (auto& t : st.tokens()) t = static_cast<std::int32_t>(g() % M::vocab_size);
  for (auto& t : st.targets()) t = static_cast<std::int32_t>(g() % M::vocab_size);
  std::fill(st.grads().begin(), st.grads().end(), 0.0);
  (void)st.accumulate(1.0 / P::rows);
  const std::vector<double> analytic(st.grads().begin(), st.grads().end());
  auto total = [&] {
    aux_losses().take();
    std::fill(st.grads().begin(), st.grads().end(), 0.0);
    const double l = st.accumulate(1.0 / P::rows);  // records aux in backward
    return l + aux_losses().take().sum;
  };
  double worst = 0, ref = 0;
  auto params = st.params();
  for (std::size_t i = 0; i < P::param_count; ++i) {
    const double p0 = params[i];
    params[i] = p0 + 1e-5;
    const double up = total();
    params[i] = p0 - 1e-5;
    const double down = total();
    params[i] = p0;
    const double n = (up - down) / 2e-5;
    worst = std::max(worst, std::abs(n - analytic[i]));
    ref = std::max(ref, std::abs(n));
  }
  return worst / ref;
}

TEST_CASE("moe_gpt model gradient (cross-entropy + aux) against finite differences", "[model][moe][gradient]") {
  using M = moe_gpt<gpt_config<vocab<11>, context<4>, width<8>, heads<2>, depth<1>>, moe_mlp<8, 3, 2, 4, swiglu_experts, aux_loss_weight<1, 10>>>;
  const double e = model_gradient_error<M>();
  std::printf("moe_gpt model gradient: max |fd - analytic| / max|fd| = %.3g\n", e);
  CHECK(e < 1e-7);
}

TEST_CASE("moe_llama (Mixtral-style) model gradient against finite differences", "[model][moe][gradient]") {
  using M = moe_llama<llama_config<vocab<11>, context<4>, width<8>, heads<2>, kv_heads<1>, depth<1>>,
                      moe_mlp<8, 4, 2, 4, swiglu_experts, shared_expert<swiglu_mlp<8, 4>>, aux_loss_weight<1, 10>>>;
  STATIC_REQUIRE(language_model<M>);
  STATIC_REQUIRE(M::find_param("layers.0.mlp.experts.gate_up_proj") != npos_param);
  STATIC_REQUIRE(M::find_param("layers.0.mlp.shared_expert.gate_up.weight") != npos_param);
  const double e = model_gradient_error<M>();
  std::printf("moe_llama model gradient: max |fd - analytic| / max|fd| = %.3g\n", e);
  CHECK(e < 1e-7);
}

// ---- transformers' pooled form (pooled_aux_loss): one loss per micro-batch over all layers ----

TEST_CASE("pooled aux loss: moe_llama over 2 layers, gradient against finite differences", "[model][moe][gradient][aux]") {
  using M = moe_llama<llama_config<vocab<11>, context<4>, width<8>, heads<2>, kv_heads<1>, depth<2>>,
                      moe_mlp<8, 4, 2, 4, swiglu_experts, aux_loss_weight<1, 10>, pooled_aux_loss>>;
  STATIC_REQUIRE(M::moe_type::pooled_aux);
  const double e = model_gradient_error<M>();
  std::printf("pooled aux moe_llama model gradient: max |fd - analytic| / max|fd| = %.3g\n", e);
  CHECK(e < 1e-7);
  CHECK(aux_losses().pooled.layers.empty());  // every micro-batch's statistics dropped after its backward
}

namespace {
// The aux meter's totals after one forward and backward of fixed tokens with parameters drawn from seed 3.
template <class M>
aux_loss_meter::totals pooled_test_aux() {
  using P = plan<M, batch<micro<2>, seq<4>>, precision<double>>;
  training_step<P> st;
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (auto& p : st.params()) p = u(g);
  for (std::size_t i = 0; i < P::rows; ++i) st.tokens()[i] = static_cast<std::int32_t>((7 * i + 3) % 11), st.targets()[i] = 1;
  aux_losses().take();
  (void)st.accumulate(1.0 / P::rows);
  return aux_losses().take();
}
template <std::size_t Depth, class... O>
using pooled_test_model = moe_llama<llama_config<vocab<11>, context<4>, width<8>, heads<2>, kv_heads<1>, depth<Depth>>,
                                    moe_mlp<8, 4, 2, 4, swiglu_experts, O...>>;
}  // namespace

TEST_CASE("pooled aux loss: one value per micro-batch, equal to the per-layer form for one layer, not their sum for more",
          "[model][moe][aux]") {
  const auto one_pooled = pooled_test_aux<pooled_test_model<1, pooled_aux_loss>>();
  const auto one_layer = pooled_test_aux<pooled_test_model<1>>();
  CHECK(one_pooled.count == 1);
  CHECK(one_pooled.sum == Approx(one_layer.sum).epsilon(1e-12));  // L = 1: the same statistics
  const auto three_pooled = pooled_test_aux<pooled_test_model<3, pooled_aux_loss>>();
  const auto three_layers = pooled_test_aux<pooled_test_model<3>>();
  CHECK(three_pooled.count == 1);
  CHECK(three_layers.count == 3);
  // the pooled loss is about one layer's, not the sum of three (alpha E sum f P is near alpha for
  // balanced routing, between alpha and alpha E at worst)
  CHECK(three_pooled.sum < 0.6 * three_layers.sum);
}

namespace {
// Gradients and aux value of one micro-batch of plan P (parameters from seed 9).
template <class P>
std::pair<std::vector<float>, double> pooled_grads_of() {
  aux_losses().gradient_scale = 1.0;
  train_options o;
  o.seed = 9;
  training_step<P> st(o);
  for (std::size_t i = 0; i < P::rows; ++i)
    st.tokens()[i] = static_cast<std::int32_t>((5 * i + 1) % 11), st.targets()[i] = static_cast<std::int32_t>((3 * i) % 11);
  std::fill(st.grads().begin(), st.grads().end(), 0.0f);
  aux_losses().take();
  (void)st.accumulate(1.0f / P::rows);
  return {std::vector<float>(st.grads().begin(), st.grads().end()), aux_losses().take().sum};
}
}  // namespace

TEST_CASE("pooled aux loss under recompute<full>: re-run forwards leave value and gradients bit-identical",
          "[model][moe][aux][recompute]") {
  using M = pooled_test_model<3, pooled_aux_loss>;
  using plain = plan<M, batch<micro<2>, seq<4>>, strategy<mesh<axis<"dp">>, recompute<none>>>;
  using recomputed_plan = plan<M, batch<micro<2>, seq<4>>, strategy<mesh<axis<"dp">>, recompute<full>>>;
  STATIC_REQUIRE(recomputed_plan::kept_count < plain::kept_count);  // the blocks' forwards really re-run
  const auto a = pooled_grads_of<plain>();
  const auto b = pooled_grads_of<recomputed_plan>();
  CHECK(a.second > 0);
  CHECK(a.second == b.second);
  CHECK(a.first == b.first);
  CHECK(aux_losses().pooled.layers.empty());
}

TEST_CASE("pooled aux loss: a second forward before any backward (interleaved micro-batches) is refused",
          "[model][moe][aux]") {
  pooled_routing pr;
  pr.set(0, {1, 1}, {0.5, 0.5}, 1, 2);
  pr.set(7, {2, 0}, {0.7, 0.3}, 1, 2);
  CHECK_THROWS_WITH(pr.set(0, {0, 2}, {0.2, 0.8}, 1, 2), Catch::Contains("drop pooled_aux_loss under pipeline parallelism"));
  pr.finish(7);                                          // a backward ran: what follows is a recomputed forward
  CHECK_NOTHROW(pr.set(0, {1, 1}, {0.5, 0.5}, 1, 2));
  const auto t = pr.pooled();
  CHECK(t.counts == std::vector<double>{3, 1});
  CHECK(t.rows == 2);
  pr.finish(0);
  CHECK(pr.layers.empty());                              // the micro-batch is over
  pr.set(3, {1, 1}, {0.5, 0.5}, 1, 2);
  pr.clear();
  CHECK(pr.layers.empty());
}

TEST_CASE("moe_gpt trains on one process: the loss falls, thread count does not matter", "[model][moe][train]") {
  using P = plan<tiny_moe, batch<micro<2>, seq<8>>, precision<double>>;
  auto run = [] {
    train_options o;
    o.optimizer.lr = 3e-2f;
    training_step<P> st(o);
    // a periodic sequence: learnable from context
    auto fill = [](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>((i * 3) % 13);
        targets[i] = static_cast<std::int32_t>((i * 3 + 3) % 13);
      }
    };
    std::vector<double> losses;
    for (int s = 0; s < 40; ++s) losses.push_back(st.step(fill).loss);
    return losses;
  };
#if defined(_OPENMP)
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  const auto a = run();
  std::printf("moe_gpt training: loss %.4f -> %.4f\n", a.front(), a.back());
  CHECK(a.back() < 0.5 * a.front());
#if defined(_OPENMP)
  omp_set_num_threads(2);
#endif
  const auto b = run();
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#endif
  CHECK(a == b);  // deterministic, with 1 and 2 threads
}

// ---- expert parallelism in a world of one (mpirun tests: tests/mpi/ep_*equivalence.cpp) ----
TEST_CASE("single_world all_to_all and all_to_all_v copy their one block", "[comm][moe]") {
  single_world w;
  STATIC_REQUIRE(all_to_all_communicator<single_world>);
  const std::vector<double> in{1, 2, 3, 4};
  std::vector<double> out(4, 0.0);
  w.all_to_all(in, out);
  CHECK(out == in);
  std::vector<double> part(5, -1.0);
  const int counts[1] = {3};
  w.all_to_all_v(in, std::span<const int>(counts), part, std::span<const int>(counts));
  CHECK(part == std::vector<double>{1, 2, 3, -1, -1});
}

TEST_CASE("ep_moe_mlp with ep 1 trains exactly like moe_mlp", "[model][moe][ep]") {
  using cfg = gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>;
  using moe = moe_mlp<8, 4, 2, 6, swiglu_experts, shared_expert<swiglu_mlp<8, 5>>>;
  using P = plan<moe_gpt<cfg, moe>, batch<micro<2>, seq<8>>, precision<double>>;
  using PE = plan<moe_gpt<cfg, ep_moe_mlp<moe, 1>>, batch<micro<2>, seq<8>>, precision<double>>;
  STATIC_REQUIRE(P::param_count == PE::param_count);
  // with ep 2 a rank holds half of the experts
  using PE2 = plan<moe_gpt<cfg, ep_moe_mlp<moe, 2>>, batch<micro<2>, seq<8>>, precision<double>>;
  STATIC_REQUIRE(PE2::param_count == P::param_count - 2 * 2 * (2 * 6 * 8 + 8 * 6));
  training_step<P> a;
  training_step<PE> b;
  REQUIRE(a.parameter_infos().size() == b.parameter_infos().size());
  for (std::size_t i = 0; i < a.parameter_infos().size(); ++i) CHECK(a.parameter_infos()[i].name == b.parameter_infos()[i].name);
  std::copy(a.params().begin(), a.params().end(), b.params().begin());  // same names: same values anyway
  single_world w;
  expert_group_adapter<single_world> g(w);
  auto fill = [](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<std::int32_t>((i * 5) % 13), tgt[i] = static_cast<std::int32_t>((i * 5 + 1) % 13);
  };
  bind_expert_group bound(g);
  for (int s = 0; s < 3; ++s) {
    const auto ma = a.step(fill);
    const auto mb = b.step(fill);
    CHECK(ma.loss == mb.loss);
    CHECK(ma.grad_norm == mb.grad_norm);
  }
  CHECK(std::equal(a.params().begin(), a.params().end(), b.params().begin()));
}

TEST_CASE("ep_moe_mlp without a bound expert group throws", "[model][moe][ep]") {
  using M = moe_gpt<gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<1>>, ep_moe_mlp<moe_mlp<8, 4, 2, 6>, 2>>;
  training_step<plan<M, batch<micro<1>, seq<4>>, precision<double>>> st;
  for (auto& t : st.tokens()) t = 0;
  CHECK_THROWS_AS(st.forward(), std::logic_error);
}

TEST_CASE("expert_parallel_step in a world of one trains like training_step (f32)", "[model][moe][ep]") {
  using cfg = llama_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>;
  using moe = moe_mlp<8, 4, 2, 8, swiglu_experts>;
  using P = plan<moe_llama<cfg, moe>, batch<micro<2>, seq<8>>>;
  using PE = plan<moe_llama<cfg, ep_moe_mlp<moe, 1>>, batch<micro<2>, seq<8>>>;
  STATIC_REQUIRE(std::is_same_v<P::value_type, float>);
  train_options o;
  o.grad_accum = 2;
  training_step<P> a(o);
  single_world w;
  expert_parallel_step<PE, single_world> b(w, 1, o);
  CHECK(std::equal(a.params().begin(), a.params().end(), b.local().params().begin()));  // same initialisation
  auto fill = [n = 0](auto tok, auto tgt) mutable {
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<std::int32_t>((i * 5 + static_cast<std::size_t>(n)) % 13), tgt[i] = static_cast<std::int32_t>((i * 5 + 1) % 13);
    ++n;
  };
  auto fill_b = fill;
  aux_losses().gradient_scale = 0.5;  // training_step: each of the 2 micro-batches weighs 1/2
  for (int s = 0; s < 3; ++s) {
    const auto ma = a.step(fill);
    const auto mb = b.step(fill_b);
    CHECK(ma.loss == Approx(mb.loss).epsilon(1e-6));
    CHECK(ma.grad_norm == Approx(mb.grad_norm).epsilon(1e-5));
  }
  aux_losses().gradient_scale = 1.0;
}

TEST_CASE("expert_parallel_local in a group of one is data_parallel_step's local step, like training_step (f64)",
          "[model][moe][ep]") {
  // The wrapper distributed_step puts around the local step of an expert_parallel<> plan, here on
  // a world of one under ZeRO-1: the same initialisation, losses and norms as training_step.
  using cfg = gpt_config<vocab<13>, context<8>, width<8>, heads<2>, depth<2>>;
  using moe = moe_mlp<8, 4, 2, 6, shared_expert<swiglu_mlp<8, 4>>, aux_loss_weight<1, 10>>;
  using P = plan<moe_gpt<cfg, moe>, batch<micro<2>, seq<8>>, precision<double>>;
  using PE = plan<moe_gpt<cfg, ep_moe_mlp<moe, 1>>, batch<micro<2>, seq<8>>, precision<double>>;
  using local = expert_parallel_local<training_step<zero_local_plan_t<PE, 1>>, single_world>;
  train_options o;
  o.grad_accum = 2;
  training_step<P> a(o);
  single_world w, g;
  data_parallel_step<PE, single_world, 1, local> b(w, local(g, training_step<zero_local_plan_t<PE, 1>>(o)));
  CHECK(std::equal(a.params().begin(), a.params().end(), b.local().params().begin()));
  CHECK(b.local().norm_skipped().empty());  // expert rank 0 counts the dense parameters
  auto fill = [n = 0](auto tok, auto tgt) mutable {
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<std::int32_t>((i * 5 + static_cast<std::size_t>(n)) % 13), tgt[i] = static_cast<std::int32_t>((i * 3 + 1 + static_cast<std::size_t>(n)) % 13);
    ++n;
  };
  auto fill_b = fill;
  for (int s = 0; s < 3; ++s) {
    aux_losses().gradient_scale = 0.5;  // training_step: each of the 2 micro-batches weighs 1/2
    const auto ma = a.step(fill);
    aux_losses().gradient_scale = 7.0;  // the wrapper sets its own weight, and restores this one
    const auto mb = b.step(fill_b);
    CHECK(aux_losses().gradient_scale == 7.0);
    CHECK(ma.loss == Approx(mb.loss).epsilon(1e-12));
    CHECK(ma.grad_norm == Approx(mb.grad_norm).epsilon(1e-12));
  }
  aux_losses().gradient_scale = 1.0;
  for (std::size_t i = 0; i < a.params().size(); ++i) CHECK(a.params()[i] == Approx(b.local().params()[i]).epsilon(1e-12));
}
