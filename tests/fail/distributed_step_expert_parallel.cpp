// expect: weft::distributed_step: the plan's strategy has expert_parallel, which this step does not run
// distributed_step built by hand for an expert-parallel plan: its groups have no ep axis; the
// entry point (make_training_step) returns expert_parallel_step instead.
#include "weft/comm/single.hpp"
#include "weft/model/moe_gpt.hpp"
#include "weft/train/distributed_step.hpp"
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
using P = plan<moe_gpt<cfg, moe_mlp<16, 4, 2, 12>>, batch<micro<2>, seq<8>>, S>;
constexpr std::size_t n = distributed_step<P, single_world>::tp;
