// The memory a rank holds is what the plan says (issue #7): under mpirun each rank builds
// make_training_step<Plan>(world) for the preset named on the command line and compares what
// it really allocated — the local step's arena plus data_parallel_step's shard vectors
// (resident_bytes()) — with the plan's per-rank memory model at the world's data-parallel size
// (memory::stage(stage, dp), whose peak over the stages is plan<>::memory_per_rank):
//   * the model states exactly: the arena's parameter and gradient sections (under ZeRO-2/3 with
//     data parallelism alone or over a tensor-parallel shard (dp2tp2-zero2, dp2tp2-zero3, and
//     with sequence parallelism dp2tp2sp-zero3): the layers outside the block stack and two
//     block windows of each; and, without ZeRO,
//     its moment sections) plus the shards equal ZeRO's states plus the working buffers
//     (memory_model.hpp: model_state_bytes() + working_bytes) on the dp rank with the largest
//     shard, and no more on the others;
//   * under ZeRO >= 1 the arena has no moment sections: the shards are the only copy;
//   * the whole: resident_bytes() within `tolerance` of stage(...).allocated_bytes() (activations
//     are Korthikanti's count in the plan, the executor's own kept buffers in the arena); total()
//     is that plus comm_bytes, the MPI library's temporaries inside the gradient collectives
//     (not the step's allocation: bench_memory_parallel measures them in the peak RSS). With the
//     whole gradient in one bucket (this small model) they are the whole gradient under ZeRO-0/1.
//   * mixed precision (the *-bf16 presets, precision<bf16, f32>): the same, with bf16
//     parameters and gradients and f32 master weights and moments (ZeRO's 2 + 2 + 12 bytes per
//     parameter): the arena's f32 sections under zero<0>, data_parallel_step's f32 shards (and,
//     under zero<3>, its bf16 parameter shard) from zero<1> on; tp2-bf16 and pp2-bf16: the
//     f32 master and moments of a tp shard's and a pipeline stage's arena.
//   mpirun -np N mpi_memory_per_rank <dp|zero1|zero2|zero3|tp2|pp2|dp2tp2pp2|dp2tp2-zero2|dp2tp2-zero3|dp2tp2sp-zero3|dp2tp2-zero3-bf16|
//                                     dp-bf16|zero1-bf16|zero2-bf16|zero3-bf16|tp2-bf16|pp2-bf16>
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

using namespace weft;

namespace {
// Wide enough that the model states dominate the activations, as in a real run.
using model_t = gpt<gpt_config<vocab<512>, context<16>, width<128>, heads<4>, depth<4>>>;
template <class Strategy, class Precision = precision<float>>
using plan_of = plan<model_t, batch<micro<2>, seq<16>>, Precision, Strategy>;
using mixed = precision<bf16, f32>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;
using tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
template <std::size_t Zero, class... Sp>
using dp_tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", Sp...>, data_parallel<"dp", zero<Zero>>>;
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<2>>>;
using dp2tp2pp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                             pipeline<"pp", one_f_one_b, microbatches<2>>, data_parallel<"dp", zero<1>>>;
constexpr double tolerance = 0.10;

template <class Plan>
void run(mpi_communicator& world, const char* name) {
  auto step = make_training_step<Plan>(world);
  auto& dp = step.inner();
  using dp_t = std::remove_cvref_t<decltype(dp)>;
  constexpr std::size_t zero = dp_t::zero_stage;
  using T = typename Plan::value_type;
  using M = typename Plan::master_type;
  constexpr bool mixed = !std::is_same_v<T, M>;
  static_assert(std::is_same_v<typename dp_t::M, M>);  // the shards are in the master type
  const std::size_t dpn = step.dp_size(), stage = step.coords().pp();
  const stage_memory planned = Plan::memory::stage(stage, dpn);

  // What the rank holds: the arena, and the shard vectors around it.
  const std::size_t arena = dp.local().resident_bytes(), resident = dp.resident_bytes(), shards = resident - arena;
  const std::size_t n = detail::parameter_block_size_of(dp.local());  // the parameter block
  // params (ZeRO-3 layer by layer: outside the block stack, and two one-block windows), grads
  // (ZeRO-2/3 layer by layer: the same), + master under mixed precision, m, v
  std::size_t held = n, held_grads = n;
  if constexpr (dp_t::layer_by_layer) {
    held = dp.local().params().size() + dp.local().param_windows().size();
    WEFT_CHECK(held < n);
  }
  if constexpr (dp_t::grads_by_layer) {
    held_grads = dp.local().grads().size() + dp.local().grad_windows().size();
    WEFT_CHECK(held_grads < n);
  }
  // 4 blocks: windows pay, on a single rank and on a tensor-parallel shard (not a pipeline stage)
  WEFT_CHECK(dp_t::grads_by_layer == (zero >= 2 && Plan::pp == 1));
  WEFT_CHECK(dp_t::layer_by_layer == (zero == 3 && Plan::pp == 1));
  const std::size_t arena_states = (held + held_grads) * sizeof(T) + (zero == 0 ? n * (mixed ? 3 : 2) * sizeof(M) : 0);
  const std::size_t planned_states = planned.model_state_bytes() + planned.working_bytes;
  WEFT_CHECK(arena >= arena_states);  // the arena really holds them (a tp shard's, a stage's too)
  WEFT_CHECK(dp_t::local_step::optimizer_state_in_arena == (zero == 0));
  WEFT_CHECK(dp.moments_m().size() == (zero >= 1 ? dp.shard_size() : 0));
  WEFT_CHECK(dp.master_shard().size() == (zero == 3 || (mixed && zero >= 1) ? dp.shard_size() : 0));
  if (step.coords().dp() == 0) WEFT_CHECK(arena_states + shards == planned_states);  // the largest shard
  else WEFT_CHECK(arena_states + shards <= planned_states);
  const double ratio = static_cast<double>(resident) / static_cast<double>(planned.allocated_bytes());
  WEFT_CHECK(ratio >= 1.0 - tolerance && ratio <= 1.0 + tolerance);
  // The collectives' temporaries: counted in the total, none without data parallelism, and with
  // every bucket in flight at once (at most gradient_buckets_in_flight) the whole gradient block.
  WEFT_CHECK(planned.total() == planned.allocated_bytes() + planned.comm_bytes);
  WEFT_CHECK((planned.comm_bytes == 0) == (dpn == 1));
  if (zero <= 1 && dpn > 1 && dp.buckets() <= gradient_buckets_in_flight) WEFT_CHECK(planned.comm_bytes == n * sizeof(T));

  // The peak over the ranks against memory_per_rank's definition (the largest stage), less comm_bytes.
  std::size_t peak_planned = 0;
  for (std::size_t s = 0; s < Plan::pp; ++s) peak_planned = std::max(peak_planned, Plan::memory::stage(s, dpn).allocated_bytes());
  std::int64_t peak = static_cast<std::int64_t>(resident);
  world.all_reduce(std::span<std::int64_t>(&peak, 1), reduce_op::max);
  const double peak_ratio = static_cast<double>(peak) / static_cast<double>(peak_planned);
  WEFT_CHECK(peak_ratio >= 1.0 - tolerance && peak_ratio <= 1.0 + tolerance);
  for (int r = 0; r < world.size(); ++r) {
    if (r == world.rank())
      std::printf("%s rank %d (stage %zu, dp %zu of %zu): arena %zu + shards %zu = %zu B; planned %zu B (states %zu, "
                  "working %zu, activations %zu, comm %zu); ratio to allocated %.3f\n",
                  name, r, stage, step.coords().dp(), dpn, arena, shards, resident, planned.total(),
                  planned.model_state_bytes(), planned.working_bytes, planned.activations_total(), planned.comm_bytes, ratio);
    std::fflush(stdout);
    world.barrier();
  }
}
}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string preset = argc > 1 ? argv[1] : "";
  test::require_args(world,
                     argc == 2 && test::one_of(preset, {"dp", "zero1", "zero2", "zero3", "tp2", "pp2", "dp2tp2pp2",
                                                        "dp2tp2-zero2", "dp2tp2-zero3", "dp2tp2sp-zero3", "dp2tp2-zero3-bf16", "dp-bf16",
                                                        "zero1-bf16", "zero2-bf16", "zero3-bf16", "tp2-bf16", "pp2-bf16"}),
                     "memory_per_rank: usage: <dp|zero1|zero2|zero3|tp2|pp2|dp2tp2pp2|dp2tp2-zero2|dp2tp2-zero3|dp2tp2sp-zero3|dp2tp2-zero3-bf16|"
                     "dp-bf16|zero1-bf16|zero2-bf16|zero3-bf16|tp2-bf16|pp2-bf16>",
                     argc, argv);
  if (preset == "dp") run<plan_of<dp_s<0>>>(world, "dp");
  else if (preset == "zero1") run<plan_of<dp_s<1>>>(world, "zero1");
  else if (preset == "zero2") run<plan_of<dp_s<2>>>(world, "zero2");
  else if (preset == "zero3") run<plan_of<dp_s<3>>>(world, "zero3");
  else if (preset == "tp2") run<plan_of<tp2_s>>(world, "tp2");
  else if (preset == "pp2") run<plan_of<pp2_s>>(world, "pp2");
  else if (preset == "dp2tp2-zero2") run<plan_of<dp_tp2_s<2>>>(world, "dp2tp2-zero2");
  else if (preset == "dp2tp2-zero3") run<plan_of<dp_tp2_s<3>>>(world, "dp2tp2-zero3");
  else if (preset == "dp2tp2sp-zero3") run<plan_of<dp_tp2_s<3, sequence_parallel>>>(world, "dp2tp2sp-zero3");
  else if (preset == "dp2tp2-zero3-bf16") run<plan_of<dp_tp2_s<3>, mixed>>(world, "dp2tp2-zero3-bf16");
  else if (preset == "dp-bf16") run<plan_of<dp_s<0>, mixed>>(world, "dp-bf16");
  else if (preset == "zero1-bf16") run<plan_of<dp_s<1>, mixed>>(world, "zero1-bf16");
  else if (preset == "zero2-bf16") run<plan_of<dp_s<2>, mixed>>(world, "zero2-bf16");
  else if (preset == "zero3-bf16") run<plan_of<dp_s<3>, mixed>>(world, "zero3-bf16");
  else if (preset == "tp2-bf16") run<plan_of<tp2_s, mixed>>(world, "tp2-bf16");
  else if (preset == "pp2-bf16") run<plan_of<pp2_s, mixed>>(world, "pp2-bf16");
  else run<plan_of<dp2tp2pp2_s>>(world, "dp2tp2pp2");
  return test::finish(world, ("memory_per_rank " + preset).c_str());
}
