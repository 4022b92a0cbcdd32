// expect: weft::plan: the number of experts is not divisible by the expert-parallel degree\. Choose an ep that divides
// 6 experts per layer over 4 expert-parallel ranks.
#include "weft/model/moe_gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 4>>, expert_parallel<"ep">, data_parallel<"dp">>;
constexpr std::size_t n = plan<moe_gpt<cfg, moe_mlp<16, 6, 2, 12>>, batch<micro<2>, seq<8>>, S>::param_count;
