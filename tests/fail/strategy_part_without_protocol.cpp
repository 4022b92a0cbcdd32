// expect: weft::strategy: a part .a type with weft_part_tag. lacks a member of the part protocol: family, axis_name, rank_order, splits_data
// A part of one's own (weft_part_tag) that forgot its rank_order and splits_data: one sentence
// naming the protocol's members, not a cascade from the rank layout.
#include "weft/parallel/strategy.hpp"
using namespace weft;
template <fixed_string Axis>
struct context_parallel {
  using weft_part_tag = void;
  static constexpr fixed_string family = "context_parallel";
  static constexpr auto axis_name = Axis;
};
static_assert(strategy<mesh<axis<"dp">, axis<"cp", 2>>, context_parallel<"cp">>::valid);
