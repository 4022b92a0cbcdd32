// expect: weft::bucket_bytes: a gradient bucket of 0 bytes
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, data_parallel<"dp", bucket_bytes<0>>>::valid);
