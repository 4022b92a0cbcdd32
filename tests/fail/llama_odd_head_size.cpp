// expect: weft::llama_config: the head size .width / heads, or head_dim. is odd
#include "weft/model/llama.hpp"
using m = weft::llama<weft::llama_config<weft::vocab<16>, weft::context<8>, weft::width<12>, weft::heads<4>, weft::depth<1>>>;
static_assert(m::param_count > 0);
