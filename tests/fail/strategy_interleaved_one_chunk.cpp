// expect: weft::pipeline: interleaved needs at least 2 model chunks per stage\. Use interleaved<V> with V >= 2
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", interleaved<1>, microbatches<4>>>::valid);
