// expect: weft::plan: interleaving without enough layers: depth is not divisible by pp . V model chunks
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<4>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", interleaved<4>, microbatches<4>>>>::memory_per_rank > 0);
