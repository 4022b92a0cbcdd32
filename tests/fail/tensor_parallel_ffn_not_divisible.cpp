// expect: weft::tensor_parallel: the MLP's hidden width .ffn. is not divisible by tp
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<1>, ffn<30>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<8>>>, 4>::param_count > 0);
