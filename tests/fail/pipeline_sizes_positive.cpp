// expect: weft::pipeline: a pipeline needs at least one stage and one micro-batch
#include "weft/parallel/schedule.hpp"
constexpr auto s = weft::make_schedule<weft::gpipe, 2, 0>();
