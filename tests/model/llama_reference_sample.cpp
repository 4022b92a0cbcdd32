// Sample program for the independent LLaMA reference (tests/model/llama_reference.py runs it; see
// docs/models.md). Mirrors tests/io/gpt2_checkpoint_sample.cpp for GPT-2.
//
//   llama_reference_sample <dir>
//       trains a tiny llama for 2 deterministic steps (so norm gains leave 1 and every weight
//       moves), then writes
//         <dir>/llama.params.bin     the whole parameter block, little-endian f64, weft's order
//         <dir>/llama.params.index   one line per parameter: `name offset d0 [d1]` (elements)
//         <dir>/llama.logits.bin     the logits of the tokens below, (batch, seq, vocab) f64
//         <dir>/llama.config         `vocab context width heads kv_heads depth ffn batch seq`
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The model: vocab 50, context 12, width 24, heads 4 (head size 6), kv_heads 2, depth 2, ffn 40:
// distinct sizes, grouped-query heads and a head size above 2, so a mix-up of axes, of kv-head
// groups or of rotary pairs cannot go unnoticed. Runs in f64 so the comparison can be tight.
// Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/model/llama.hpp"          // llama, llama_config
#include "weft/parallel/plan.hpp"        // plan, batch, micro, seq, precision
#include "weft/exec/training_step.hpp"  // training_step

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace {

using namespace weft;
namespace fs = std::filesystem;

using model = llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, depth<2>, ffn<40>>>;
constexpr std::size_t B = 2, S = 12;
using sample_plan = plan<model, batch<micro<B>, seq<S>>, precision<double>>;
using step_type = training_step<sample_plan>;

void write_file(const fs::path& path, const void* data, std::size_t bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

void run(const fs::path& dir) {
  train_options o;
  o.optimizer.lr = 3e-2f;  // large steps: norm gains move well away from 1
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
  write_file(dir / "llama.params.bin", st.params().data(), st.params().size_bytes());
  std::ofstream index(dir / "llama.params.index", std::ios::trunc);
  for (const param_info& p : st.parameter_infos()) {
    index << p.name << ' ' << p.offset;
    for (std::size_t d : p.shape) index << ' ' << d;
    index << '\n';
  }
  if (!index) throw std::runtime_error("cannot write the parameter index");
  auto tokens = st.tokens();
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((7 * i + 3) % model::vocab_size);
  st.forward();  // (batch, seq, vocab) in logits()
  write_file(dir / "llama.logits.bin", st.logits().data(), st.logits().size_bytes());
  std::ofstream cfg(dir / "llama.config", std::ios::trunc);
  cfg << model::vocab_size << ' ' << model::context_length << ' ' << model::width << ' ' << model::heads << ' '
      << model::kv_heads << ' ' << model::depth << ' ' << model::ffn << ' ' << B << ' ' << S << '\n';
  if (!cfg) throw std::runtime_error("cannot write the config");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: llama_reference_sample <dir>\n");
    return 2;
  }
  try {
    run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llama_reference_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
