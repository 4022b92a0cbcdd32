// Sample program for the Hugging Face GPT-NeoX cross-check (tests/io/hf_neox_crosscheck.py runs
// it; see docs/checkpoints.md).
//
//   hf_neox_sample save <dir>
//       trains a tiny gpt_neox for 2 deterministic steps, then writes
//         <dir>/hf/                   save_hf_weights (model.safetensors, config.json)
//         <dir>/saved.logits.bin      the logits of the tokens below, (batch, seq, vocab) f32
//   hf_neox_sample load <file or dir> <prefix>
//       load_hf_weights into a fresh model (another initialisation), then writes
//         <prefix>.logits.bin as above
//   hf_neox_sample grad <file or dir> <dir>
//       load_hf_weights, then the loss and gradients of one micro-batch: <dir>/loss.txt and
//       <dir>/grad/ (hf_sample_util.hpp)
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The model is Pythia's architecture at a size where every mapping shows: 3 heads of 8 (so the
// per-head grouping of query_key_value is not the identity, nor a transpose of a square), half of
// each head rotating (rotary_pct 0.5: 4 of 8), a rotary base of 1000, an MLP of 40 (not 4·width),
// a LayerNorm epsilon of 1e-3 (large, so that a forward pass that ignored layer_norm_eps would miss
// by far). Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/hf_neox.hpp"          // load_hf_weights, save_hf_weights
#include "weft/model/gpt_neox.hpp"      // gpt_neox, neox_config
#include "weft/parallel/plan.hpp"       // plan, batch, micro, seq

#include "hf_sample_util.hpp"  // hf_sample::save, load, write_logits

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

using model = gpt_neox<neox_config<vocab<50>, context<12>, width<24>, heads<3>, depth<2>, ffn<40>, rotary_pct<0.5>,
                                   rope_theta<1000>, norm_eps<1e-3>>>;
using sample_plan = plan<model, batch<micro<2>, seq<12>>>;  // f32
using step_type = training_step<sample_plan>;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (!hf_sample::run_mode<model::vocab_size, step_type>(mode, argc - 2, argv + 2)) {
      std::fprintf(stderr, "usage: hf_neox_sample save <dir> | load <file or dir> <prefix> | grad <file or dir> <dir>\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_neox_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
