// expect: weft::tensor_parallel_plan: TP or SP differ from the plan's strategy
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<1>>>;
using p = plan<m, batch<micro<1>, seq<8>>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>;
static_assert(tensor_parallel_plan<p, 4>::param_count > 0);
