// expect: weft::strategy: tensor_parallel is given twice\. Give each part at most once\.
// Two parts of one family (each on its own axis): the strategy names the family.
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"tq", 2>>, tensor_parallel<"tp">, tensor_parallel<"tq">>::valid);
