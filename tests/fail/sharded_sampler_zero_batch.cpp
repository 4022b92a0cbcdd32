// expect: weft::sharded_sampler: the batch size B is 0
#include "weft/data/sharded_sampler.hpp"
static_assert(sizeof(weft::sharded_sampler<0, 64>) > 0);
