// expect: weft::gemma3_config: a hyper-parameter is missing or zero
#include "weft/model/gemma3.hpp"
// ffn<> (the configs' intermediate_size) has no default
using m = weft::gemma3<weft::gemma3_config<weft::vocab<16>, weft::context<8>, weft::width<8>, weft::heads<2>, weft::depth<2>>>;
static_assert(m::param_count > 0);
