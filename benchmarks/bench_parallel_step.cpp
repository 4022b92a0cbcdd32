/*
 * bench_parallel_step — tokens/s of each strategy at one fixed global batch (16 sequences of
 * 64 tokens per step), next to what the plan predicts: the pipeline bubble and the bytes each
 * rank sends per step on each mesh axis. Run each strategy under mpirun with its rank count;
 * benchmarks/bench_parallel_step.sh runs them all.
 *
 *   mpirun -np 2 build/benchmarks/bench_parallel_step zero1 [steps]
 */
#include <weft/comm/mpi.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/weft.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace weft;

using model = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>>;
template <std::size_t B>
using mb = batch<micro<B>, seq<64>>;
constexpr std::size_t global_sequences = 16;

template <class Plan>
int run(mpi_communicator& world, const char* name, std::size_t steps) {
  train_options o;
  distributed_step<Plan, mpi_communicator> step(world, o);
  const std::size_t dp = step.dp_size();
  if (Plan::B * Plan::microbatches * dp != global_sequences) {
    if (world.rank() == 0)
      std::fprintf(stderr, "bench_parallel_step: %s needs %zu ranks for the fixed global batch\n", name,
                   global_sequences / (Plan::B * Plan::microbatches) * Plan::tp * Plan::pp);
    return 2;
  }
  std::uint64_t s = 1 + static_cast<std::uint64_t>(step.data_rank());
  auto fill = [&](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      tok[i] = static_cast<std::int32_t>((s >> 33) % 256);
      tgt[i] = static_cast<std::int32_t>((s >> 41) % 256);
    }
  };
  step.step(fill);  // warm-up
  double seconds = 0;
  for (std::size_t i = 0; i < steps; ++i) seconds += step.step(fill).seconds;
  const double per_step = seconds / static_cast<double>(steps);
  const step_volume v = Plan::volume::stage(0, dp);
  double bubble = 0;  // the schedule simulation's (stages·makespan − busy) / busy
  if constexpr (Plan::pp > 1) {
    using S = typename Plan::strategy_type;
    constexpr auto r = schedule_report_v<typename S::schedule_type, Plan::pp, S::microbatches>;
    bubble = static_cast<double>(r.bubble_fraction.num) / static_cast<double>(r.bubble_fraction.den);
  }
  if (world.rank() == 0)
    std::printf("%-10s %5d %10.1f %10.0f %8.3f %12llu %12llu %12llu\n", name, world.size(), per_step * 1e3,
                static_cast<double>(global_sequences * 64) / per_step, bubble,
                static_cast<unsigned long long>(v.dp_bytes), static_cast<unsigned long long>(v.tp_bytes),
                static_cast<unsigned long long>(v.pp_bytes));
  return 0;
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  const std::string name = argc > 1 ? argv[1] : "dp";
  const std::size_t steps = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 5;
  if (name == "header") {
    if (world.rank() == 0)
      std::printf("%-10s %5s %10s %10s %8s %12s %12s %12s\n", "strategy", "ranks", "ms/step", "tokens/s", "bubble",
                  "dp B/step", "tp B/step", "pp B/step");
    return 0;
  }
  if (name == "single") return run<plan<model, mb<16>>>(world, "single", steps);
  if (name == "dp") return run<plan<model, mb<8>, strategy<mesh<axis<"dp">>>>>(world, "dp", steps);
  if (name == "zero1") return run<plan<model, mb<8>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<1>>>>>(world, "zero1", steps);
  if (name == "zero2") return run<plan<model, mb<8>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<2>>>>>(world, "zero2", steps);
  if (name == "zero3") return run<plan<model, mb<8>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<3>>>>>(world, "zero3", steps);
  if (name == "tp2") return run<plan<model, mb<16>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>>(world, "tp2", steps);
  if (name == "tp2-sp")
    return run<plan<model, mb<16>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>>>>(world, "tp2-sp", steps);
  using pp_mesh = mesh<axis<"dp">, axis<"pp", 2>>;
  if (name == "pp2-gpipe") return run<plan<model, mb<4>, strategy<pp_mesh, pipeline<"pp", gpipe, microbatches<4>>>>>(world, "pp2-gpipe", steps);
  if (name == "pp2-1f1b") return run<plan<model, mb<4>, strategy<pp_mesh, pipeline<"pp", one_f_one_b, microbatches<4>>>>>(world, "pp2-1f1b", steps);
  if (name == "pp2-inter") return run<plan<model, mb<4>, strategy<pp_mesh, pipeline<"pp", interleaved<2>, microbatches<4>>>>>(world, "pp2-inter", steps);
  if (name == "dp2-pp2") return run<plan<model, mb<2>, strategy<pp_mesh, pipeline<"pp", one_f_one_b, microbatches<4>>>>>(world, "dp2-pp2", steps);
  using tppp_mesh = mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>;
  if (name == "tp2-pp2")
    return run<plan<model, mb<4>, strategy<tppp_mesh, tensor_parallel<"tp">, pipeline<"pp", one_f_one_b, microbatches<4>>>>>(world, "tp2-pp2", steps);
  if (name == "dp2-tp2-pp2")
    return run<plan<model, mb<2>, strategy<tppp_mesh, tensor_parallel<"tp">, pipeline<"pp", one_f_one_b, microbatches<4>>>>>(world, "dp2tp2pp2", steps);
  if (name == "dp2-tp2") return run<plan<model, mb<8>, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>>(world, "dp2-tp2", steps);
  if (world.rank() == 0) std::fprintf(stderr, "bench_parallel_step: unknown strategy %s\n", name.c_str());
  return 2;
}
