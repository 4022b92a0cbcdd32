// expect: weft::neox_config: a tag GPT-NeoX has no counterpart for is given
#include "weft/model/gpt_neox.hpp"
using m = weft::gpt_neox<weft::neox_config<weft::vocab<16>, weft::context<8>, weft::width<32>, weft::heads<2>, weft::depth<1>, weft::kv_heads<2>>>;
static_assert(m::param_count > 0);
