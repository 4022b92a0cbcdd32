// expect: weft::strategy: tensor_parallel uses the axis .+tp.+, whose size is dynamic\. Give it a static size, e\.g\. axis<.+tp.+, 2>; only the data-parallel axis may be dynamic\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"tp">>, tensor_parallel<"tp">>::valid);
