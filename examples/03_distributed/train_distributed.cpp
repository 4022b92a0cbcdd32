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
 *   mpirun -np 8 ... --strategy tp2-pp2 --steps 200 --checkpoint ckpt --save-every 50 --keep 2
 *   mpirun -np 4 ... --strategy zero3 --steps 300 --resume ckpt   # resharded on load
 *
 * Run-time errors end every rank with one line and a non-zero status: a world that does not
 * fit the mesh, a data file missing on some rank (--data may contain {rank}), a rank that dies.
 * Before the first step: every option value (parsed in full and range-checked, status 2; the
 * parser is train_gpt's, weft/train/cli.hpp), every token id of the corpus against the model's
 * vocabulary, a corpus shorter than a batch window, a --checkpoint that cannot be written.
 * 50 skipped steps in a row stop the run (status 4).
 * SIGTERM, SIGINT or SIGUSR1 on any rank ends every rank after the same step, with a checkpoint
 * (--checkpoint) and status 0. Through the launcher, start long jobs with tools/weft-mpirun: it
 * turns its SIGTERM/SIGINT (a scheduler, Ctrl-C) into a SIGUSR1 that mpirun forwards, where
 * mpirun 4.1 would abort the job on its own SIGTERM (SIGKILL 2 s later, status 1). A step whose
 * loss or gradient norm is not finite on any rank is skipped by all (docs/running_long_jobs.md).
 */
#include <weft/comm/mpi.hpp>
#include <weft/data/corpus.hpp>
#include <weft/io/distributed_checkpoint.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/train/preemption.hpp>
#include <weft/train/cli.hpp>
#include <weft/train/stability.hpp>
#include <weft/weft.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
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
// Mixed precision: bf16 parameters, gradients and activations, f32 master weights and moments
// (sharded by ZeRO), f32 norm statistics; checkpoints hold the f32 master.
using zero1_bf16 = plan<model, micro_batch, precision<bf16, f32>, strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<1>>>>;
using tp2_pp2_bf16 = plan<model, micro_batch, precision<bf16, f32>,
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
    preset<"tp2-pp2", tp2_pp2, "tp 2 x pp 2 (1F1B) x dp with ZeRO-1 (8 ranks: dp 2)">,
    preset<"zero1-bf16", zero1_bf16, "ZeRO-1 in bf16 with f32 master weights and moments">,
    preset<"tp2-pp2-bf16", tp2_pp2_bf16, "tp 2 x pp 2 x dp (ZeRO-1) in bf16, f32 master weights">>;
// example-end presets

struct options {
  std::string strategy = "dp";
  std::string data;  // corpus path; "{rank}" is replaced by the world rank
  std::size_t steps = 100;
  float lr = 3e-3f;
  int fail_rank = -1;  // for testing: this rank exits with status 3 at step 2
  int kill_rank = -1;  // for testing: this rank is killed (SIGKILL) in the middle of step 2
  std::string metrics;  // JSON lines, one object per step (rank 0 writes)
  bool spike_guard = false;
  std::size_t rollback_after = 3;  // consecutive spikes that roll back to the last checkpoint (0: never)
  int spike_rank = -1;             // for testing: this rank's loss and gradients x1000 ...
  std::size_t spike_at = 0, spike_steps = 0;  // ... in step attempts [N, N + K) (1-based)
  int nan_rank = -1, signal_rank = -1;  // for testing: NaN gradients / SIGTERM on this rank ...
  std::size_t nan_at = 0, signal_at = 0;  // ... in step attempt N / optimizer step N (1-based)
  std::size_t step_delay_ms = 0;  // for testing: every rank sleeps this long in every step (a slow step)
  std::string checkpoint, resume;          // checkpoint root to save into / to resume from
  std::size_t save_every = 0, keep = 0;    // save every N steps (0: at the end only); keep the last N (0: all)
};

static void usage() {
  std::printf("usage: mpirun -np N train_distributed [options]\n"
              "  --strategy NAME   one of the presets below                            (default dp)\n"
              "  --data PATH       corpus: text file, directory, or .bin token file ({rank} is replaced\n"
              "                    by the rank); default: the fortune(6) corpus\n"
              "  --steps N         optimizer steps                                     (default 100)\n"
              "  --lr X            peak learning rate, in (0, 10]                      (default 3e-3)\n"
              "  --fail-rank R     (testing) rank R exits with status 3 at step 2\n"
              "  --kill-rank R     (testing) rank R is killed by SIGKILL in the middle of step 2\n"
              "  --metrics FILE    JSON lines, one object per step (written by rank 0)\n"
              "  --spike-guard     skip steps whose loss or gradient norm spikes (z-score, every rank agrees);\n"
              "                    with --checkpoint, roll back to the last checkpoint after several in a row\n"
              "  --spike-rollback-after K  consecutive spikes that roll back; 0 never     (default 3)\n"
              "  --spike-rank R --spike-at N --spike-steps K  (testing) rank R's loss and gradients x1000 in\n"
              "                    its step attempts N..N+K-1\n"
              "  --nan-rank R --nan-at N        (testing) rank R's gradients are NaN in its N-th step call\n"
              "  --signal-rank R --signal-at N  (testing) rank R raises SIGTERM during step N\n"
              "  --step-delay-ms N (testing) every rank sleeps N ms in every step (a step longer than mpirun's kill timeout)\n"
              "  --checkpoint DIR  save checkpoints into DIR/step-N/ (DIR/latest names the newest): at the\n"
              "                    end, every --save-every steps, and when preempted\n"
              "  --save-every N    save every N optimizer steps                        (default 0: at the end)\n"
              "  --keep N          keep the newest N checkpoints in DIR                (default 0: all)\n"
              "  --resume DIR      resume from DIR's latest checkpoint (or a DIR/step-N/), saved under any\n"
              "                    preset and world size; --steps counts from 0, so training continues to N\n"
              "presets (the data-parallel degree is the world size / (tp * pp)):\n");
  std::apply([](auto... p) { (std::printf("  %-17s %s\n", p.name.data(), p.summary.data()), ...); }, presets{});
}

// A number for JSON: NaN and infinities are not JSON numbers, so they are written as null.
static std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
}

// Whether every rank can write into the checkpoint root: "" if so, else the one-line reason.
// Run before the first step, so an unwritable --checkpoint is not found at the first save.
static std::string checkpoint_dir_problem(const std::string& root, int rank) {
  namespace fs = std::filesystem;
  const std::string head = "train_distributed: --checkpoint '" + root + "' cannot be written";
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return head + ": cannot create the directory (" + ec.message() + ")";
  if (!fs::is_directory(root, ec)) return head + ": not a directory";
  const fs::path probe = fs::path(root) / (".write-check-rank-" + std::to_string(rank));
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) return head + ": cannot create a file in it (" + std::strerror(errno) + ")";
  const bool written = std::fputc('x', f) != EOF;
  const bool closed = std::fclose(f) == 0;
  fs::remove(probe, ec);
  if (!written || !closed) return head + ": cannot write a file in it";
  return {};
}

template <class Plan>
int train(mpi_communicator& world, const options& o) {
  // Every rank loads its data: the file, every token id against the model's vocabulary (one
  // pass), and one batch window; a failure on any rank ends all of them with one line.
  std::optional<corpus> data;
  std::string error;
  try {
    data.emplace(corpus::open(o.data, "train_distributed", world.rank(), Plan::vocab_size));
    batch_sampler<Plan::B, Plan::S> probe(data->all(), 0);  // throws if the corpus is shorter than a window
  } catch (const std::exception& e) {
    error = e.what();
    if (data && !error.starts_with("train_distributed")) {  // a sampler error does not name the file
      std::string path = o.data.empty() ? std::string("the fortune corpus") : o.data;
      if (const auto at = path.find("{rank}"); at != std::string::npos) path.replace(at, 6, std::to_string(world.rank()));
      error = "train_distributed: '" + path + "' (rank " + std::to_string(world.rank()) + "): " + error;
    }
  }
  collective_check(world, error.empty(), error, 1);
  // The checkpoint root must take files on every rank before any step is spent.
  if (!o.checkpoint.empty()) {
    const std::string problem = checkpoint_dir_problem(o.checkpoint, world.rank());
    collective_check(world, problem.empty(), problem, 1);
  }

  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.schedule = {20, o.steps, 0.1f};
  if (world.rank() == o.nan_rank && o.nan_at > 0)  // testing: this rank's gradients are NaN once
    topt.fault = [at = o.nan_at - 1](std::size_t call) { return call == at ? std::numeric_limits<double>::quiet_NaN() : 1.0; };
  if (world.rank() == o.spike_rank && o.spike_at > 0)  // testing: a run of bad batches on this rank
    topt.fault = [a = o.spike_at - 1, k = o.spike_steps](std::size_t call) { return call >= a && call < a + k ? 1e3 : 1.0; };
  // example-begin entry
  auto step = make_training_step<Plan>(world, topt);  // distributed_step<Plan, mpi_communicator>
  batch_sampler<Plan::B, Plan::S> sampler(data->all(), 1337, data_shard{step.data_rank(), step.dp_size()});
  // example-end entry
  if (world.rank() == 0) {
    std::printf("strategy %s: %d ranks = dp %zu x tp %zu x pp %zu\n", o.strategy.c_str(), world.size(), step.dp_size(),
                Plan::tp, Plan::pp);
    Plan::report();
  }
  // ---- checkpoints: saved in slices by every rank, resumed under any preset (resharded) ----
  std::size_t saved_at = 0;  // the step of the last save (0: none yet; a rollback needs one)
  // example-begin checkpoint
  auto save = [&] {  // collective; a failure is one line on every rank
    std::string error;
    try {
      const auto dir = save_checkpoint(step, world, o.checkpoint, checkpoint_state{sampler.state()},
                                       checkpoint_options{.keep_last = o.keep});
      saved_at = step.step_count();
      if (world.rank() == 0) std::printf("saved %s\n", dir.c_str());
    } catch (const checkpoint_error& e) {
      error = e.what();
    }
    collective_check(world, error.empty(), error, 1);
  };
  if (!o.resume.empty()) {
    std::string error;
    try {
      sampler.set_state(load_checkpoint(step, world, o.resume).sampler);  // parameters, moments, step, position
    } catch (const checkpoint_error& e) {
      error = e.what();  // the same line on every rank; the step is unchanged
    }
    collective_check(world, error.empty(), error, 1);
    if (world.rank() == 0) std::printf("resumed from %s at step %zu\n", o.resume.c_str(), step.step_count());
  }
  // example-end checkpoint
  // ---- long jobs: the stop flag, the guard, the metrics stream ----
  preemption::install();  // SIGTERM/SIGINT/SIGUSR1: set a flag; the ranks agree on it after each step
  std::optional<spike_guard> guard;
  // Rollback needs somewhere to roll back to: without --checkpoint the guard only skips.
  if (o.spike_guard) guard.emplace(spike_guard_options{.rollback_after = o.checkpoint.empty() ? 0 : o.rollback_after});
  std::size_t rollbacks = 0;  // rollbacks done
  std::size_t consecutive_skips = 0;
  constexpr std::size_t max_consecutive_skips = 50;  // as in train_gpt
  std::FILE* metrics = world.rank() == 0 && !o.metrics.empty() ? std::fopen(o.metrics.c_str(), "w") : nullptr;
  // A skipped step is not counted: loop until `steps` updates (s counts attempts).
  for (std::size_t s = 0; step.step_count() < o.steps; ++s) {
    if (step.step_count() + 1 == o.signal_at && world.rank() == o.signal_rank) std::raise(SIGTERM);  // testing
    if (o.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_delay_ms));  // testing
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
    // the step reads its micro-batches from the sampler; a guard, if any, may reject the update
    const std::size_t rollbacks_asked = guard ? guard->rollbacks() : 0;
    const auto m = guard ? step.step(sampler, *guard) : step(sampler);
    const bool spike = guard && m.skipped && !m.nonfinite;
    if (world.rank() == 0 && m.skipped)
      std::printf("step %zu skipped on every rank (%s: loss %.4g, grad norm %.4g)\n", m.step + 1,
                  m.nonfinite ? "not finite" : "spike", m.loss, m.grad_norm);
    if (world.rank() == 0 && !m.skipped && (m.step % 10 == 0 || m.step == o.steps))
      std::printf("step %zu  loss %.4f  grad norm %.3f  %.0f tok/s\n", m.step, m.loss, m.grad_norm, m.tokens_per_second);
    if (metrics) {
      std::fprintf(metrics,
                   "{\"step\":%zu,\"loss\":%s,\"grad_norm\":%s,\"lr\":%.6g,\"ms\":%.3f,\"tokens_per_s\":%.1f,"
                   "\"skipped\":%s,\"nonfinite\":%s,\"spike\":%s,\"skipped_total\":%zu,\"spikes\":%zu,"
                   "\"rollbacks_total\":%zu}\n",
                   m.step, json_number(m.loss).c_str(), json_number(m.grad_norm).c_str(), m.lr, m.seconds * 1e3,
                   m.tokens_per_second, m.skipped ? "true" : "false",
                   m.nonfinite ? "true" : "false", spike ? "true" : "false", m.skipped_total,
                   guard ? guard->spikes() : std::size_t{0}, rollbacks);
      std::fflush(metrics);
    }
    // A run that skips step after step is broken, not unlucky: stop (as train_gpt does). Every
    // rank saw the same verdict, so every rank counts the same; rank 0 prints the line.
    consecutive_skips = m.skipped ? consecutive_skips + 1 : 0;
    if (consecutive_skips >= max_consecutive_skips) {
      if (metrics) std::fclose(metrics);
      collective_check(world, world.rank() != 0,
                       "train_distributed: " + std::to_string(consecutive_skips) +
                           " steps in a row were skipped on every rank, at step " + std::to_string(m.step + 1) +
                           "; stopping",
                       4);
    }
    // ---- rollback: K spikes in a row; every rank's guard saw the same all-reduced loss and norm,
    // and the ranks agree once more before acting. The data position is kept, so the bad batches
    // are not read again; the parameters, moments and step count return to the last checkpoint.
    // example-begin distributed-rollback
    std::int32_t roll = guard && guard->rollbacks() > rollbacks_asked ? 1 : 0;
    world.all_reduce(std::span<std::int32_t>(&roll, 1), reduce_op::max);
    if (roll && saved_at > 0) {
      const sampler_state here = sampler.state();  // past the bad batches
      std::string error;
      try {
        load_checkpoint(step, world, o.checkpoint);
      } catch (const checkpoint_error& e) {
        error = e.what();
      }
      collective_check(world, error.empty(), error, 1);
      sampler.set_state(here);
      ++rollbacks;
      if (world.rank() == 0)
        std::printf("rolled back to step %zu after %zu spikes in a row (data position kept: the bad batches are not "
                    "read again)\n", step.step_count(), o.rollback_after);
    }
    // example-end distributed-rollback
    if (!o.checkpoint.empty() && o.save_every > 0 && !m.skipped && step.step_count() % o.save_every == 0 &&
        step.step_count() < o.steps)
      save();
    // ---- preemption: every rank asks at the same point, so all stop after the same step ----
    // example-begin preemption-agreed
    if (preemption::agreed(world)) {  // an all-reduce max of the flag: true on every rank or none
      // {step, -step, ranks signalled}: the step every rank stops after, checked equal everywhere.
      std::int64_t v[3] = {static_cast<std::int64_t>(step.step_count()), -static_cast<std::int64_t>(step.step_count()),
                           preemption::requested() ? 1 : 0};
      world.all_reduce(std::span<std::int64_t>(v, 2), reduce_op::max);
      world.all_reduce(std::span<std::int64_t>(v + 2, 1), reduce_op::sum);
      // ---- checkpoint on preemption: every rank saves the same step, before the exit ----
      if (!o.checkpoint.empty()) save();
      // example-end preemption-agreed
      if (world.rank() == 0)
        std::printf("preempted: a signal on %lld of %d ranks; every rank stops after step %lld (steps %lld..%lld)\n",
                    static_cast<long long>(v[2]), world.size(), static_cast<long long>(v[0]),
                    static_cast<long long>(-v[1]), static_cast<long long>(v[0]));
      break;
    }
  }
  if (metrics) std::fclose(metrics);
  if (!o.checkpoint.empty() && step.step_count() >= o.steps) save();  // the last step (not if preempted: saved above)
  return 0;
}

// Runs the preset named `name`; false if there is none.
template <class... Ps>
bool dispatch(std::tuple<Ps...>, std::string_view name, mpi_communicator& world, const options& o, int& rc) {
  return ((name == Ps::name ? (rc = train<typename Ps::plan_type>(world, o), true) : false) || ...);
}

// Every number is parsed in full and range-checked (weft/train/cli.hpp, shared with train_gpt).
// Every rank parses the same arguments, so every rank finds the same error: rank 0 prints it
// (one line) and every rank exits with status 2. No options: --help was shown.
static std::optional<options> parse(mpi_communicator& world, int argc, char** argv) {
  options o;
  cli::args a("train_distributed", argc, argv);
  using z = std::size_t;
  constexpr int no_rank = -1, most_ranks = 1 << 24;
  std::string error;
  try {
    while (a.next()) {
      if (a.is("--help")) { if (world.rank() == 0) usage(); return std::nullopt; }
      else if (a.is("--strategy")) o.strategy = a.value();
      else if (a.is("--data")) o.data = a.value();
      else if (a.is("--steps")) o.steps = a.integer<z>();
      else if (a.is("--lr")) o.lr = a.real<float>(0, 10, cli::exclusive);
      else if (a.is("--fail-rank")) o.fail_rank = a.integer<int>(no_rank, most_ranks);
      else if (a.is("--kill-rank")) o.kill_rank = a.integer<int>(no_rank, most_ranks);
      else if (a.is("--metrics")) o.metrics = a.value();
      else if (a.is("--spike-guard")) o.spike_guard = true;
      else if (a.is("--spike-rollback-after")) o.rollback_after = a.integer<z>();
      else if (a.is("--spike-rank")) o.spike_rank = a.integer<int>(no_rank, most_ranks);
      else if (a.is("--spike-at")) o.spike_at = a.integer<z>();
      else if (a.is("--spike-steps")) o.spike_steps = a.integer<z>();
      else if (a.is("--nan-rank")) o.nan_rank = a.integer<int>(no_rank, most_ranks);
      else if (a.is("--nan-at")) o.nan_at = a.integer<z>();
      else if (a.is("--signal-rank")) o.signal_rank = a.integer<int>(no_rank, most_ranks);
      else if (a.is("--signal-at")) o.signal_at = a.integer<z>();
      else if (a.is("--step-delay-ms")) o.step_delay_ms = a.integer<z>(0, 3600000);
      else if (a.is("--checkpoint")) o.checkpoint = a.value();
      else if (a.is("--save-every")) o.save_every = a.integer<z>();
      else if (a.is("--keep")) o.keep = a.integer<z>();
      else if (a.is("--resume")) o.resume = a.value();
      else a.unknown();
    }
  } catch (const cli::option_error& e) {
    error = e.what();
  }
  collective_check(world, error.empty() || world.rank() != 0, error, 2);
  return o;
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  const std::optional<options> parsed = parse(world, argc, argv);
  if (!parsed) return 0;  // --help
  const options& o = *parsed;
  int rc = 0;
  if (dispatch(presets{}, o.strategy, world, o, rc)) return rc;
  collective_check(world, false, "train_distributed: unknown strategy '" + o.strategy + "' (see --help)", 2);
  return 2;
}
