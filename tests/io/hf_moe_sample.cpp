// Sample program for the Hugging Face Mixtral / Qwen3-MoE cross-check (tests/io/hf_moe_crosscheck.py
// runs it; see docs/checkpoints.md).
//
//   hf_moe_sample save <mixtral|qwen3_moe> <dir>
//       trains a tiny moe_llama for 2 deterministic steps, then writes
//         <dir>/hf/                   save_hf_weights (model.safetensors, config.json)
//         <dir>/saved.logits.bin      the logits of the tokens below, (batch, seq, vocab) f32
//   hf_moe_sample load <mixtral|qwen3_moe> <file or dir> <prefix>
//       load_hf_weights into a fresh model (another initialisation), then writes
//         <prefix>.logits.bin as above
//   hf_moe_sample grad <mixtral|qwen3_moe> <file or dir> <dir>
//       load_hf_weights, then the loss (cross-entropy and load-balancing loss) and gradients of
//       one micro-batch: <dir>/loss.txt and <dir>/grad/ (hf_sample_util.hpp)
//
// The tokens of the logits are (7 i + 3) mod vocab for i = 0 .. batch*seq-1, laid out (batch, seq).
// The models: 4 SwiGLU experts, top-2, on a width of 24, 2 layers, 4 heads and 2 kv heads.
//   mixtral    Mixtral's names: head size width/heads (6), rope base 1e6, experts 16 wide, an aux
//              weight of 0.04 (router_aux_loss_coef 0.02, Mixtral 8x7B's), a window of 5 of the 12
//              tokens
//   qwen3_moe  Qwen3-MoE's names: q/k norms, head_dim 8 (not width/heads), experts 12 wide, an
//              RMSNorm epsilon of 1e-3 (large, so that a forward pass that ignored it would miss)
// Exit status 0 on success, 1 on an error (message on stderr), 2 on usage.
#include "weft/exec/training_step.hpp"  // training_step
#include "weft/io/hf_moe_llama.hpp"     // load_hf_weights, save_hf_weights
#include "weft/model/moe.hpp"           // moe_mlp, swiglu_experts, aux_loss_weight
#include "weft/model/moe_llama.hpp"     // moe_llama, llama_config
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

using mixtral_model = moe_llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, depth<2>,
                                             rope_theta<1000000>, sliding_window<5>>,
                                moe_mlp<24, 4, 2, 16, swiglu_experts, aux_loss_weight<40>, pooled_aux_loss>>;
using qwen3_moe_model = moe_llama<llama_config<vocab<50>, context<12>, width<24>, heads<4>, kv_heads<2>, head_dim<8>,
                                               depth<2>, query_key_norm<>, rope_theta<1000000>, norm_eps<1e-3>>,
                                  moe_mlp<24, 4, 2, 12, swiglu_experts, pooled_aux_loss>>;

template <class Model>
using step_type = training_step<plan<Model, batch<micro<2>, seq<12>>>>;  // f32

template <class Model>
int run(const std::string& mode, int argc, char** argv) {
  return hf_sample::run_mode<Model::vocab_size, step_type<Model>>(mode, argc - 3, argv + 3) ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "", kind = argc > 2 ? argv[2] : "";
  int rc = 2;
  try {
    if (kind == "mixtral") rc = run<mixtral_model>(mode, argc, argv);
    if (kind == "qwen3_moe") rc = run<qwen3_moe_model>(mode, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_moe_sample: %s\n", e.what());
    return 1;
  }
  if (rc == 2)
    std::fprintf(stderr, "usage: hf_moe_sample save <mixtral|qwen3_moe> <dir> | load <mixtral|qwen3_moe> <file or dir> <prefix> | "
                 "grad <mixtral|qwen3_moe> <file or dir> <dir>\n");
  return rc;
}
