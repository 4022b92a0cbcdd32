// expect: weft::attention: heads or kv_heads is 0
#include "weft/model/attention.hpp"
using attn = weft::attention<96, 4, 0>;
static_assert(attn::param_count > 0);
