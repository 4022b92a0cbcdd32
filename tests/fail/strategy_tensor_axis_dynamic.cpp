// expect: weft::strategy: tensor_parallel uses the axis .+tp.+, whose size is dynamic\. Give tensor_parallel, pipeline and expert_parallel axes a static size
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"tp">>, tensor_parallel<"tp">>::valid);
