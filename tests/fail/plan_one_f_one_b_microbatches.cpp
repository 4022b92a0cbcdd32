// expect: weft::pipeline: one_f_one_b needs at least as many micro-batches as stages\. Raise microbatches<M> to >= P or use gpipe\.
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<4>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"pp", 4>>, pipeline<"pp", one_f_one_b, microbatches<3>>>>::memory_per_rank > 0);
