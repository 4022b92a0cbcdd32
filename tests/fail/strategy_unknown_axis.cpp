// expect: weft::strategy: data_parallel names the axis .+xp.+, which the mesh does not have\. Use one of the mesh.+s axis names\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"xp">>::valid);
