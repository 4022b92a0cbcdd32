// expect: weft::llama_config: norm_eps<> is not in \(0, 1\)
#include "weft/model/llama.hpp"
using m = weft::llama<weft::llama_config<weft::vocab<16>, weft::context<8>, weft::width<16>, weft::heads<4>, weft::depth<1>,
                                         weft::norm_eps<0.0>>>;
static_assert(m::param_count > 0);
