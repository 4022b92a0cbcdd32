// expect: weft::plan: expert_parallel with ep > 1 needs mixture-of-experts layers, but the model has no moe_mlp
// A dense GPT under expert_parallel<"ep"> of size 2: nothing to split.
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using cfg = gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>;
using S = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp">>;
constexpr std::size_t n = plan<gpt<cfg>, batch<micro<2>, seq<8>>, S>::param_count;
