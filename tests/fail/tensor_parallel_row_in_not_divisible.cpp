// expect: weft::tensor_parallel: a row-parallel linear's in width is not divisible by tp
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
#include "weft/model/swiglu.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using mlp = sequential<linear<8, 12, role::column>, swiglu<6>, linear<6, 8, role::row>>;
static_assert(tp_shard_t<mlp, 4>::param_count > 0);
