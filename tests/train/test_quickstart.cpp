// The code shown in docs/00_quickstart.md, compiled and run: a model as a type, its plan,
// and a few training steps whose loss must fall.
#include <catch2/catch.hpp>

// example-begin quickstart
#include <weft/weft.hpp>
using namespace weft;

// A GPT-2-style model as a type: every dimension is known to the compiler.
using model = gpt<gpt_config<vocab<256>, context<32>, width<32>, heads<4>, depth<2>>>;
// The plan of one rank: micro-batches of 4 sequences of 32 tokens, in f32.
using plan_t = plan<model, batch<micro<4>, seq<32>>>;
static_assert(plan_t::bytes_per_rank <= 64_MiB);  // memory is known before launch

double train_a_little(std::size_t steps) {
  text_corpus corpus{text_options{}};
  for (int i = 0; i < 100; ++i) corpus.add_text("weft turns types into a training step. ");
  batch_sampler<plan_t::B, plan_t::S> sampler(token_view(corpus), /*seed=*/1);

  train_options options;
  options.optimizer.lr = 3e-3f;
  training_step<plan_t> step(options);  // allocates the plan's arena once
  double loss = 0;
  for (std::size_t i = 0; i < steps; ++i)
    loss = step.step([&](auto tokens, auto targets) { sampler.next(tokens, targets); }).loss;
  return loss;
}
// example-end quickstart

TEST_CASE("the quickstart trains", "[docs][train]") {
  const double early = train_a_little(1);
  const double later = train_a_little(40);
  CHECK(later < early - 1.0);
}
