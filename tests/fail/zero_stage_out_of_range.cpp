// expect: weft::zero: ZeRO has stages 0 to 3\. Use zero<0>, zero<1>, zero<2> or zero<3>\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<4>>>::valid);
