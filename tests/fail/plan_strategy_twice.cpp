// expect: weft::plan: strategy<> is given twice\. Give one strategy<> option\.
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<2>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">>>, strategy<mesh<axis<"dp">>>>::memory_per_rank > 0);
