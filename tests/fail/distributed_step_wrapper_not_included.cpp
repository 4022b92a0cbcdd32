// expect: weft::distributed_step: the local_step of expert_parallel is declared but not defined here\. Include the header that defines it
// An expert-parallel plan whose wrapper header (exec/expert_parallel_local.hpp) is not included: one
// sentence naming the part and the fix, not an "incomplete type" deep in data_parallel_step.
#include "weft/comm/single.hpp"
#include "weft/model/moe_gpt.hpp"
#include "weft/exec/distributed_step.hpp"
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<moe_gpt<cfg, moe_mlp<16, 4, 2, 12>>, batch<micro<2>, seq<8>>, S>;
void f(single_world& w) { auto step = make_training_step<P>(w); }
