// expect: weft::auto_strategy: no strategy fits in GPU memory
// A 1.3B-parameter GPT on one 8 GB GPU: even the leanest strategy needs more memory.
#include <weft/model/gpt.hpp>
#include <weft/planner/auto_strategy.hpp>

using model = weft::gpt<weft::gpt_config<weft::vocab<50304>, weft::context<2048>, weft::width<2048>, weft::heads<16>, weft::depth<24>>>;
struct one_small_gpu {
  static constexpr weft::planner::cluster value = [] {
    weft::planner::cluster c = weft::planner::presets::a100_80gb(1);
    c.gpus_per_node = 1;
    c.memory_bytes = 8e9;
    return c;
  }();
};
using pick = weft::auto_strategy<model, weft::global_batch<8, 2048>, one_small_gpu>;
static_assert(pick::found);
int main() {}
