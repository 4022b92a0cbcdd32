// Sample program for the Hugging Face LLaMA-family cross-check (tests/io/hf_llama_crosscheck.py runs
// it; see docs/checkpoints.md).
//
//   hf_llama_sample save <dir>
//       trains a tiny llama for 2 deterministic steps, then writes
//         <dir>/hf/                   save_hf_weights (model.safetensors, config.json)
//         <dir>/saved.logits.bin      the logits of the tokens below, (batch, seq, vocab) f32
//   hf_llama_sample load <file or dir> <prefix>
//       load_hf_weights into a fresh model (another initialisation), then writes
//         <prefix>.logits.bin as above
//   hf_llama_sample load-tied <file or dir>
//       load_hf_weights into the tied variant (must fail: exit 1 with the message)
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The model has every feature the loader maps: grouped-query heads whose size is not width/heads
// (4 heads of 8 on a width of 24, 2 kv heads), q/k/v biases, q/k norms, rope base 500000 with
// LLaMA 3.1's scaling (original context 8, so that it bites), a sliding window of 5 of the 12
// tokens, an untied head, an RMSNorm epsilon of 1e-3 (large, so that a loader or forward pass that
// ignored rms_norm_eps would miss the tolerance by far). Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/hf_llama.hpp"         // load_hf_weights, save_hf_weights
#include "weft/model/llama.hpp"         // llama, llama_config
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

template <class... Extra>
using sample_model = llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, head_dim<8>, depth<2>,
                                        ffn<40>, qkv_bias<>, query_key_norm<>, rope_theta<500000>,
                                        rope_scaling<llama3_rope_scaling<4, 1, 4, 8>>, sliding_window<5>, norm_eps<1e-3>,
                                        Extra...>>;
using model = sample_model<>;
using sample_plan = plan<model, batch<micro<2>, seq<12>>>;  // f32
using step_type = training_step<sample_plan>;

void load_tied(const fs::path& path) {
  training_step<plan<sample_model<tie_word_embeddings<>>, batch<micro<2>, seq<12>>>> st(train_options{});
  load_hf_weights(st, path);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "save" && argc == 3) {
      hf_sample::save<model::vocab_size, step_type>(argv[2]);
    } else if (mode == "load" && argc == 4) {
      hf_sample::load<model::vocab_size, step_type>(argv[2], argv[3]);
    } else if (mode == "load-tied" && argc == 3) {
      load_tied(argv[2]);
    } else {
      std::fprintf(stderr, "usage: hf_llama_sample save <dir> | load <file or dir> <prefix> | load-tied <file or dir>\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_llama_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
