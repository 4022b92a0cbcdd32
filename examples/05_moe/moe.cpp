/*
 * 05_moe — a mixture-of-experts GPT trained on the CPU, end to end.
 *
 * The model is GPT-2's body with every MLP replaced by a top-k routed mixture of experts
 * (weft/model/moe.hpp): a router picks 2 of 8 SwiGLU experts for each token, the tokens are
 * dispatched dropless to their experts and combined with the renormalised gates, and the
 * Switch-Transformer load-balancing loss keeps the experts in use. It trains byte-level on the
 * fortune(6) corpus (or --data), reports the cross-entropy, the auxiliary loss and how evenly the
 * experts are used, evaluates the validation loss and checks it against --expect-val-loss.
 *
 *   build/examples/moe                          # 1000 steps, about 45 s on one core
 *   build/examples/moe --steps 1000 --expect-val-loss 2.3   # what CTest runs (demo.moe)
 */
#include <weft/model/moe_gpt.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/data/batch_sampler.hpp>
#include <weft/data/corpus.hpp>
#include <weft/data/eval_batches.hpp>
#include <weft/data/split.hpp>
#include <weft/exec/training_step.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

using namespace weft;

// ---- the model and its plan: types ----
// example-begin moe-model
using experts = moe_mlp<128, 8, 2, 128, swiglu_experts, aux_loss_weight<10>>;  // width 128, 8 experts, top-2, alpha 0.01
using model = moe_gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>, experts>;
using moe_plan = plan<model, batch<micro<8>, seq<64>>>;
static_assert(moe_plan::bytes_per_rank <= 64_MiB);  // memory is known before launch
// example-end moe-model

struct options {
  std::string data;                 // '' = the fortune corpus
  std::size_t steps = 1000;
  std::size_t eval_every = 250;
  std::size_t eval_batches = 16;
  float lr = 3e-3f;
  double expect_val_loss = 0;       // > 0: exit 3 unless the final validation loss is at most this
};

static void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: moe [options]\n"
               "  --data PATH          text file, directory of text files or token file; default: fortune(6)\n"
               "  --steps N            optimizer steps                        (default 1000)\n"
               "  --eval-every N       validation every N steps               (default 250)\n"
               "  --eval-batches N     micro-batches per validation           (default 16)\n"
               "  --lr X               peak learning rate                     (default 3e-3)\n"
               "  --expect-val-loss X  exit with status 3 unless the final validation loss <= X\n"
               "  --help\n");
}

static bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "moe: unknown option or missing value '%s' (see --help)\n", argv[i]);
      return false;
    }
    const std::string v = argv[++i];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool number = !v.empty() && *end == '\0' && x >= 0;
    if (a == "--data") o.data = v;
    else if (!number) {
      std::fprintf(stderr, "moe: %s expects a non-negative number, got '%s'\n", argv[i - 1], v.c_str());
      return false;
    } else if (a == "--steps") o.steps = static_cast<std::size_t>(x);
    else if (a == "--eval-every") o.eval_every = static_cast<std::size_t>(x);
    else if (a == "--eval-batches") o.eval_batches = static_cast<std::size_t>(x);
    else if (a == "--lr") o.lr = static_cast<float>(x);
    else if (a == "--expect-val-loss") o.expect_val_loss = x;
    else {
      std::fprintf(stderr, "moe: unknown option '%s' (see --help)\n", argv[i - 1]);
      return false;
    }
  }
  return true;
}

static int train(const options& o) {
  constexpr std::size_t B = moe_plan::B, S = moe_plan::S;
  const corpus data = corpus::open(o.data, "moe", 0, moe_plan::vocab_size);
  const token_split parts = split(data.all(), 0.1);

  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.optimizer.weight_decay = 0.1f;
  topt.schedule = {50, o.steps, 0.1f};
  topt.grad_accum = 1;
  aux_losses().gradient_scale = 1.0 / static_cast<double>(topt.grad_accum);  // each micro-batch's share

  training_step<moe_plan> step(topt);
  batch_sampler<B, S> sampler(parts.train, topt.seed);
  eval_batches<B, S> val(parts.validation);
  moe_plan::report();
  std::printf("moe: %zu experts, top-%zu, ffn %zu per expert; %zu of %zu parameters are experts a token skips\n",
              experts::experts, experts::top_k, experts::ffn, model::inactive_param_count, moe_plan::param_count);

  auto validate = [&] {
    val.rewind();
    const std::size_t n = std::min(o.eval_batches, val.size());
    return step.evaluate([&](auto tok, auto tgt) { val.next(tok, tgt); }, n);
  };
  double val_loss = -1, ce_sum = 0, aux_sum = 0;
  std::size_t window = 0;
  aux_losses().take();
  while (step.step_count() < o.steps) {
    const step_metrics m = step.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); });
    const auto aux = aux_losses().take();  // the blocks' load-balancing losses of this step
    ce_sum += m.loss;
    aux_sum += aux.sum / static_cast<double>(topt.grad_accum);
    ++window;
    const bool eval_now = (o.eval_every && m.step % o.eval_every == 0) || m.step == o.steps;
    if (m.step % 50 == 0 || eval_now) {
      // aux is summed over the blocks; alpha · depth is its value at perfect balance
      std::printf("step %4zu  loss %.4f  aux %.5f (balanced: %.5f)  %.0f tok/s\n", m.step, ce_sum / window,
                  aux_sum / window, experts::aux_alpha * model::depth, m.tokens_per_second);
      ce_sum = aux_sum = 0;
      window = 0;
    }
    if (eval_now) {
      val_loss = validate();
      std::printf("step %zu: validation loss %.4f nats/byte\n", m.step, val_loss);
    }
    std::fflush(stdout);
  }
  if (val_loss < 0) val_loss = validate();
  std::printf("final validation loss %.4f nats/byte after %zu steps\n", val_loss, step.step_count());
  if (o.expect_val_loss > 0) {
    std::printf("loss goal: validation loss %.4f, goal %.4f, margin %.4f (%s)\n", val_loss, o.expect_val_loss,
                o.expect_val_loss - val_loss, val_loss <= o.expect_val_loss ? "met" : "MISSED");
    if (!(val_loss <= o.expect_val_loss)) {
      std::fprintf(stderr, "moe: validation loss %.4f is above the expected %.4f\n", val_loss, o.expect_val_loss);
      return 3;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  try {
    return train(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
