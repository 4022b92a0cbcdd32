// recompute<> is executed under tensor and pipeline parallelism, not only counted: the shard a
// tensor-parallel rank runs and the layers of each pipeline stage keep fewer activations.
#include <weft/comm/single.hpp>
#include <weft/weft.hpp>

using namespace weft;

namespace {
using m = gpt<gpt_config<vocab<64>, context<32>, width<64>, heads<4>, depth<4>>>;
using mb = batch<micro<2>, seq<32>>;
template <class... Parts>
using tp_plan = tensor_parallel_plan<plan<m, mb, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, Parts...>>>;
static_assert(tp_plan<recompute<full>>::kept_count < tp_plan<recompute<selective>>::kept_count);
static_assert(tp_plan<recompute<selective>>::kept_count < tp_plan<>::kept_count);
static_assert(tp_plan<recompute<full>>::param_count == tp_plan<>::param_count);

template <class... Parts>
using pp_plan = plan<m, mb, strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>, Parts...>>;
template <class Plan, std::size_t Stage>
using stage = typename pipeline_step<Plan, 2, one_f_one_b, 4, single_world>::template stage_type<Stage, 0>;
template <class Plan, std::size_t Stage>
inline constexpr std::size_t stage_kept = stage<Plan, Stage>::template kept_count<2, 32>;
static_assert(stage_kept<pp_plan<recompute<full>>, 0> < stage_kept<pp_plan<recompute<selective>>, 0>);
static_assert(stage_kept<pp_plan<recompute<selective>>, 0> < stage_kept<pp_plan<>, 0>);
static_assert(stage_kept<pp_plan<recompute<full>>, 1> < stage_kept<pp_plan<>, 1>);  // the stage with the tied head
}  // namespace

// Sequence parallelism inside a pipeline is executed too: the activations a stage keeps and
// sends are its S/tp slice of each sequence.
namespace {
using sp_pp_plan = plan<m, mb, strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                                         pipeline<"pp", one_f_one_b, microbatches<4>>>>;
template <bool SP>
using sp_stage = pipeline_step<sp_pp_plan, 2, one_f_one_b, 4, single_world, 2, SP>;
static_assert(sp_stage<true>::local_seq == 16 && sp_stage<false>::local_seq == 32);
static_assert(sp_stage<true>::layout_of(0).slot_bytes < sp_stage<false>::layout_of(0).slot_bytes);
}  // namespace
