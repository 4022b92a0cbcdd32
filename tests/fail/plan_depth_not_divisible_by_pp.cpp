// expect: weft::plan: depth is not divisible by the pipeline stages\. Choose pp that divides depth .every stage holds depth / pp blocks; uneven splits are rejected.\.
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<6>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"pp", 4>>, pipeline<"pp", one_f_one_b, microbatches<4>>>>::memory_per_rank > 0);
