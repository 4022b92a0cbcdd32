// expect: weft::plan: precision<> is given twice\. Give it once, as a plan option or as a strategy part\.
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<2>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, precision<double>, strategy<mesh<axis<"dp">>, precision<float>>>::memory_per_rank > 0);
