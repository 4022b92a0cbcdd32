// expect: weft::load_hf_weights/save_hf_weights: Mixtral and Qwen3-MoE have no q/k/v biases
#include "weft/exec/training_step.hpp"
#include "weft/io/hf_moe_llama.hpp"
#include "weft/model/moe_llama.hpp"
#include "weft/parallel/plan.hpp"
using m = weft::moe_llama<weft::llama_config<weft::vocab<16>, weft::context<4>, weft::width<8>, weft::heads<2>, weft::depth<1>, weft::qkv_bias<>>,
                          weft::moe_mlp<8, 2, 1, 4, weft::swiglu_experts>>;
void f(weft::training_step<weft::plan<m, weft::batch<weft::micro<1>, weft::seq<4>>>>& st) { weft::save_hf_weights(st, "x"); }
