// expect: weft::tensor_parallel: an option is repeated or is not sequence_parallel
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", zero<1>>>::valid);
