// One way to make a step, for one process or many: make_training_step<Plan>(world) over a world
// of one process (single_world) runs the same arithmetic as the single-rank training_step, bit
// for bit, and takes a batch source directly.
#include <catch2/catch.hpp>

#include <weft/comm/single.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/weft.hpp>

#include <vector>

using namespace weft;

namespace {
using model = gpt<gpt_config<vocab<256>, context<16>, width<32>, heads<4>, depth<2>>>;  // byte-level text: ids < 256
using plain_plan = plan<model, batch<micro<2>, seq<16>>>;
template <std::size_t Zero>
using dp_plan = plan<model, batch<micro<2>, seq<16>>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>>;

text_corpus make_corpus() {
  text_corpus c{text_options{}};
  for (int i = 0; i < 50; ++i) c.add_text("one way to make a step, for one process or many. ");
  return c;
}

train_options options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_accum = 2;
  o.schedule = {2, 6, 0.1f};
  return o;
}

template <class Plan>
std::vector<double> losses_through_entry_point(std::size_t steps) {
  const text_corpus corpus = make_corpus();
  // example-begin entry-point
  batch_sampler<Plan::B, Plan::S> sampler(token_view(corpus), /*seed=*/7);
  single_world world;                                   // or mpi::world(argc, argv) under mpirun
  auto step = make_training_step<Plan>(world, options());
  std::vector<double> out;
  for (std::size_t s = 0; s < steps; ++s) out.push_back(step(sampler).loss);  // a batch source, directly
  // example-end entry-point
  static_assert(batch_source<decltype(sampler), Plan::B * Plan::S>);
  return out;
}
}  // namespace

TEST_CASE("make_training_step on one process equals training_step bit for bit", "[train][entry]") {
  const text_corpus corpus = make_corpus();
  batch_sampler<plain_plan::B, plain_plan::S> sampler(token_view(corpus), 7);
  training_step<plain_plan> reference(options());
  std::vector<double> expected;
  for (int s = 0; s < 6; ++s)
    expected.push_back(reference.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); }).loss);

  const auto plain = losses_through_entry_point<plain_plan>(6);
  const auto zero1 = losses_through_entry_point<dp_plan<1>>(6);
  const auto zero3 = losses_through_entry_point<dp_plan<3>>(6);
  REQUIRE(plain.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(plain[i] == expected[i]);
    CHECK(zero1[i] == expected[i]);
    CHECK(zero3[i] == expected[i]);
  }
  CHECK(expected.back() < expected.front());  // it trains
}

TEST_CASE("training_step reads a batch source directly, as a fill callable would", "[train][entry]") {
  const text_corpus corpus = make_corpus();
  batch_sampler<plain_plan::B, plain_plan::S> by_source(token_view(corpus), 11), by_fill(token_view(corpus), 11);
  training_step<plain_plan> a(options()), b(options());
  for (int s = 0; s < 3; ++s) {
    const double la = a.step(by_source).loss;
    const double lb = b.step([&](auto tok, auto tgt) { by_fill.next(tok, tgt); }).loss;
    CHECK(la == lb);
  }
  CHECK(a.evaluate(by_source, 2) == b.evaluate([&](auto tok, auto tgt) { by_fill.next(tok, tgt); }, 2));
}
