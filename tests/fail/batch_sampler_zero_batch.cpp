// expect: weft::batch_sampler: the batch size B is 0
#include "weft/data/batch_sampler.hpp"
static_assert(sizeof(weft::batch_sampler<0, 64>) > 0);
