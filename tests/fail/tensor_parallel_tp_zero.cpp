// expect: weft::tensor_parallel: tp is 0\. Use a tensor-parallel degree of at least 1
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<1>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<8>>>, 0>::tp == 0);
