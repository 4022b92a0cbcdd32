// expect: weft::tensor_parallel: with sequence_parallel, seq<S> must be divisible by tp
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<1>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<6>>>, 4, true>::param_count > 0);
