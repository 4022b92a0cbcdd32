// expect: weft::neox_config: width is not divisible by heads
#include "weft/model/gpt_neox.hpp"
using m = weft::gpt_neox<weft::neox_config<weft::vocab<16>, weft::context<8>, weft::width<18>, weft::heads<4>, weft::depth<1>>>;
static_assert(m::param_count > 0);
