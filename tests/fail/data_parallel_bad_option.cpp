// expect: weft::data_parallel: an option is repeated or is not one of zero<S>, bucket_bytes<N>
#include "weft/parallel/strategy.hpp"
using namespace weft;
static_assert(strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<1>, zero<2>>>::valid);
