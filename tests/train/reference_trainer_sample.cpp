// Sample program for the independent reference trainer (tests/train/reference_trainer.py runs
// it; see docs/training.md, "An independent reference trainer").
//
//   reference_trainer_sample <dir>
//       trains, in f64, through weft's public training API (training_step<Plan>, train_options):
//         gpt    a tiny GPT-2: vocab 37, context 10, width 24, heads 3 (head size 8), depth 2
//         llama  a tiny LLaMA: vocab 41, context 9, width 24, heads 4 (head size 6), kv_heads 2,
//                depth 2, ffn 36 (grouped-query heads)
//       each for 8 optimizer steps of AdamW (weight decay 0.1), warm-up + cosine learning rate,
//       global-norm clipping (which the sample checks triggers on some steps and not on
//       others) and gradient accumulation over several micro-batches, and writes, per model m:
//         <dir>/m.config          `key value` lines: sizes, micro-batches, optimizer settings
//                                 (the f32 values weft holds, printed exactly as doubles)
//         <dir>/m.index           one line per parameter: `name offset decay d0 [d1]` (elements)
//         <dir>/m.init.bin        the parameter block before the first step, little-endian f64
//         <dir>/m.final.bin       the parameter block after the last step
//         <dir>/m.tokens.bin      every micro-batch's token ids, (step, micro, batch, seq) int32
//         <dir>/m.targets.bin     their targets, the same shape
//         <dir>/m.steps           one line per step: `loss grad_norm lr` (%.17g), from
//                                 step_metrics (grad_norm: the global norm before clipping)
// Sizes are all distinct (vocab, context, width, ffn, head size) so that a mix-up of axes cannot
// cancel out. Tokens are pseudo-random (splitmix64), different in every micro-batch; each target is
// (7 token + 3) mod vocab, a rule the models learn within the 8 steps.
// Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/data/splitmix64.hpp"     // splitmix64
#include "weft/exec/training_step.hpp"  // training_step, train_options, step_metrics
#include "weft/model/gpt.hpp"           // gpt, gpt_config
#include "weft/model/llama.hpp"         // llama, llama_config
#include "weft/parallel/plan.hpp"       // plan, batch, micro, seq, precision

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace weft;
namespace fs = std::filesystem;

using gpt_model = gpt<gpt_config<vocab<37>, context<10>, width<24>, heads<3>, depth<2>>>;
using llama_model = llama<llama_config<vocab<41>, context<9>, width<24>, heads<4>, kv_heads<2>, depth<2>, ffn<36>>>;
using gpt_plan = plan<gpt_model, batch<micro<2>, seq<10>>, precision<double>>;
using llama_plan = plan<llama_model, batch<micro<3>, seq<9>>, precision<double>>;

constexpr std::size_t steps = 8;

void write_file(const fs::path& path, const void* data, std::size_t bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// A double as text that reads back to the same value.
std::string exact(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Trains Plan's model for `steps` steps with `o` and writes its files under dir/name.*.
template <class Plan>
void train_and_dump(const fs::path& dir, const std::string& name, const train_options& o, std::uint64_t data_seed) {
  using model = typename Plan::model;
  training_step<Plan> st(o);
  const auto& infos = st.parameter_infos();
  {
    std::ofstream index(dir / (name + ".index"), std::ios::trunc);
    for (const param_info& p : infos) {
      index << p.name << ' ' << p.offset << ' ' << (p.decay ? 1 : 0);
      for (std::size_t d : p.shape) index << ' ' << d;
      index << '\n';
    }
    if (!index) throw std::runtime_error("cannot write the parameter index");
  }
  write_file(dir / (name + ".init.bin"), st.params().data(), st.params().size_bytes());

  // Every micro-batch's tokens and targets, recorded as the step reads them: (step, micro, rows).
  std::vector<std::int32_t> all_tokens, all_targets;
  splitmix64 g{data_seed};
  std::ofstream log(dir / (name + ".steps"), std::ios::trunc);
  std::size_t clipped = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const step_metrics m = st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(g.next() % model::vocab_size);
        // A learnable rule (the next token is 7 t + 3), so the loss falls as it would on text.
        targets[i] = static_cast<std::int32_t>((7 * tokens[i] + 3) % model::vocab_size);
      }
      all_tokens.insert(all_tokens.end(), tokens.begin(), tokens.end());
      all_targets.insert(all_targets.end(), targets.begin(), targets.end());
    });
    if (m.skipped) throw std::runtime_error(name + ": step " + std::to_string(s) + " was skipped");
    clipped += m.grad_norm > o.grad_clip;
    log << exact(m.loss) << ' ' << exact(m.grad_norm) << ' ' << exact(m.lr) << '\n';
  }
  if (!log) throw std::runtime_error("cannot write the step log");
  // The check must see both branches of clipping.
  if (clipped == 0 || clipped == steps)
    throw std::runtime_error(name + ": clipping triggered on " + std::to_string(clipped) + " of " +
                             std::to_string(steps) + " steps; change grad_clip so that it triggers on some");
  write_file(dir / (name + ".tokens.bin"), all_tokens.data(), all_tokens.size() * sizeof(std::int32_t));
  write_file(dir / (name + ".targets.bin"), all_targets.data(), all_targets.size() * sizeof(std::int32_t));
  write_file(dir / (name + ".final.bin"), st.params().data(), st.params().size_bytes());

  std::ofstream cfg(dir / (name + ".config"), std::ios::trunc);
  cfg << "family " << name << '\n'
      << "vocab " << model::vocab_size << '\n'
      << "context " << model::context_length << '\n'
      << "width " << model::width << '\n'
      << "heads " << model::heads << '\n'
      << "kv_heads " << model::kv_heads << '\n'
      << "depth " << model::depth << '\n'
      << "ffn " << model::ffn << '\n'
      << "batch " << Plan::B << '\n'
      << "seq " << Plan::S << '\n'
      << "steps " << steps << '\n'
      << "grad_accum " << o.grad_accum << '\n'
      << "lr " << exact(o.optimizer.lr) << '\n'
      << "beta1 " << exact(o.optimizer.beta1) << '\n'
      << "beta2 " << exact(o.optimizer.beta2) << '\n'
      << "eps " << exact(o.optimizer.eps) << '\n'
      << "weight_decay " << exact(o.optimizer.weight_decay) << '\n'
      << "warmup " << o.schedule.warmup << '\n'
      << "total " << o.schedule.total << '\n'
      << "min_ratio " << exact(o.schedule.min_ratio) << '\n'
      << "grad_clip " << exact(o.grad_clip) << '\n';
  if (!cfg) throw std::runtime_error("cannot write the config");
}

void run(const fs::path& dir) {
  fs::create_directories(dir);
  // Large rates and decay so that every effect (decay, bias correction, the schedule) moves the
  // parameters well above the comparison's tolerance within 8 steps.
  // example-begin reference-trainer-options
  train_options o;
  o.optimizer = {.lr = 2e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  o.schedule = {.warmup = 3, .total = 8, .min_ratio = 0.1f};
  o.grad_accum = 2;    // micro-batches per step
  o.grad_clip = 1.9f;  // between the smallest and the largest gradient norm of the 8 steps
  o.seed = 11;
  train_and_dump<gpt_plan>(dir, "gpt", o, 101);  // training_step<gpt_plan>, 8 steps, files out
  // example-end reference-trainer-options
  o.grad_accum = 3;
  o.grad_clip = 1.22f;
  o.seed = 12;
  train_and_dump<llama_plan>(dir, "llama", o, 202);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: reference_trainer_sample <dir>\n");
    return 2;
  }
  try {
    run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reference_trainer_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
