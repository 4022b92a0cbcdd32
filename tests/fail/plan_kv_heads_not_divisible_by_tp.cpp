// expect: weft::plan: kv_heads is not divisible by the tensor-parallel degree\. Choose tp that divides kv_heads
#include "weft/model/llama.hpp"
#include "weft/parallel/plan.hpp"
using namespace weft;
using m = llama<llama_config<vocab<64>, context<16>, width<32>, heads<4>, kv_heads<2>, depth<2>, ffn<64>>>;
static_assert(plan<m, batch<micro<1>, seq<16>>, strategy<mesh<axis<"dp">, axis<"tp", 4>>, tensor_parallel<"tp">>>::memory_per_rank > 0);
