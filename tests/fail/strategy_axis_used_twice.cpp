// expect: weft::strategy: two parts use the axis .+tp.+\. Give each part its own mesh axis\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, pipeline<"tp", gpipe, microbatches<2>>>::valid);
