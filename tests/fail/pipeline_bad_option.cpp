// expect: weft::pipeline: an option is repeated or is not one of gpipe, one_f_one_b, interleaved<V>, microbatches<M>
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", gpipe, one_f_one_b>>::valid);
