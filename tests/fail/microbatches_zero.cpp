// expect: weft::microbatches: 0 micro-batches\. Use microbatches<M> with M >= 1\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", gpipe, microbatches<0>>>::valid);
