// expect: weft::strategy: pipeline uses the axis .+pp.+, whose size is dynamic
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp", 2>, axis<"pp">>, pipeline<"pp", gpipe>, data_parallel<"dp">>::valid);
