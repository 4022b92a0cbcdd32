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
#include <weft/train/distributed_step.hpp>
#include <weft/weft.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fs = std::filesystem;
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

struct options {
  std::string strategy = "dp";
  std::string data;  // text file; "{rank}" is replaced by the world rank
  std::size_t steps = 100;
  float lr = 3e-3f;
  int fail_rank = -1;  // for testing: this rank exits with status 3 at step 2
};

static void usage() {
  std::printf(
      "usage: mpirun -np N train_distributed [options]\n"
      "  --strategy NAME   dp | zero1 | zero2 | zero3 | tp2 | tp2-sp | pp2-gpipe | pp2-1f1b |\n"
      "                    pp2-interleaved | tp2-pp2                          (default dp)\n"
      "  --data PATH       text file ({rank} is replaced by the rank); default: fortune corpus\n"
      "  --steps N         optimizer steps                                     (default 100)\n"
      "  --lr X            peak learning rate                                  (default 3e-3)\n"
      "  --fail-rank R     (testing) rank R exits with status 3 at step 2\n");
}

static text_corpus load(const std::string& pattern, int rank) {
  std::string path = pattern;
  if (const auto at = path.find("{rank}"); at != std::string::npos) path.replace(at, 6, std::to_string(rank));
  text_options topt;
  std::vector<fs::path> files;
  if (path.empty()) {
    if (fs::is_directory("/usr/share/games/fortunes"))
      for (const auto& e : fs::directory_iterator("/usr/share/games/fortunes"))
        if (e.is_regular_file() && !e.is_symlink() && e.path().extension().empty()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    topt.fortune_records = true;
  } else {
    files.push_back(path);
  }
  if (files.empty()) throw data_error("train_distributed: no corpus (install fortunes or pass --data)");
  return text_corpus::load(std::span<const fs::path>(files), topt);
}

template <class Plan>
int train(mpi_communicator& world, const options& o) {
  // Every rank loads its data; a failure on any rank ends all of them with one line.
  std::optional<text_corpus> corpus;
  std::string error;
  try {
    corpus.emplace(load(o.data, world.rank()));
  } catch (const std::exception& e) {
    error = e.what();
  }
  collective_check(world, error.empty(), error, 1);

  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.schedule = {20, o.steps, 0.1f};
  auto step = make_training_step<Plan>(world, topt);  // distributed_step<Plan, mpi_communicator>
  const auto c = step.coords();
  batch_sampler<Plan::B, Plan::S> sampler(token_view(*corpus), 1337, data_shard{c.dp, step.dp_size()});
  if (world.rank() == 0) {
    std::printf("strategy %s: %d ranks = dp %zu x tp %zu x pp %zu\n", o.strategy.c_str(), world.size(), step.dp_size(),
                Plan::tp, Plan::pp);
    Plan::report();
  }
  for (std::size_t s = 0; s < o.steps; ++s) {
    if (static_cast<int>(s) == 2 && world.rank() == o.fail_rank) std::exit(3);
    const auto m = step.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); });
    if (world.rank() == 0 && (m.step % 10 == 0 || m.step == o.steps))
      std::printf("step %zu  loss %.4f  grad norm %.3f  %.0f tok/s\n", m.step, m.loss, m.grad_norm, m.tokens_per_second);
  }
  return 0;
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
    else collective_check(world, false, "train_distributed: unknown option '" + a + "' (see --help)", 2);
  }
  if (o.strategy == "dp") return train<dp_only<0>>(world, o);
  if (o.strategy == "zero1") return train<dp_only<1>>(world, o);
  if (o.strategy == "zero2") return train<dp_only<2>>(world, o);
  if (o.strategy == "zero3") return train<dp_only<3>>(world, o);
  if (o.strategy == "tp2") return train<tp2>(world, o);
  if (o.strategy == "tp2-sp") return train<tp2_sp>(world, o);
  if (o.strategy == "pp2-gpipe") return train<pp2<gpipe, 4>>(world, o);
  if (o.strategy == "pp2-1f1b") return train<pp2<one_f_one_b, 4>>(world, o);
  if (o.strategy == "pp2-interleaved") return train<pp2<interleaved<2>, 4>>(world, o);
  if (o.strategy == "tp2-pp2") return train<tp2_pp2>(world, o);
  collective_check(world, false, "train_distributed: unknown strategy '" + o.strategy + "' (see --help)", 2);
  return 2;
}
