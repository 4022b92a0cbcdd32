// expect: weft::strategy: an argument after the mesh is not a strategy part
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, zero<1>>::valid);
