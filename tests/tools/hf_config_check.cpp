// The config.json check of load_hf_weights on the files transformers 5 writes
// (tests/tools/hf_configs_transformers5/, and their older spelling in legacy/): one named case per
// weft type, the type hf_model_type must write for the file or a type the file disagrees with
// (another rotary base, no rope scaling, another rotated fraction, another expert count).
//
//   hf_config_check <case> <config.json>
//
// runs that case's check (the one load_hf_weights runs before any tensor) on the file: exit 0 when
// it accepts the file, 1 with the one-line message when it refuses it, 2 on usage.
// tests/tools/hf_config_check.py says which case must accept or refuse which file.
#include "weft/io/hf_gemma3.hpp"     // check_hf_gemma3_config
#include "weft/io/hf_llama.hpp"      // check_hf_config
#include "weft/io/hf_moe_llama.hpp"  // check_hf_moe_llama_config
#include "weft/io/hf_neox.hpp"       // check_hf_neox_config
#include "weft/model/gemma3.hpp"     // gemma3
#include "weft/model/gpt_neox.hpp"   // gpt_neox
#include "weft/model/llama.hpp"      // llama
#include "weft/model/moe_llama.hpp"  // moe_llama

#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>

namespace {

using namespace weft;

// shared by the llama-bodied fixtures: vocab 64, context 1024, width 32, 4 heads, 2 kv heads, depth 2
template <class... Tags>
using small_llama = llama<llama_config<vocab<64>, context<1024>, width<32>, heads<4>, kv_heads<2>, depth<2>, ffn<48>, Tags...>>;
template <std::size_t Experts, std::size_t F, class... Tags>
using small_moe = moe_llama<llama_config<vocab<64>, context<1024>, width<32>, heads<4>, kv_heads<2>, depth<2>, Tags...>,
                            moe_mlp<32, Experts, 2, F, swiglu_experts, aux_loss_weight<2>>>;
template <class... Tags>
using small_neox = gpt_neox<neox_config<vocab<64>, context<256>, width<32>, heads<4>, depth<2>, Tags...>>;
template <class... Tags>
using small_gemma3 = gemma3<gemma3_config<vocab<64>, context<1024>, width<32>, heads<4>, kv_heads<2>, depth<4>, ffn<48>,
                                          head_dim<16>, sliding_window<16>, layer_pattern<2>, Tags...>>;

using check_fn = void (*)(const std::filesystem::path&);
template <class M>
constexpr check_fn llama_check = &detail::check_hf_config<M>;
template <class M>
constexpr check_fn moe_check = &detail::check_hf_moe_llama_config<M>;
template <class M>
constexpr check_fn neox_check = &detail::check_hf_neox_config<M>;
template <class M>
constexpr check_fn gemma3_check = &detail::check_hf_gemma3_config<M>;

using llama3 = rope_scaling<llama3_rope_scaling<8, 1, 4, 512>>;

const std::map<std::string, check_fn>& cases() {
  static const std::map<std::string, check_fn> c = {
      // <fixture>: the type hf_model_type writes for it; <fixture>:<what>: a type the file disagrees with
      {"llama", llama_check<small_llama<rope_theta<500000>, norm_eps<1e-06>>>},
      {"llama:theta", llama_check<small_llama<norm_eps<1e-06>>>},
      {"llama31", llama_check<small_llama<rope_theta<500000>, llama3, tie_word_embeddings<>, norm_eps<1e-06>>>},
      {"llama31:unscaled", llama_check<small_llama<rope_theta<500000>, tie_word_embeddings<>, norm_eps<1e-06>>>},
      {"llama31:theta", llama_check<small_llama<llama3, tie_word_embeddings<>, norm_eps<1e-06>>>},
      {"llama31:factor",
       llama_check<small_llama<rope_theta<500000>, rope_scaling<llama3_rope_scaling<8, 1, 4, 8192>>, tie_word_embeddings<>,
                               norm_eps<1e-06>>>},
      {"mistral", llama_check<small_llama<rope_theta<1000000>, sliding_window<64>, norm_eps<1e-06>>>},
      {"mistral:theta", llama_check<small_llama<sliding_window<64>, norm_eps<1e-06>>>},
      {"qwen2", llama_check<small_llama<rope_theta<1000000>, qkv_bias<>, tie_word_embeddings<>, norm_eps<1e-06>>>},
      {"qwen2:theta", llama_check<small_llama<qkv_bias<>, tie_word_embeddings<>, norm_eps<1e-06>>>},
      {"qwen2_window", llama_check<small_llama<rope_theta<20000>, sliding_window<128>, qkv_bias<>, norm_eps<1e-06>>>},
      {"qwen2_window:theta", llama_check<small_llama<sliding_window<128>, qkv_bias<>, norm_eps<1e-06>>>},
      {"qwen2_window:window", llama_check<small_llama<rope_theta<20000>, qkv_bias<>, norm_eps<1e-06>>>},
      {"qwen3", llama_check<small_llama<head_dim<16>, rope_theta<1000000>, query_key_norm<>, norm_eps<1e-06>>>},
      {"qwen3:theta", llama_check<small_llama<head_dim<16>, query_key_norm<>, norm_eps<1e-06>>>},
      {"qwen3_moe", moe_check<small_moe<4, 24, head_dim<16>, rope_theta<1000000>, query_key_norm<>, norm_eps<1e-06>>>},
      {"qwen3_moe:theta", moe_check<small_moe<4, 24, head_dim<16>, query_key_norm<>, norm_eps<1e-06>>>},
      {"qwen3_moe:experts", moe_check<small_moe<8, 24, head_dim<16>, rope_theta<1000000>, query_key_norm<>, norm_eps<1e-06>>>},
      {"mixtral", moe_check<small_moe<4, 48, rope_theta<1000000>>>},
      {"mixtral:theta", moe_check<small_moe<4, 48>>},
      {"mixtral:experts", moe_check<small_moe<8, 48, rope_theta<1000000>>>},
      {"gpt_neox", neox_check<small_neox<rope_theta<20000>, rotary_pct<0.5>>>},
      {"gpt_neox:fraction", neox_check<small_neox<rope_theta<20000>>>},
      {"gpt_neox:theta", neox_check<small_neox<rotary_pct<0.5>>>},
      {"gemma3_text", gemma3_check<small_gemma3<rope_scaling<linear_rope_scaling<8>>>>},
      {"gemma3_text:unscaled", gemma3_check<small_gemma3<>>},
      {"gemma3_text:factor", gemma3_check<small_gemma3<rope_scaling<linear_rope_scaling<4>>>>},
      {"gemma3_text_bases", gemma3_check<small_gemma3<rope_theta<500000>, rope_local_base_freq<20000>>>},
      {"gemma3_text_bases:theta", gemma3_check<small_gemma3<rope_local_base_freq<20000>>>},
      {"gemma3_text_bases:local", gemma3_check<small_gemma3<rope_theta<500000>>>},
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto& [name, fn] : cases()) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (argc != 3 || !cases().contains(argv[1])) {
    std::fprintf(stderr, "usage: hf_config_check <case> <config.json> | --list\n");
    return 2;
  }
  try {
    cases().at(argv[1])(argv[2]);
  } catch (const std::exception& e) {
    std::printf("%s\n", e.what());
    return 1;
  }
  return 0;
}
