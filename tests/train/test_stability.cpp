// Stability guards of one process: a non-finite step (injected through train_options::fault)
// and a step the `accept` predicate rejects both leave parameters, moments and the step count
// untouched, and training then continues exactly as a run that never saw that batch. The
// spike_guard's decisions (warm-up, skip, rollback after K consecutive spikes), and the
// preemption flag that SIGTERM/SIGINT set. The same under mpirun: tests/mpi/stability.cpp.
#include <catch2/catch.hpp>

#include <weft/comm/single.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/train/preemption.hpp>
#include <weft/train/stability.hpp>
#include <weft/weft.hpp>

#include <cmath>
#include <csignal>
#include <limits>
#include <vector>

using namespace weft;

namespace {
using model = gpt<gpt_config<vocab<256>, context<16>, width<32>, heads<4>, depth<2>>>;
using plain_plan = plan<model, batch<micro<2>, seq<16>>>;
template <std::size_t Zero>
using dp_plan = plan<model, batch<micro<2>, seq<16>>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>>;

text_corpus make_corpus() {
  text_corpus c{text_options{}};
  for (int i = 0; i < 50; ++i) c.add_text("a step that is not finite changes nothing at all. ");
  return c;
}

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_accum = 2;
  o.schedule = {2, 8, 0.1f};
  return o;
}

constexpr double poison = std::numeric_limits<double>::quiet_NaN();

// Runs `calls` steps of a fresh step object; the call `bad` is poisoned by `factor` (train_options
// ::fault). Returns the metrics and the final parameters.
template <class S>
std::vector<float> params_of(S& step) {
  if constexpr (requires { step.inner(); }) {
    const auto p = step.inner().parameters();  // ZeRO-3 keeps the current values in the shards
    return {p.begin(), p.end()};
  } else {
    return {step.params().begin(), step.params().end()};
  }
}

template <class Make>
std::pair<std::vector<step_metrics>, std::vector<float>> run(Make make, std::size_t calls, std::size_t bad, double factor) {
  const text_corpus corpus = make_corpus();
  batch_sampler<2, 16> sampler(token_view(corpus), 7);
  train_options o = options();
  o.fault = [=](std::size_t call) { return call == bad ? factor : 1.0; };
  auto step = make(o);
  std::vector<step_metrics> ms;
  for (std::size_t c = 0; c < calls; ++c) ms.push_back(step->step([&](auto tok, auto tgt) { sampler.next(tok, tgt); }));
  return {ms, params_of(*step)};
}

// The reference: the same data with the batches of step `bad` drawn and thrown away.
std::pair<std::vector<double>, std::vector<float>> run_without(std::size_t calls, std::size_t bad) {
  const text_corpus corpus = make_corpus();
  batch_sampler<2, 16> sampler(token_view(corpus), 7);
  training_step<plain_plan> step(options());
  std::vector<double> losses;
  for (std::size_t c = 0; c < calls; ++c) {
    if (c == bad) {
      for (std::size_t i = 0; i < options().grad_accum; ++i) sampler.next(step.tokens(), step.targets());
      continue;
    }
    losses.push_back(step.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); }).loss);
  }
  return {losses, std::vector<float>(step.params().begin(), step.params().end())};
}
}  // namespace

TEST_CASE("a non-finite gradient skips the update; training continues as without that batch", "[train][stability]") {
  // example-begin fault-injection
  train_options o;
  o.fault = [](std::size_t call) { return call == 2 ? std::numeric_limits<double>::quiet_NaN() : 1.0; };
  // example-end fault-injection
  CHECK(std::isnan(o.fault(2)));
  const std::size_t calls = 6, bad = 2;
  auto [ms, params] = run(
      [](train_options o) { return std::make_unique<training_step<plain_plan>>(o); }, calls, bad, poison);
  const auto [ref_losses, ref_params] = run_without(calls, bad);

  REQUIRE(ms[bad].skipped);
  REQUIRE(ms[bad].nonfinite);
  CHECK(ms[bad].step == bad);  // the step count did not advance
  CHECK(ms[bad].skipped_total == 1);
  CHECK(ms.back().skipped_total == 1);
  CHECK(ms.back().step == calls - 1);
  for (std::size_t c = 0; c < calls; ++c)
    if (c != bad) CHECK_FALSE(ms[c].skipped);
  // The learning rate of the skipped step is the one the retry uses.
  CHECK(ms[bad].lr == ms[bad + 1].lr);
  // Bit for bit: same losses on the accepted steps, same parameters at the end.
  std::vector<double> losses;
  for (std::size_t c = 0; c < calls; ++c)
    if (c != bad) losses.push_back(ms[c].loss);
  CHECK(losses == ref_losses);
  CHECK(params == ref_params);
}

TEST_CASE("a skipped step leaves parameters, moments and the step count alone", "[train][stability]") {
  const text_corpus corpus = make_corpus();
  batch_sampler<2, 16> sampler(token_view(corpus), 7);
  training_step<plain_plan> step(options());
  auto fill = [&](auto tok, auto tgt) { sampler.next(tok, tgt); };
  step.step(fill);
  const std::vector<float> p(step.params().begin(), step.params().end());
  const std::vector<float> m(step.adam_m().begin(), step.adam_m().end());
  const std::vector<float> v(step.adam_v().begin(), step.adam_v().end());
  // A finite step rejected by its predicate: skipped, not non-finite.
  double seen_loss = 0, seen_norm = 0;
  const step_metrics r = step.step(fill, [&](double loss, double norm) {
    seen_loss = loss;
    seen_norm = norm;
    return false;
  });
  CHECK(r.skipped);
  CHECK_FALSE(r.nonfinite);
  CHECK(seen_loss == r.loss);
  CHECK(seen_norm == r.grad_norm);
  CHECK(step.step_count() == 1);
  CHECK(step.skipped_steps() == 1);
  CHECK(std::vector<float>(step.params().begin(), step.params().end()) == p);
  CHECK(std::vector<float>(step.adam_m().begin(), step.adam_m().end()) == m);
  CHECK(std::vector<float>(step.adam_v().begin(), step.adam_v().end()) == v);
}

TEST_CASE("data-parallel steps (ZeRO 0, 1, 3) skip a non-finite step like training_step", "[train][stability]") {
  const std::size_t calls = 6, bad = 3;
  const auto [ref_losses, ref_params] = run_without(calls, bad);
  auto check = [&](auto tag) {
    using P = typename decltype(tag)::type;
    single_world world;
    auto [ms, params] = run([&](train_options o) { return std::make_unique<distributed_step<P, single_world>>(world, o); },
                                 calls, bad, poison);
    REQUIRE(ms[bad].skipped);
    REQUIRE(ms[bad].nonfinite);
    CHECK(ms.back().step == calls - 1);
    CHECK(ms.back().skipped_total == 1);
    std::vector<double> losses;
    for (std::size_t c = 0; c < calls; ++c)
      if (c != bad) losses.push_back(ms[c].loss);
    CHECK(losses == ref_losses);
    CHECK(params == ref_params);
  };
  check(std::type_identity<dp_plan<0>>{});
  check(std::type_identity<dp_plan<1>>{});
  check(std::type_identity<dp_plan<3>>{});
}

TEST_CASE("spike_guard: warm-up, skip, rollback after consecutive spikes", "[train][stability]") {
  spike_guard g({.window = 8, .warmup = 4, .threshold = 4.0, .rollback_after = 3});
  // Warm-up (4 steps), then steps within the threshold: accepted, and they join the window.
  const double losses[] = {3.0, 2.9, 3.1, 3.0, 2.95, 3.05};
  for (double l : losses) CHECK(g.check(l, 1.0 + (l - 3.0)) == spike_decision::accept);
  CHECK(g.spikes() == 0);
  // A loss far above the window is a spike; so is a gradient-norm jump alone.
  CHECK(g.check(9.0, 1.0) == spike_decision::skip);
  CHECK(g.loss_z() > 4.0);
  CHECK(g.check(3.0, 50.0) == spike_decision::skip);
  CHECK(g.consecutive() == 2);
  // The third in a row asks for a rollback, and the count starts again.
  CHECK(g.check(9.0, 50.0) == spike_decision::rollback);
  CHECK(g.consecutive() == 0);
  CHECK(g.rollbacks() == 1);
  CHECK(g.spikes() == 3);
  // A normal step after a spike resets the run; a drop is never a spike.
  CHECK(g.check(9.0, 1.0) == spike_decision::skip);
  CHECK(g.check(3.0, 1.0) == spike_decision::accept);
  CHECK(g.consecutive() == 0);
  CHECK(g.check(0.5, 0.01) == spike_decision::accept);
  // As a predicate for step(fill, accept).
  CHECK_FALSE(g(100.0, 1.0));
  CHECK(g.last() == spike_decision::skip);
}

TEST_CASE("spike_guard as a step's accept predicate skips an injected spike", "[train][stability]") {
  const text_corpus corpus = make_corpus();
  batch_sampler<2, 16> sampler(token_view(corpus), 7);
  train_options o = options();
  o.fault = [](std::size_t call) { return call == 6 ? 1e3 : 1.0; };  // loss and gradients x1000
  training_step<plain_plan> step(o);
  std::size_t skipped_at = 99;
  // example-begin spike-guard
  spike_guard guard({.window = 10, .warmup = 4, .threshold = 6.0, .rollback_after = 0});
  for (std::size_t c = 0; c < 8; ++c) {
    const step_metrics m = step.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); }, guard);
    if (m.skipped) skipped_at = c;  // m.nonfinite: NaN/inf; otherwise the guard said skip
  }
  // example-end spike-guard
  CHECK(skipped_at == 6);
  CHECK(guard.spikes() == 1);
  CHECK(step.step_count() == 7);
}

TEST_CASE("preemption: SIGTERM, SIGINT and SIGUSR1 set a flag that the ranks agree on", "[train][preemption]") {
  preemption::clear();
  preemption::install();
  CHECK_FALSE(preemption::requested());
  single_world world;
  CHECK_FALSE(preemption::agreed(world));
  std::raise(SIGTERM);  // caught: the process goes on
  CHECK(preemption::requested());
  CHECK(preemption::signal() == SIGTERM);
  CHECK(preemption::agreed(world));
  preemption::clear();
  preemption::install();
  std::raise(SIGINT);
  CHECK(preemption::signal() == SIGINT);
  preemption::clear();
  preemption::install();
  std::raise(SIGUSR1);  // what mpirun forwards to every rank (tools/weft-mpirun sends it)
  CHECK(preemption::signal() == SIGUSR1);
  CHECK(preemption::agreed(world));
  preemption::clear();
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
}
