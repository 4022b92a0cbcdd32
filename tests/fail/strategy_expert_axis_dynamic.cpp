// expect: weft::strategy: expert_parallel uses the axis .+ep.+, whose size is dynamic
// The expert-parallel degree must be known at compile time (it sizes every rank's experts).
#include "weft/parallel/expert_parallel.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp", 2>, axis<"ep">>, expert_parallel<"ep">, data_parallel<"dp">>::valid);
