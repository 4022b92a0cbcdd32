// expect: weft::eval_batches: the batch size B is 0
#include "weft/data/eval_batches.hpp"
static_assert(sizeof(weft::eval_batches<0, 64>) > 0);
