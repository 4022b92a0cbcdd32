// expect: weft::qk_norm: tensor parallelism of QK-norm is not supported yet
#include "weft/model/qk_norm.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using shard = weft::tp_shard_t<weft::qk_norm_attention<16, 4, 2>, 2>;
static_assert(shard::param_count > 0);
