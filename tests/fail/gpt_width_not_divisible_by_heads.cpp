// expect: weft::gpt_config: width is not divisible by heads
#include "weft/model/gpt.hpp"
using m = weft::gpt<weft::gpt_config<weft::vocab<16>, weft::context<8>, weft::width<10>, weft::heads<4>, weft::depth<1>>>;
static_assert(m::param_count > 0);
