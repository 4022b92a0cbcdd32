// expect: weft::strategy: a part is given twice\. Give each of data_parallel, tensor_parallel, pipeline, expert_parallel, recompute and precision at most once\.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, recompute<full>, recompute<selective>>::valid);
