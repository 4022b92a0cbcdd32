// expect: weft::plan: heads is not divisible by the tensor-parallel degree\. Choose tp that divides heads
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<24>, heads<6>, depth<2>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"tp", 4>>, tensor_parallel<"tp">>>::memory_per_rank > 0);
