// expect: weft::pipeline: one_f_one_b needs at least as many micro-batches as stages\. Raise microbatches<M> to >= P or use gpipe\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"pp", 4>>, pipeline<"pp", one_f_one_b, microbatches<2>>>::valid);
