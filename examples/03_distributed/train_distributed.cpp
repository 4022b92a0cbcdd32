/*
 * 03_distributed — the same GPT trained by several processes under mpirun.
 *
 * A strategy is a type: the presets below are plans whose strategy<...> names the mesh and
 * the parallel parts. The data-parallel degree comes from the world at run time
 * (world / (tp · pp)); everything else is checked by the compiler.
 *
 *   mpirun -np 2 build/examples/train_distributed --strategy zero1 --steps 200
 *   mpirun -np 4 build/examples/train_distributed --strategy tp2      # dp2 x tp2
 *   build/examples/train_distributed --help
 *
 * Run-time errors end every rank with one line and a non-zero status: a world that does not
 * fit the mesh, a data file missing on some rank (--data may contain {rank}), a rank that dies.
 */
#include <weft/comm/mpi.hpp>
#include <weft/train/corpus.hpp>
#include <weft/train/distributed_step.hpp>
#include <weft/weft.hpp>

#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

using namespace weft;

// example-begin strategies
using model = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>>;
using micro_batch = batch<micro<8>, seq<64>>;

template <std::size_t Zero>
using dp_only = plan<model, micro_batch, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>>;
using tp2 = plan<model, micro_batch, strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>>;
using tp2_sp = plan<model, micro_batch,
                    strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                             data_parallel<"dp", zero<1>>>>;
template <class Schedule, std::size_t M>
using pp2 = plan<model, micro_batch,
                 strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", Schedule, microbatches<M>>>>;
using tp2_pp2 = plan<model, micro_batch,
                     strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                              pipeline<"pp", one_f_one_b, microbatches<4>>, data_parallel<"dp", zero<1>>>>;
// example-end strategies

// ---- the presets: a type list; --help and the dispatch are both written from it ----
// preset<Name, Plan, Summary>: the name a user types, the plan it compiles, one line for --help.
template <fixed_string Name, class Plan, fixed_string Summary>
struct preset {
  static constexpr std::string_view name = Name.view();
  static constexpr std::string_view summary = Summary.view();
  using plan_type = Plan;
};
// example-begin presets
using presets = std::tuple<
    preset<"dp", dp_only<0>, "data parallelism, every rank a full replica">,
    preset<"zero1", dp_only<1>, "data parallelism, AdamW moments sharded (ZeRO-1)">,
    preset<"zero2", dp_only<2>, "... and gradients reduce-scattered (ZeRO-2)">,
    preset<"zero3", dp_only<3>, "... and parameters sharded, gathered per use (ZeRO-3)">,
    preset<"tp2", tp2, "tensor parallelism over 2 ranks (Megatron), x dp">,
    preset<"tp2-sp", tp2_sp, "tensor + sequence parallelism over 2 ranks, ZeRO-1 over dp">,
    preset<"pp2-gpipe", pp2<gpipe, 4>, "2 pipeline stages, GPipe, 4 micro-batches, x dp">,
    preset<"pp2-1f1b", pp2<one_f_one_b, 4>, "2 pipeline stages, 1F1B, 4 micro-batches, x dp">,
    preset<"pp2-interleaved", pp2<interleaved<2>, 4>, "2 stages x 2 chunks, interleaved 1F1B, x dp">,
    preset<"tp2-pp2", tp2_pp2, "tp 2 x pp 2 (1F1B) x dp with ZeRO-1 (8 ranks: dp 2)">>;
// example-end presets

struct options {
  std::string strategy = "dp";
  std::string data;  // corpus path; "{rank}" is replaced by the world rank
  std::size_t steps = 100;
  float lr = 3e-3f;
  int fail_rank = -1;  // for testing: this rank exits with status 3 at step 2
  int kill_rank = -1;  // for testing: this rank is killed (SIGKILL) in the middle of step 2
};

static void usage() {
  std::printf("usage: mpirun -np N train_distributed [options]\n"
              "  --strategy NAME   one of the presets below                            (default dp)\n"
              "  --data PATH       corpus: text file, directory, or .bin token file ({rank} is replaced\n"
              "                    by the rank); default: the fortune(6) corpus\n"
              "  --steps N         optimizer steps                                     (default 100)\n"
              "  --lr X            peak learning rate                                  (default 3e-3)\n"
              "  --fail-rank R     (testing) rank R exits with status 3 at step 2\n"
              "  --kill-rank R     (testing) rank R is killed by SIGKILL in the middle of step 2\n"
              "presets (the data-parallel degree is the world size / (tp * pp)):\n");
  std::apply([](auto... p) { (std::printf("  %-17s %s\n", p.name.data(), p.summary.data()), ...); }, presets{});
}

template <class Plan>
int train(mpi_communicator& world, const options& o) {
  // Every rank loads its data; a failure on any rank ends all of them with one line.
  std::optional<corpus> data;
  std::string error;
  try {
    data.emplace(corpus::open(o.data, "train_distributed", world.rank()));
  } catch (const std::exception& e) {
    error = e.what();
  }
  collective_check(world, error.empty(), error, 1);

  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.schedule = {20, o.steps, 0.1f};
  // example-begin entry
  auto step = make_training_step<Plan>(world, topt);  // distributed_step<Plan, mpi_communicator>
  batch_sampler<Plan::B, Plan::S> sampler(data->all(), 1337, data_shard{step.data_rank(), step.dp_size()});
  // example-end entry
  if (world.rank() == 0) {
    std::printf("strategy %s: %d ranks = dp %zu x tp %zu x pp %zu\n", o.strategy.c_str(), world.size(), step.dp_size(),
                Plan::tp, Plan::pp);
    Plan::report();
  }
  for (std::size_t s = 0; s < o.steps; ++s) {
    if (static_cast<int>(s) == 2 && world.rank() == o.fail_rank) std::exit(3);
    if (static_cast<int>(s) == 2 && world.rank() == o.kill_rank) {
      // Mid-step: after this rank's first micro-batch, while the others wait in a collective.
      auto fill = [&, calls = 0](auto tok, auto tgt) mutable {
        if (++calls == 2) {
          std::fprintf(stderr, "killing rank %d at unix time %lld\n", world.rank(), static_cast<long long>(std::time(nullptr)));
          std::fflush(stderr);
          std::raise(SIGKILL);
        }
        sampler.next(tok, tgt);
      };
      step(fill);
    }
    const auto m = step(sampler);  // the step reads its micro-batches from the sampler
    if (world.rank() == 0 && (m.step % 10 == 0 || m.step == o.steps))
      std::printf("step %zu  loss %.4f  grad norm %.3f  %.0f tok/s\n", m.step, m.loss, m.grad_norm, m.tokens_per_second);
  }
  return 0;
}

// Runs the preset named `name`; false if there is none.
template <class... Ps>
bool dispatch(std::tuple<Ps...>, std::string_view name, mpi_communicator& world, const options& o, int& rc) {
  return ((name == Ps::name ? (rc = train<typename Ps::plan_type>(world, o), true) : false) || ...);
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--help") { if (world.rank() == 0) usage(); return 0; }
    else if (a == "--strategy") o.strategy = next();
    else if (a == "--data") o.data = next();
    else if (a == "--steps") o.steps = std::strtoul(next().c_str(), nullptr, 10);
    else if (a == "--lr") o.lr = std::strtof(next().c_str(), nullptr);
    else if (a == "--fail-rank") o.fail_rank = std::atoi(next().c_str());
    else if (a == "--kill-rank") o.kill_rank = std::atoi(next().c_str());
    else collective_check(world, false, "train_distributed: unknown option '" + a + "' (see --help)", 2);
  }
  int rc = 0;
  if (dispatch(presets{}, o.strategy, world, o, rc)) return rc;
  collective_check(world, false, "train_distributed: unknown strategy '" + o.strategy + "' (see --help)", 2);
  return 2;
}
