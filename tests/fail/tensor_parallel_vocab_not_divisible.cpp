// expect: weft::tensor_parallel: vocab is not divisible by tp\. Pad the vocabulary to a multiple of tp
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<33>, context<8>, width<16>, heads<2>, depth<1>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<8>>>, 2>::param_count > 0);
