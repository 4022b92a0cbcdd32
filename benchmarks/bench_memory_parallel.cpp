/*
 * bench_memory_parallel — the per-rank memory plan of each strategy against the real peak
 * memory of each rank.
 *
 * Every rank builds make_training_step<Plan>(world) for a GPT-2-small-sized model (width 768,
 * 12 heads, 12 layers; an 8192-token vocabulary and 32-token sequences, so that the model
 * states dominate and a step is quick), runs one step, and compares the growth of its peak
 * resident set size (getrusage) with the plan's bytes for its stage at the world's
 * data-parallel size (plan<>::memory::stage(stage, dp).total(); memory_per_rank is the peak
 * over the stages), after one step of the same strategy on a tiny model has paid the process's
 * fixed costs (BLAS buffers, MPI segments). The row shows the largest rank's planned and measured bytes and the
 * spread of measured / planned over the ranks; resident_bytes() is what the steps allocated.
 * benchmarks/bench_memory_parallel.sh runs every strategy with its rank count.
 *
 *   mpirun -np 2 build/benchmarks/bench_memory_parallel zero1
 */
#include <weft/comm/mpi.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/weft.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/resource.h>

using namespace weft;

namespace {
std::int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // KiB on Linux
}

using model = gpt<gpt_config<vocab<8192>, context<1024>, width<768>, heads<12>, depth<12>>>;
using tiny = gpt<gpt_config<vocab<256>, context<32>, width<64>, heads<4>, depth<4>>>;
template <class Strategy, class Model = model>
using plan_of = plan<Model, batch<micro<1>, seq<32>>, Strategy>;

// One step of the same strategy on a tiny model: the process's fixed costs (the BLAS library's
// buffers, MPI's shared-memory segments and communicators) are paid before the baseline.
template <class Plan>
void one_step(mpi_communicator& world) {
  auto step = make_training_step<Plan>(world);
  step.step([&](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = tgt[i] = static_cast<std::int32_t>(i % Plan::vocab_size);
  });
}
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;
using tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<2>>>;
using dp2tp2pp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                             pipeline<"pp", one_f_one_b, microbatches<2>>, data_parallel<"dp", zero<1>>>;
// dp 2 x tp 2 under ZeRO-1/2/3: from ZeRO-2 on the tp shard's block stack is held layer by layer
// (gradients; ZeRO-3 parameters too), as with data parallelism alone.
template <std::size_t Zero>
using dp2tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<Zero>>>;
// The same with 4 MiB gradient buckets: the MPI library's temporaries of the (at most two)
// buckets in flight shrink from 2 x 25 MiB to 2 x 4 MiB.
using dp2tp2pp2_b4_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                                pipeline<"pp", one_f_one_b, microbatches<2>>,
                                data_parallel<"dp", zero<1>, bucket_bytes<(std::size_t{4} << 20)>>>;

template <class Strategy>
int run(mpi_communicator& world, const char* name) {
  using Plan = plan_of<Strategy>;
  one_step<plan_of<Strategy, tiny>>(world);
  world.barrier();
  const std::int64_t before = peak_rss_bytes();
  std::int64_t row[4] = {};  // planned, resident, measured growth; on every rank
  {
    auto step = make_training_step<Plan>(world);
    std::uint64_t s = 1 + static_cast<std::uint64_t>(step.data_rank());
    step.step([&](auto tok, auto tgt) {
      for (std::size_t i = 0; i < tok.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = static_cast<std::int32_t>((s >> 33) % Plan::vocab_size);
        tgt[i] = static_cast<std::int32_t>((s >> 41) % Plan::vocab_size);
      }
    });
    row[0] = static_cast<std::int64_t>(Plan::memory::stage(step.coords().pp(), step.dp_size()).total());
    row[1] = static_cast<std::int64_t>(step.inner().resident_bytes());
    row[2] = peak_rss_bytes() - before;
  }
  // The largest rank's figures, and the spread of measured / planned (in thousandths).
  const std::int64_t ratio = row[2] * 1000 / row[0];
  std::int64_t most[3] = {row[0], row[1], row[2]}, lo = -ratio, hi = ratio;
  world.all_reduce(std::span<std::int64_t>(most, 3), reduce_op::max);
  world.all_reduce(std::span<std::int64_t>(&lo, 1), reduce_op::max);
  world.all_reduce(std::span<std::int64_t>(&hi, 1), reduce_op::max);
  if (world.rank() == 0)
    std::printf("%-12s %5d %12.1f %12.1f %12.1f %9.3f %9.3f\n", name, world.size(), static_cast<double>(most[0]) / (1 << 20),
                static_cast<double>(most[1]) / (1 << 20), static_cast<double>(most[2]) / (1 << 20),
                static_cast<double>(-lo) / 1000.0, static_cast<double>(hi) / 1000.0);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  const std::string name = argc > 1 ? argv[1] : "dp";
  if (name == "header") {
    if (world.rank() == 0)
      std::printf("%-12s %5s %12s %12s %12s %9s %9s\n", "strategy", "ranks", "plan MiB", "alloc MiB", "RSS MiB",
                  "min ratio", "max ratio");
    return 0;
  }
  if (name == "dp") return run<dp_s<0>>(world, "dp");
  if (name == "zero1") return run<dp_s<1>>(world, "zero1");
  if (name == "zero2") return run<dp_s<2>>(world, "zero2");
  if (name == "zero3") return run<dp_s<3>>(world, "zero3");
  if (name == "tp2") return run<tp2_s>(world, "tp2");
  if (name == "pp2") return run<pp2_s>(world, "pp2");
  if (name == "dp2tp2-zero1") return run<dp2tp2_s<1>>(world, "dp2tp2-zero1");
  if (name == "dp2tp2-zero2") return run<dp2tp2_s<2>>(world, "dp2tp2-zero2");
  if (name == "dp2tp2-zero3") return run<dp2tp2_s<3>>(world, "dp2tp2-zero3");
  if (name == "dp2tp2pp2") return run<dp2tp2pp2_s>(world, "dp2tp2pp2");
  if (name == "dp2tp2pp2-b4") return run<dp2tp2pp2_b4_s>(world, "dp2tp2pp2-b4");
  if (world.rank() == 0) std::fprintf(stderr, "bench_memory_parallel: unknown strategy '%s'\n", name.c_str());
  return 2;
}
