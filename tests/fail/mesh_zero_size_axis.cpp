// expect: weft::mesh: an axis has size 0
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(mesh<axis<"dp">, axis<"tp", 0>>::rank == 2);
