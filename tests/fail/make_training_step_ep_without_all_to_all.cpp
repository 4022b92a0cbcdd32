// expect: weft::expert_parallel: needs a communicator with all_to_all and all_to_all_v
// An expert-parallel plan over a communicator that has the collectives of `communicator` but no
// all-to-all (NCCL has none of its own): the entry point says so at the call.
#include "weft/model/moe_gpt.hpp"
#include "weft/exec/distributed_step.hpp"
#include "no_exchange_world.hpp"  // single_world's collectives, without its all_to_all
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<moe_gpt<cfg, moe_mlp<16, 4, 2, 12>>, batch<micro<2>, seq<8>>, S>;
void train(no_exchange_world& world) { auto step = make_training_step<P>(world); }
