// expect: weft::tensor_parallel: a column-parallel linear's out width .or a packed segment of it. is not divisible by tp
#include "weft/model/gelu.hpp"
#include "weft/model/linear.hpp"
#include "weft/model/sequential.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using mlp = sequential<linear<8, 6, role::column>, gelu<6>, linear<6, 8, role::row>>;
static_assert(tp_shard_t<mlp, 4>::param_count > 0);
