// expect: weft::strategy: the mesh axis .+ep.+ is used by no part\. Give it a part or remove it from the mesh
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"ep", 2>>, data_parallel<"dp">>::valid);
