// hf_model_type: prints the weft type of a Hugging Face checkpoint's config.json.
//
//   hf_model_type <config.json | checkpoint directory> [--using NAME]
//
// prints, for instance for Qwen2.5-0.5B,
//   llama<llama_config<vocab<151936>, context<32768>, width<896>, heads<14>, kv_heads<2>, depth<24>,
//         ffn<4864>, rope_theta<1000000>, qkv_bias<>, tie_word_embeddings<>, norm_eps<1e-06>>>
// (one line), or with --using NAME a declaration `using NAME = weft::llama<weft::llama_config<…>>;`
// with every name qualified. Paste it into a plan and
// load the weights with load_hf_weights (weft/io/hf_llama.hpp). Exit status 0; 1 with a one-line
// message when weft cannot build the model the config describes; 2 on usage errors.
#include "weft/io/hf_model_type.hpp"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  const bool named = argc == 4 && std::string(argv[2]) == "--using";
  if (argc != 2 && !named) {
    std::fprintf(stderr, "usage: hf_model_type <config.json | checkpoint directory> [--using NAME]\n");
    return 2;
  }
  try {
    const std::string type = weft::hf_model_type(std::filesystem::path(argv[1]));
    if (named) std::printf("using %s = %s;\n", argv[3], weft::qualified_model_type(type).c_str());
    else std::printf("%s\n", type.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_model_type: %s\n", e.what());
    return 1;
  }
  return 0;
}
