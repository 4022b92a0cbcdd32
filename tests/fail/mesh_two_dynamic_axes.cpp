// expect: weft::mesh: more than one axis has a dynamic size
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(mesh<axis<"dp">, axis<"tp">>::rank == 2);
