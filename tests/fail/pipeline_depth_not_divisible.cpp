// expect: weft::pipeline: depth is not divisible by pp
#include "weft/model/gpt.hpp"
#include "weft/parallel/pipeline_stage.hpp"
using m = weft::gpt<weft::gpt_config<weft::vocab<16>, weft::context<8>, weft::width<8>, weft::heads<2>, weft::depth<3>>>;
using stage = weft::pipeline_stage_t<m, 2, 0>;  // 3 blocks over 2 stages
static_assert(stage::param_count > 0);
