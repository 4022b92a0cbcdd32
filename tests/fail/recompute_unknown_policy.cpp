// expect: weft::recompute: unknown policy\. Use recompute<none>, recompute<selective> or recompute<full>\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, recompute<int>>::valid);
