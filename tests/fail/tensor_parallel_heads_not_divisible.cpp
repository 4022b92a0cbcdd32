// expect: weft::tensor_parallel: heads is not divisible by tp\. Choose a tp that divides heads
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<18>, heads<3>, depth<1>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<8>>>, 2>::param_count > 0);
