// expect: weft::pipeline: one_f_one_b needs at least as many micro-batches as stages\. Raise microbatches<M> to >= P or use gpipe\.
#include "weft/parallel/schedule.hpp"
constexpr auto s = weft::make_schedule<weft::one_f_one_b, 4, 2>();  // 2 micro-batches, 4 stages
