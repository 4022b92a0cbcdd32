// Sample program for the Hugging Face Gemma 3 cross-check (tests/io/hf_gemma3_crosscheck.py runs
// it; see docs/checkpoints.md).
//
//   hf_gemma3_sample save <dir>
//       trains a tiny gemma3 for 2 deterministic steps, then writes
//         <dir>/hf/                   save_hf_weights (model.safetensors, config.json)
//         <dir>/saved.logits.bin      the logits of the tokens below, (batch, seq, vocab) f32
//   hf_gemma3_sample load <file or dir> <prefix>
//       load_hf_weights into a fresh model (another initialisation), then writes
//         <prefix>.logits.bin as above
//   hf_gemma3_sample grad <file or dir> <dir>
//       load_hf_weights, then the loss and gradients of one micro-batch: <dir>/loss.txt and
//       <dir>/grad/ (hf_sample_util.hpp)
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The model is Gemma 3's architecture at a size where every mapping shows: 2 heads of 8 sharing one
// kv head (GQA), head_dim 8 (not width / heads), 4 blocks with every second one global (pattern 2),
// a window of 3 keys on the local ones (shorter than the sequence of 8), distinct rotary bases
// (local 50, global 1000) and linear scaling by 2 on the global layers, an MLP of 24, an RMSNorm
// epsilon of 1e-3. Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/hf_gemma3.hpp"        // load_hf_weights, save_hf_weights
#include "weft/model/gemma3.hpp"        // gemma3, gemma3_config
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

using model = gemma3<gemma3_config<vocab<40>, context<8>, width<16>, heads<2>, kv_heads<1>, depth<4>, ffn<24>, head_dim<8>,
                                  sliding_window<3>, layer_pattern<2>, rope_theta<1000>, rope_local_base_freq<50>,
                                  rope_scaling<linear_rope_scaling<2>>, norm_eps<1e-3>>>;
using sample_plan = plan<model, batch<micro<2>, seq<8>>>;  // f32
using step_type = training_step<sample_plan>;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (!hf_sample::run_mode<model::vocab_size, step_type>(mode, argc - 2, argv + 2)) {
      std::fprintf(stderr, "usage: hf_gemma3_sample save <dir> | load <file or dir> <prefix> | grad <file or dir> <dir>\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_gemma3_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
