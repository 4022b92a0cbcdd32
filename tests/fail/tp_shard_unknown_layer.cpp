// expect: weft::tp_shard: no tensor-parallel form is known for this layer
#include "weft/model/layer.hpp"
#include "weft/parallel/tensor_parallel.hpp"
using namespace weft;
struct my_layer : stateless_layer {};
using shard = tp_shard_t<my_layer, 2>;
