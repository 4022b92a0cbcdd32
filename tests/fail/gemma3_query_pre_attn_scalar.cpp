// expect: weft::gemma3_config: query_pre_attn_scalar differs from head_dim
#include "weft/model/gemma3.hpp"
using m = weft::gemma3<weft::gemma3_config<weft::vocab<16>, weft::context<8>, weft::width<8>, weft::heads<2>, weft::depth<2>, weft::ffn<12>, weft::head_dim<4>, weft::query_pre_attn_scalar<8>>>;
static_assert(m::param_count > 0);
