// expect: weft::batch_sampler: the sequence length S is 0
#include "weft/data/batch_sampler.hpp"
static_assert(sizeof(weft::batch_sampler<8, 0>) > 0);
