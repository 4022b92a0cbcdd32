// expect: weft::tensor_parallel: kv_heads is not divisible by tp, so the key/value heads cannot be split
#include "weft/model/llama.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<1>, depth<1>, ffn<32>>>;
static_assert(tensor_parallel_plan<plan<m, batch<micro<1>, seq<8>>>, 2>::param_count > 0);
