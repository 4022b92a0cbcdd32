// expect: weft::neox_config: rotary_pct<> is not in \(0, 1\]
#include "weft/model/gpt_neox.hpp"
using m = weft::gpt_neox<weft::neox_config<weft::vocab<16>, weft::context<8>, weft::width<32>, weft::heads<2>, weft::depth<1>, weft::rotary_pct<1.5>>>;
static_assert(m::param_count > 0);
