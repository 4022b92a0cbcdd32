// expect: weft::tensor_parallel_plan: the plan keeps the block stack's parameters or gradients in ZeRO windows
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>>;
// a tp shard's stack through gradient windows, but the arena would keep the optimizer state
using p = plan<m, batch<micro<1>, seq<8>>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>, sharded_gradients>;
static_assert(tensor_parallel_plan<p>::param_count > 0);
