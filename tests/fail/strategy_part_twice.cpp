// expect: weft::strategy: recompute<>, precision<> or flash_attention is given twice\. Give each at most once\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, recompute<full>, recompute<selective>>::valid);
