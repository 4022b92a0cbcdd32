// expect: weft::gpt_config: rope_theta<> or rope_scaling<> is given, but GPT-2 learns its positions
#include "weft/model/gpt.hpp"
using m = weft::gpt<weft::gpt_config<weft::vocab<16>, weft::context<8>, weft::width<16>, weft::heads<4>, weft::depth<1>,
                                     weft::rope_theta<500000>>>;
static_assert(m::param_count > 0);
