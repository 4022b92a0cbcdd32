// expect: weft::recompute: selective recomputation cannot see inside this layer
#include "weft/parallel/recompute.hpp"
// A layer of the user's own structure (no leaf_layer base, no weft composition): attention
// inside it would keep its probabilities while the memory model counted them dropped.
struct my_block {
  static constexpr std::size_t in_width = 8, out_width = 8, param_count = 0;
};
using mapped = weft::with_recompute_t<my_block, weft::selective>;
static_assert(mapped::in_width == 8);
