// expect: weft::sharded_sampler: the sequence length S is 0
#include "weft/data/sharded_sampler.hpp"
static_assert(sizeof(weft::sharded_sampler<8, 0>) > 0);
