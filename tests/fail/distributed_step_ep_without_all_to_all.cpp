// expect: weft::expert_parallel: needs a communicator with all_to_all and all_to_all_v
// distributed_step built by hand for an expert-parallel plan over a communicator without an
// all-to-all (the ep_moe_mlp layers exchange routed rows): said at the step's type.
#include "weft/model/moe_gpt.hpp"
#include "weft/exec/distributed_step.hpp"
#include "no_exchange_world.hpp"  // single_world's collectives, without its all_to_all
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<moe_gpt<cfg, moe_mlp<16, 4, 2, 12>>, batch<micro<2>, seq<8>>, S>;
constexpr std::size_t n = distributed_step<P, no_exchange_world>::tp;
