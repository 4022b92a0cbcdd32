// expect: weft::strategy: expert_parallel names the axis .+ep.+, which the mesh does not have
// expert_parallel<"ep"> over a mesh without an "ep" axis.
#include "weft/parallel/expert_parallel.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, expert_parallel<"ep">, data_parallel<"dp">>::valid);
