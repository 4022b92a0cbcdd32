// expect: weft::eval_batches: the sequence length S is 0
#include "weft/data/eval_batches.hpp"
static_assert(sizeof(weft::eval_batches<8, 0>) > 0);
