// The ops composed into a small training step (embedding -> layernorm -> linear -> gelu ->
// linear -> residual -> layernorm -> lm head -> cross-entropy -> AdamW): the gradients of the
// whole chain against finite differences in double, and the loss going down in float. The
// usage block is the snippet in docs/ops.md.
#include "weft/ops/adamw.hpp"          // adamw_step
#include "weft/ops/cross_entropy.hpp"  // softmax_cross_entropy_forward_backward
#include "weft/ops/embedding.hpp"      // embedding_forward/backward
#include "weft/ops/gelu.hpp"           // gelu_forward/backward
#include "weft/ops/layernorm.hpp"      // layernorm_forward/backward
#include "weft/ops/matmul.hpp"         // matmul_forward/backward
#include "weft/ops/residual.hpp"       // residual_forward/backward

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ops_test_util.hpp"

namespace {

constexpr std::size_t N = 6, V = 11, C = 8, F = 4 * C;  // rows, vocabulary, width, mlp hidden

// Parameters and their gradients, as flat vectors in one struct so a test can perturb any.
template <class T>
struct tiny_model {
  std::vector<T> wte, ln_w, ln_b, fc_w, fc_b, proj_w, proj_b, lnf_w, lnf_b, head_w;
  static tiny_model make(unsigned seed) {
    using weft::ops::test::random_vector;
    auto v = [&](std::size_t n, unsigned s, double lo, double hi) {
      auto d = random_vector(n, seed + s, lo, hi);
      return std::vector<T>(d.begin(), d.end());
    };
    return {v(V * C, 1, -1, 1),  v(C, 2, 0.8, 1.2), v(C, 3, -0.1, 0.1), v(F * C, 4, -0.4, 0.4),
            v(F, 5, -0.1, 0.1), v(C * F, 6, -0.2, 0.2), v(C, 7, -0.1, 0.1), v(C, 8, 0.8, 1.2),
            v(C, 9, -0.1, 0.1), v(V * C, 10, -0.4, 0.4)};
  }
  static tiny_model zeros() {
    auto z = [](std::size_t n) { return std::vector<T>(n, T(0)); };
    return {z(V * C), z(C), z(C), z(F * C), z(F), z(C * F), z(C), z(C), z(C), z(V * C)};
  }
  std::vector<std::vector<T>*> all() {
    return {&wte, &ln_w, &ln_b, &fc_w, &fc_b, &proj_w, &proj_b, &lnf_w, &lnf_b, &head_w};
  }
};

// example-begin ops-usage
// One training step of a one-block MLP language model, written directly with weft::ops.
// Forward overwrites outputs; every backward accumulates (+=), so the caller zeroes grads.
template <class T>
T train_step(tiny_model<T>& p, tiny_model<T>& g, const std::int32_t* tokens, const std::int32_t* targets) {
  using namespace weft::ops;
  const weft::host_context ctx;  // where the ops run: the host backend
  std::vector<T> x(N * C), h(N * C), mean(N), rstd(N), fc(N * F), act(N * F), proj(N * C), res(N * C),
      y(N * C), mean_f(N), rstd_f(N), logits(N * V), losses(N);                       // activations
  std::vector<T> dx(N * C, T(0)), dh(N * C, T(0)), dfc(N * F, T(0)), dact(N * F, T(0)),
      dproj(N * C, T(0)), dres(N * C, T(0)), dy(N * C, T(0));                          // their grads

  embedding_forward<N, V, C>(ctx, x.data(), tokens, p.wte.data());                          // (N, C)
  layernorm_forward<N, C>(ctx, h.data(), mean.data(), rstd.data(), x.data(), p.ln_w.data(), p.ln_b.data());
  matmul_forward<N, C, F>(ctx, fc.data(), h.data(), p.fc_w.data(), p.fc_b.data());          // (N, F)
  gelu_forward<N * F>(ctx, act.data(), fc.data());
  matmul_forward<N, F, C>(ctx, proj.data(), act.data(), p.proj_w.data(), p.proj_b.data());  // (N, C)
  residual_forward<N * C>(ctx, res.data(), x.data(), proj.data());
  layernorm_forward<N, C>(ctx, y.data(), mean_f.data(), rstd_f.data(), res.data(), p.lnf_w.data(), p.lnf_b.data());
  matmul_forward<N, C, V>(ctx, logits.data(), y.data(), p.head_w.data(), nullptr);          // (N, V), no bias

  // logits become dlogits in place; dloss = 1 / N averages the loss over the rows.
  softmax_cross_entropy_forward_backward<N, V>(ctx, losses.data(), logits.data(), targets, T(1) / T(N));

  matmul_backward<N, C, V>(ctx, dy.data(), g.head_w.data(), nullptr, logits.data(), y.data(), p.head_w.data());
  layernorm_backward<N, C>(ctx, dres.data(), g.lnf_w.data(), g.lnf_b.data(), dy.data(), res.data(),
                           p.lnf_w.data(), mean_f.data(), rstd_f.data());
  residual_backward<N * C>(ctx, dx.data(), dproj.data(), dres.data());
  matmul_backward<N, F, C>(ctx, dact.data(), g.proj_w.data(), g.proj_b.data(), dproj.data(), act.data(),
                           p.proj_w.data());
  gelu_backward<N * F>(ctx, dfc.data(), fc.data(), dact.data());
  matmul_backward<N, C, F>(ctx, dh.data(), g.fc_w.data(), g.fc_b.data(), dfc.data(), h.data(), p.fc_w.data());
  layernorm_backward<N, C>(ctx, dx.data(), g.ln_w.data(), g.ln_b.data(), dh.data(), x.data(), p.ln_w.data(),
                           mean.data(), rstd.data());
  embedding_backward<N, V, C>(ctx, g.wte.data(), dx.data(), tokens);

  T loss = 0;
  for (T l : losses) loss += l / T(N);
  return loss;
}
// example-end ops-usage

const std::vector<std::int32_t> tokens = {1, 4, 4, 9, 0, 7}, targets = {4, 4, 9, 0, 7, 2};

}  // namespace

TEST_CASE("the composed step's gradients match finite differences of its loss", "[ops][usage]") {
  auto params = tiny_model<double>::make(100);
  auto grads = tiny_model<double>::zeros();
  train_step(params, grads, tokens.data(), targets.data());
  auto scratch = tiny_model<double>::zeros();
  auto loss = [&] { return train_step(params, scratch, tokens.data(), targets.data()); };
  auto p = params.all();
  auto g = grads.all();
  for (std::size_t k = 0; k < p.size(); ++k) {
    INFO("parameter " << k);
    CHECK(weft::ops::test::rel_err(*g[k], weft::ops::test::fd_gradient(*p[k], loss)) < 1e-6);
  }
}

TEST_CASE("AdamW steps on the composed model lower the loss in float", "[ops][usage]") {
  auto params = tiny_model<float>::make(200);
  auto m = tiny_model<float>::zeros(), v = tiny_model<float>::zeros();
  float first = 0, last = 0;
  for (int t = 1; t <= 30; ++t) {
    auto grads = tiny_model<float>::zeros();
    const float loss = train_step(params, grads, tokens.data(), targets.data());
    if (t == 1) first = loss;
    last = loss;
    auto p = params.all(), g = grads.all(), mm = m.all(), vv = v.all();
    for (std::size_t k = 0; k < p.size(); ++k)
      weft::ops::adamw_step(weft::host_context{}, p[k]->data(), g[k]->data(), mm[k]->data(), vv[k]->data(), p[k]->size(), 1e-2f, 0.9f,
                                                  0.95f, 1e-8f, 0.0f, t);
  }
  CHECK(last < 0.5f * first);
}
