// expect: weft::moe_gpt: the MoE layer's widths differ from the model width
// a width-16 mixture in a width-8 model.
#include "weft/model/moe_gpt.hpp"

using m = weft::moe_gpt<weft::gpt_config<weft::vocab<13>, weft::context<8>, weft::width<8>, weft::heads<2>, weft::depth<1>>,
                        weft::moe_mlp<16, 4, 2, 4>>;
constexpr auto n = m::vocab_size;
