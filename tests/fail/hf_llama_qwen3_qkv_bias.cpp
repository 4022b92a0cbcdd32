// expect: transformers' Qwen 3 with attention_bias has an o_proj bias too
#include "weft/exec/training_step.hpp"
#include "weft/io/hf_llama.hpp"
#include "weft/model/llama.hpp"
#include "weft/parallel/plan.hpp"
using m = weft::llama<weft::llama_config<weft::vocab<16>, weft::context<4>, weft::width<8>, weft::heads<2>, weft::depth<1>,
                                         weft::qkv_bias<>, weft::query_key_norm<>>>;
void f(weft::training_step<weft::plan<m, weft::batch<weft::micro<1>, weft::seq<4>>>>& st) { weft::save_hf_weights(st, "x"); }
