// expect: weft::plan: the vocabulary is not divisible by the tensor-parallel degree\. Pad vocab<> to a multiple of tp
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<50257>, context<16>, width<16>, heads<4>, depth<2>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>::memory_per_rank > 0);
