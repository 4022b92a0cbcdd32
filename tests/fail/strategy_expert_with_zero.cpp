// expect: weft::strategy: expert_parallel with ZeRO \(zero<1> and above\) is not supported yet
// ZeRO sharding beside expert parallelism: its step all-reduces whole gradients.
#include "weft/parallel/strategy.hpp"
using namespace weft;
constexpr std::size_t n = strategy<mesh<axis<"dp">, axis<"ep", 2>>, expert_parallel<"ep">, data_parallel<"dp", zero<1>>>::ep;
