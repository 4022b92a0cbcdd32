// Sample program for the Hugging Face LLaMA-family cross-check (tests/io/hf_llama_crosscheck.py runs
// it) and the transformers tier (tests/io/hf_transformers_tier.py; see docs/checkpoints.md).
//
//   hf_llama_sample [model] save <dir>
//       trains a tiny llama for 2 deterministic steps, then writes
//         <dir>/hf/                   save_hf_weights (model.safetensors, config.json)
//         <dir>/saved.logits.bin      the logits of the tokens below, (batch, seq, vocab) f32
//   hf_llama_sample [model] load <file or dir> <prefix>
//       load_hf_weights into a fresh model (another initialisation), then writes
//         <prefix>.logits.bin as above
//   hf_llama_sample [model] grad <file or dir> <dir>
//       load_hf_weights, then the loss and gradients of one micro-batch: <dir>/loss.txt and
//       <dir>/grad/ (hf_sample_util.hpp)
//   hf_llama_sample load-tied <file or dir>
//       load_hf_weights into the tied variant of the qwen3 model (must fail: exit 1 with the message)
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The models (vocab 50, context 12, width 24, 2 layers, 4 heads and 2 kv heads each):
//   qwen3    (the default) every feature the loader maps beside biases: head size 8, not
//            width/heads, q/k norms, rope base 500000 with LLaMA 3.1's scaling (original context
//            8, so that it bites), a sliding window of 5 of the 12 tokens, an untied head, an
//            RMSNorm epsilon of 1e-3 (large, so that a loader or forward pass that ignored
//            rms_norm_eps would miss the tolerance by far). No q/k/v biases: transformers' Qwen 3
//            with attention_bias has an o_proj bias too, which weft's llama does not have.
//   llama    LLaMA 3.1's rotary scaling, an MLP of 40, an untied head
//   mistral  a sliding window of 5, rope base 1e6, an epsilon of 1e-3
//   qwen2    q/k/v biases (Qwen 2's, no o_proj bias), a tied head
// Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
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
                                        ffn<40>, query_key_norm<>, rope_theta<500000>,
                                        rope_scaling<llama3_rope_scaling<4, 1, 4, 8>>, sliding_window<5>, norm_eps<1e-3>,
                                        Extra...>>;
using model = sample_model<>;
using llama_model = llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, depth<2>, ffn<40>,
                                       rope_theta<500000>, rope_scaling<llama3_rope_scaling<4, 1, 4, 8>>, norm_eps<1e-5>>>;
using mistral_model = llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, depth<2>, ffn<40>,
                                         rope_theta<1000000>, sliding_window<5>, norm_eps<1e-3>>>;
using qwen2_model = llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, depth<2>, ffn<40>,
                                       qkv_bias<>, tie_word_embeddings<>, rope_theta<1000000>, norm_eps<1e-6>>>;
template <class Model>
using step_of = training_step<plan<Model, batch<micro<2>, seq<12>>>>;  // f32

void load_tied(const fs::path& path) {
  training_step<plan<sample_model<tie_word_embeddings<>>, batch<micro<2>, seq<12>>>> st(train_options{});
  load_hf_weights(st, path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string kind = "qwen3";
  int a = 1;  // the mode's position
  if (argc > 1) {
    const std::string first = argv[1];
    if (first == "qwen3" || first == "llama" || first == "mistral" || first == "qwen2") kind = first, a = 2;
  }
  const std::string mode = argc > a ? argv[a] : "";
  const int args = argc - a - 1;
  char** arg = argv + a + 1;
  bool ok = false;
  try {
    if (mode == "load-tied" && kind == "qwen3" && args == 1) {
      load_tied(arg[0]);
      ok = true;
    } else if (kind == "qwen3") {
      ok = hf_sample::run_mode<model::vocab_size, step_of<model>>(mode, args, arg);
    } else if (kind == "llama") {
      ok = hf_sample::run_mode<llama_model::vocab_size, step_of<llama_model>>(mode, args, arg);
    } else if (kind == "mistral") {
      ok = hf_sample::run_mode<mistral_model::vocab_size, step_of<mistral_model>>(mode, args, arg);
    } else if (kind == "qwen2") {
      ok = hf_sample::run_mode<qwen2_model::vocab_size, step_of<qwen2_model>>(mode, args, arg);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_llama_sample: %s\n", e.what());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "usage: hf_llama_sample [qwen3|llama|mistral|qwen2] save <dir> | load <file or dir> <prefix> | "
                         "grad <file or dir> <dir> | load-tied <file or dir>\n");
    return 2;
  }
  return 0;
}
