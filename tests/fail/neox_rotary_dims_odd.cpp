// expect: weft::neox_config: int\(head size .* rotary_pct\) is odd or 0
#include "weft/model/gpt_neox.hpp"
using m = weft::gpt_neox<weft::neox_config<weft::vocab<16>, weft::context<8>, weft::width<16>, weft::heads<4>, weft::depth<1>, weft::rotary_pct<0.25>>>;
static_assert(m::param_count > 0);
