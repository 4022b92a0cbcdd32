// AdamW: one step against the formulas written out, bias correction at t = 1, weight decay
// on and off, several steps, float vs double.
#include "weft/ops/adamw.hpp"  // adamw_step

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace weft::ops;

namespace {
struct hyper {
  float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f;
};

// One step for one value, straight from the definition (decoupled decay).
void reference_step(double& p, double g, double& m, double& v, const hyper& h, int t) {
  const double b1 = h.beta1, b2 = h.beta2;
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  const double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
  p = p - double(h.lr) * (mhat / (std::sqrt(vhat) + double(h.eps)) + double(h.wd) * p);
}
}  // namespace

TEST_CASE("adamw first step: bias correction makes the update lr * sign(g) plus decay", "[ops][adamw]") {
  // At t = 1 with m = v = 0: mhat = g, vhat = g^2, so the step is lr * g / (|g| + eps).
  hyper h;
  std::vector<double> p = {0.5, -1.25, 2.0, 0.0}, g = {0.3, -0.02, 4.0, -1e-3}, m(4, 0.0), v(4, 0.0);
  const auto p0 = p;
  adamw_step(weft::host_context{}, p.data(), g.data(), m.data(), v.data(), p.size(), h.lr, h.beta1, h.beta2, h.eps, h.wd, 1);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double expect = p0[i] - double(h.lr) * (g[i] / (std::abs(g[i]) + double(h.eps)) + double(h.wd) * p0[i]);
    CHECK(p[i] == Approx(expect).epsilon(1e-12));
    CHECK(m[i] == Approx((1 - double(h.beta1)) * g[i]).epsilon(1e-12));
    CHECK(v[i] == Approx((1 - double(h.beta2)) * g[i] * g[i]).epsilon(1e-12));
  }
}

TEST_CASE("adamw matches the formula over several steps, with and without weight decay", "[ops][adamw]") {
  for (float wd : {0.0f, 0.1f}) {
    INFO("weight_decay " << wd);
    hyper h;
    h.wd = wd;
    std::vector<double> p = {0.5, -1.25, 2.0, 0.75}, m(4, 0.0), v(4, 0.0);
    auto rp = p, rm = m, rv = v;
    for (int t = 1; t <= 5; ++t) {
      std::vector<double> g = {0.3 / t, -0.02 * t, 4.0, -1e-3 * t};
      adamw_step(weft::host_context{}, p.data(), g.data(), m.data(), v.data(), p.size(), h.lr, h.beta1, h.beta2, h.eps, h.wd, t);
      for (std::size_t i = 0; i < p.size(); ++i) reference_step(rp[i], g[i], rm[i], rv[i], h, t);
    }
    for (std::size_t i = 0; i < p.size(); ++i) {
      CHECK(p[i] == Approx(rp[i]).epsilon(1e-12));
      CHECK(m[i] == Approx(rm[i]).epsilon(1e-12));
      CHECK(v[i] == Approx(rv[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("adamw weight decay shrinks parameters, decoupled from the gradient", "[ops][adamw]") {
  // Zero gradient: Adam's part is 0, so only the decay acts: p *= (1 - lr * wd).
  hyper h;
  std::vector<double> p = {1.0, -2.0}, g = {0.0, 0.0}, m(2, 0.0), v(2, 0.0);
  adamw_step(weft::host_context{}, p.data(), g.data(), m.data(), v.data(), 2, h.lr, h.beta1, h.beta2, h.eps, h.wd, 1);
  CHECK(p[0] == Approx(1.0 * (1 - double(h.lr) * double(h.wd))).epsilon(1e-12));
  CHECK(p[1] == Approx(-2.0 * (1 - double(h.lr) * double(h.wd))).epsilon(1e-12));
  adamw_step(weft::host_context{}, p.data(), g.data(), m.data(), v.data(), 2, h.lr, h.beta1, h.beta2, h.eps, 0.0f, 2);
  CHECK(p[0] == Approx(1.0 * (1 - double(h.lr) * double(h.wd))).epsilon(1e-12));  // wd = 0: unchanged
}

TEST_CASE("adamw in float, threaded, agrees with double", "[ops][adamw]") {
  constexpr std::size_t n = 50000;  // above the threading threshold
  hyper h;
  std::vector<double> p(n), g(n), m(n, 0.0), v(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = std::sin(double(i));
    g[i] = std::cos(double(i) * 0.7);
  }
  std::vector<float> pf(p.begin(), p.end()), gf(g.begin(), g.end()), mf(n, 0.f), vf(n, 0.f);
  for (int t = 1; t <= 3; ++t) {
    adamw_step(weft::host_context{}, p.data(), g.data(), m.data(), v.data(), n, h.lr, h.beta1, h.beta2, h.eps, h.wd, t);
    adamw_step(weft::host_context{}, pf.data(), gf.data(), mf.data(), vf.data(), n, h.lr, h.beta1, h.beta2, h.eps, h.wd, t);
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(pf[i]) - p[i]));
  CHECK(worst < 1e-5);
}
