// expect: weft::model_partition: a layer with parameters is neither a weft composition nor a
#include "weft/model/layer.hpp"
#include "weft/parallel/partition.hpp"
#include "weft/model/linear.hpp"
// A hand-written composite holding a linear's parameters but deriving from nothing weft knows:
// under tp 2 the plan used to count it replicated on every rank; now it asks how it is cut.
struct my_composite {
  static constexpr std::size_t in_width = 8, out_width = 8, param_count = weft::linear<8, 8, weft::role::column>::param_count;
};
static_assert(weft::model_partition<my_composite, 2>::whole.params.per_rank > 0);
