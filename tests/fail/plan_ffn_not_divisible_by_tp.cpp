// expect: weft::plan: the MLP width .ffn. is not divisible by the tensor-parallel degree
#include "weft/model/gpt.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<4>, depth<2>, ffn<30>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"tp", 4>>, tensor_parallel<"tp">>>::memory_per_rank > 0);
