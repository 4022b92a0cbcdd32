// expect: weft::tp_shard: a layer is on the wrong side of a tensor-parallel region
#include "weft/model/layernorm.hpp"
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using bad = sequential<linear<8, 8, role::column>, layernorm<8>, linear<8, 8, role::row>>;
static_assert(tp_shard_t<bad, 2>::param_count > 0);
