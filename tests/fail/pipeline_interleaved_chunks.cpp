// expect: weft::pipeline: interleaved needs at least 2 model chunks per stage
#include "weft/parallel/schedule.hpp"
constexpr auto s = weft::make_schedule<weft::interleaved<1>, 2, 4>();
