// expect: weft::pipeline: interleaved needs a micro-batch count divisible by the number of stages
#include "weft/parallel/schedule.hpp"
constexpr auto s = weft::make_schedule<weft::interleaved<2>, 4, 6>();  // 6 % 4 != 0
