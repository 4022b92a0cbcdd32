// The code shown in docs/00_quickstart.md, compiled and run: a model as a type, its plan,
// and a few training steps whose loss must fall; and the options of docs/training.md.
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

TEST_CASE("the train_options of docs/training.md", "[docs][train]") {
  text_corpus corpus{text_options{}};
  for (int i = 0; i < 100; ++i) corpus.add_text("weft turns types into a training step. ");
  batch_sampler<plan_t::B, plan_t::S> sampler(token_view(corpus), /*seed=*/1);

  // example-begin training-options
  train_options o;
  o.optimizer = {.lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
  o.schedule = {.warmup = 100, .total = 5000, .min_ratio = 0.1f};  // linear warm-up, cosine to 10%
  o.grad_clip = 1.0f;      // global L2 norm; <= 0 disables
  o.grad_accum = 4;        // micro-batches per optimizer step
  o.seed = 1337;           // parameter initialisation
  training_step<plan_t> step(o);
  step_metrics m = step.step([&](auto tokens, auto targets) { sampler.next(tokens, targets); });
  // m.loss (mean nats/token), m.grad_norm (before clipping), m.lr, m.seconds, m.tokens_per_second, m.gflops
  // example-end training-options
  CHECK(m.step == 1);
  CHECK(step.step_count() == 1);
  CHECK(sampler.state().step == 4);       // grad_accum micro-batches drawn
  CHECK(m.lr == Approx(6e-4 / 100));      // step 0 of the warm-up: lr / warmup
  CHECK(m.loss > 0);
  CHECK(m.grad_norm > 0);
}
