// expect: weft::attention: the width is not divisible by heads
#include "weft/model/attention.hpp"
// width 96 with 5 heads: before this check, a 95-wide attention trained without a word.
using attn = weft::attention<96, 5>;
static_assert(attn::param_count > 0);
