// Sample program for the GPT-2 checkpoint cross-check against the reference layout of Hugging Face
// transformers (tests/io/gpt2_checkpoint_crosscheck.py runs it; see docs/checkpoints.md).
//
//   gpt2_checkpoint_sample save <dir>
//       trains a tiny gpt for 2 deterministic steps, then writes
//         <dir>/ckpt/                   save_checkpoint (model.safetensors, config.json, optimizer.safetensors)
//         <dir>/saved.params.{bin,index}  weft's in-memory parameters (dump format below)
//         <dir>/saved.logits.bin         the logits of the tokens below, (batch, seq, vocab) f32
//   gpt2_checkpoint_sample load <file.safetensors> <prefix>
//       load_weights(file) into a fresh model (another initialisation), then writes
//         <prefix>.params.{bin,index} and <prefix>.logits.bin as above
//   gpt2_checkpoint_sample grad <file.safetensors> <dir>
//       load_weights(file), then one forward and backward of the tokens below with targets
//       (5 i + 2) mod vocab (the gradient of the mean loss); writes <dir>/loss.txt (the mean
//       cross-entropy, then 0: no auxiliary loss) and <dir>/grad/model.safetensors (the gradients
//       in the checkpoint's names and layouts: save_checkpoint of a step whose parameters are them)
//       (the transformers tier, tests/io/hf_transformers_tier.py)
//
// Dump format: <p>.params.bin is the whole parameter block as little-endian f32 (weft's order and
// layouts, Conv1D weights (out, in)); <p>.params.index has one line per parameter:
// `name offset d0 [d1]` (offset in elements, weft's extents). The tokens of the logits are
// (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The model: vocab 50, context 12, width 24, heads 3, depth 2 (distinct sizes, so a mix-up of
// axes cannot go unnoticed). Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/model/gpt.hpp"             // gpt, gpt_config
#include "weft/parallel/plan.hpp"         // plan, batch, micro, seq
#include "weft/io/checkpoint.hpp"      // save_checkpoint, load_weights
#include "weft/exec/training_step.hpp"   // training_step

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <string>

namespace {

using namespace weft;
namespace fs = std::filesystem;

using model = gpt<gpt_config<vocab<50>, context<12>, width<24>, heads<3>, depth<2>>>;
using sample_plan = plan<model, batch<micro<2>, seq<12>>>;  // f32
using step_type = training_step<sample_plan>;

void write_file(const fs::path& path, const void* data, std::size_t bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

// <prefix>.params.bin/.index and <prefix>.logits.bin (see the top of the file).
void dump(step_type& st, const std::string& prefix) {
  write_file(prefix + ".params.bin", st.params().data(), st.params().size_bytes());
  std::ofstream index(prefix + ".params.index", std::ios::trunc);
  for (const param_info& p : st.parameter_infos()) {
    index << p.name << ' ' << p.offset;
    for (std::size_t d : p.shape) index << ' ' << d;
    index << '\n';
  }
  if (!index) throw std::runtime_error("cannot write " + prefix + ".params.index");
  auto tokens = st.tokens();
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((7 * i + 3) % model::vocab_size);
  st.forward();  // (batch, seq, vocab) in logits()
  write_file(prefix + ".logits.bin", st.logits().data(), st.logits().size_bytes());
}

void save(const fs::path& dir) {
  train_options o;
  o.optimizer.lr = 3e-2f;  // large steps: biases and norm gains move well away from 0 and 1
  o.seed = 7;
  step_type st(o);
  std::size_t start = 0;
  for (int s = 0; s < 2; ++s)
    st.step([&](auto tokens, auto targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>((start + 3 * i) % model::vocab_size);
        targets[i] = static_cast<std::int32_t>((start + 3 * i + 1) % model::vocab_size);
      }
      start += 11;
    });
  fs::create_directories(dir);
  save_checkpoint(st, dir / "ckpt");
  dump(st, (dir / "saved").string());
}

void load(const fs::path& file, const std::string& prefix) {
  train_options o;
  o.seed = 99;  // nothing of this initialisation may survive the load
  step_type st(o);
  load_weights(st, file);
  dump(st, prefix);
}

void grad(const fs::path& file, const fs::path& dir) {
  train_options o;
  o.seed = 99;
  step_type st(o);
  load_weights(st, file);
  auto tokens = st.tokens();
  auto targets = st.targets();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>((7 * i + 3) % model::vocab_size);
    targets[i] = static_cast<std::int32_t>((5 * i + 2) % model::vocab_size);
  }
  auto g = st.grads();
  std::fill(g.begin(), g.end(), 0.0f);
  const double ce = st.accumulate(1.0f / static_cast<float>(step_type::rows));
  auto p = st.params();
  std::copy(g.begin(), g.end(), p.begin());
  fs::create_directories(dir);
  save_checkpoint(st, dir / "grad");
  std::ofstream f(dir / "loss.txt", std::ios::trunc);
  f << std::setprecision(17) << ce << " 0\n";
  if (!f) throw std::runtime_error("cannot write " + (dir / "loss.txt").string());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "save" && argc == 3) {
      save(argv[2]);
    } else if (mode == "load" && argc == 4) {
      load(argv[2], argv[3]);
    } else if (mode == "grad" && argc == 4) {
      grad(argv[2], argv[3]);
    } else {
      std::fprintf(stderr, "usage: gpt2_checkpoint_sample save <dir> | load <file.safetensors> <prefix> | grad <file.safetensors> <dir>\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt2_checkpoint_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
