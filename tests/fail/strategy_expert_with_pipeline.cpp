// expect: weft::strategy: expert_parallel cannot be combined with tensor_parallel or pipeline yet
// Expert parallelism beside a pipeline: not supported by its step.
#include "weft/parallel/strategy.hpp"
using namespace weft;
constexpr std::size_t n = strategy<mesh<axis<"ep", 2>, axis<"pp", 2>>, expert_parallel<"ep">, pipeline<"pp", microbatches<2>>>::world_size;
