// expect: weft::auto_strategy: no split of the cluster's GPUs
// 8 GPUs and a global batch of 3 sequences: no data-parallel degree divides it.
#include <weft/model/gpt.hpp>
#include <weft/planner/auto_strategy.hpp>

using model = weft::gpt<weft::gpt_config<weft::vocab<256>, weft::context<64>, weft::width<128>, weft::heads<4>, weft::depth<5>>>;
using pick = weft::auto_strategy<model, weft::global_batch<3, 64>, weft::planner::a100_nodes<1>>;
static_assert(pick::found);
int main() {}
