// expect: weft::plan: the memory plan exceeds the declared memory_budget
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
static_assert(plan<m, batch<micro<1>, seq<1024>>, memory_budget<1_MiB>>::bytes_per_rank > 0);
