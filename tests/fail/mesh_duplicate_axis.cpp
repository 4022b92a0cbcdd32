// expect: weft::mesh: an axis name occurs twice
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(mesh<axis<"dp">, axis<"tp", 2>, axis<"dp", 4>>::rank == 3);
