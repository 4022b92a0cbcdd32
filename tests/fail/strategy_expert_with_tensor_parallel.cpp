// expect: weft::strategy: expert_parallel cannot be combined with tensor_parallel or pipeline yet\. Use expert_parallel with data_parallel only
// Expert parallelism beside tensor parallelism: not supported by its step.
#include "weft/parallel/strategy.hpp"
using namespace weft;
constexpr std::size_t n = strategy<mesh<axis<"ep", 2>, axis<"tp", 2>>, expert_parallel<"ep">, tensor_parallel<"tp">>::world_size;
