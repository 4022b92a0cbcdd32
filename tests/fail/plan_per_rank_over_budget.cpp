// expect: weft::plan: the per-rank memory plan exceeds the declared memory_budget\. Shard more
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<50304>, context<1024>, width<768>, heads<12>, depth<12>>>;
static_assert(plan<m, batch<micro<8>, seq<1024>>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>, memory_budget<1_GiB>>::memory_per_rank > 0);
