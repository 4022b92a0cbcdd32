// Stability guards under mpirun: a NaN injected into ONE rank's loss and gradients (through
// train_options::fault) makes every rank skip that step's update together — no rank updates while
// another does not — and training then continues bit for bit as a run of the same strategy that
// never saw that batch (same losses, same final parameters, same step count). A spike injected
// into one rank (x1000) is rejected by a spike_guard on every rank at the same step.
//   mpirun -np N mpi_stability <dp|zero1|zero3|tp2-sp|pp2-1f1b> [poisoned rank]
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>
#include <weft/train/stability.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace weft;

using model = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<4>>>;
constexpr std::size_t B = 2, S = 8, K = 2;

template <class Strategy>
using plan_of = plan<model, batch<micro<B>, seq<S>>, Strategy>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;
using tp2_sp_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp", sequence_parallel>,
                          data_parallel<"dp", zero<1>>>;
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>>;

// Token of (data batch, micro-batch, global row, position): any fixed function will do.
std::int32_t token_at(std::size_t batch, std::size_t micro, std::size_t row, std::size_t pos) {
  std::uint64_t h = batch * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % 32);
}

struct run_result {
  std::vector<step_metrics> metrics;
  std::vector<float> params;
};

// `calls` steps over data batches `batches`; this rank multiplies its loss and gradients by
// `factor` at call `bad` when it is `poisoned`; `guard` (if any) is the accept predicate.
template <class P>
run_result run(mpi_communicator& world, const std::vector<std::size_t>& batches, std::size_t bad, double factor,
               bool poisoned, spike_guard* guard = nullptr) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, 20, 0.1f};
  o.grad_clip = 0.5f;
  if constexpr (P::pp == 1) o.grad_accum = K;
  if (poisoned) o.fault = [=](std::size_t call) { return call == bad ? factor : 1.0; };
  auto step = make_training_step<P>(world, o);
  const std::size_t row0 = step.data_rank() * B;
  run_result r;
  for (std::size_t c = 0; c < batches.size(); ++c) {
    std::size_t i = 0;
    auto fill = [&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(batches[c], i, row0 + b, t);
          tgt[b * S + t] = token_at(batches[c], i, row0 + b, t + 1);
        }
      ++i;
    };
    r.metrics.push_back(guard ? step.step(fill, *guard) : step.step(fill));
  }
  const auto p = step.inner().parameters();  // ZeRO-3: all-gathered from the shards
  r.params.assign(p.begin(), p.end());
  return r;
}

// Collective: how many ranks have `flag`.
int count(mpi_communicator& world, bool flag) {
  std::int32_t n = flag ? 1 : 0;
  world.all_reduce(std::span{&n, 1}, reduce_op::sum);
  return n;
}

template <class P>
void check_strategy(mpi_communicator& world, const std::string& name, int poisoned_rank) {
  const int n = world.size();
  const bool me = world.rank() == poisoned_rank;
  // ---- a NaN on one rank: every rank skips; then equal to a run without that batch ----
  const std::size_t bad = 2;
  const run_result a = run<P>(world, {0, 1, 2, 3, 4, 5}, bad, std::numeric_limits<double>::quiet_NaN(), me);
  const run_result ref = run<P>(world, {0, 1, 3, 4, 5}, 99, 1.0, false);
  WEFT_CHECK(count(world, a.metrics[bad].skipped) == n);
  WEFT_CHECK(count(world, a.metrics[bad].nonfinite) == n);
  for (std::size_t c = 0; c < a.metrics.size(); ++c)
    if (c != bad) WEFT_CHECK(count(world, a.metrics[c].skipped) == 0);
  WEFT_CHECK(a.metrics[bad].step == bad);  // not counted
  WEFT_CHECK(a.metrics.back().step == ref.metrics.back().step);
  WEFT_CHECK(a.metrics.back().skipped_total == 1);
  for (std::size_t c = 0, j = 0; c < a.metrics.size(); ++c) {
    if (c == bad) continue;
    const bool same = a.metrics[c].loss == ref.metrics[j].loss && a.metrics[c].grad_norm == ref.metrics[j].grad_norm;
    WEFT_CHECK(same);
    if (!same)
      std::fprintf(stderr, "rank %d call %zu: loss %.17g vs %.17g\n", world.rank(), c, a.metrics[c].loss,
                   ref.metrics[j].loss);
    ++j;
  }
  WEFT_CHECK(a.params == ref.params);

  // ---- a spike (x1000) on one rank: every rank's guard rejects that step, and only it ----
  // (A generous threshold and spread floor: these few noisy steps are no statistics; x1000 is.)
  spike_guard guard({.window = 16, .warmup = 5, .threshold = 20.0, .rollback_after = 0, .min_relative_spread = 0.1});
  const std::size_t spike_at = 7;
  const run_result s = run<P>(world, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, spike_at, 1e3, me, &guard);
  for (std::size_t c = 0; c < s.metrics.size(); ++c) {
    const int skipped = count(world, s.metrics[c].skipped);
    WEFT_CHECK(skipped == (c == spike_at ? n : 0));
    WEFT_CHECK(!s.metrics[c].nonfinite);
    if (skipped != (c == spike_at ? n : 0) && world.rank() == 0)
      std::fprintf(stderr, "call %zu: %d ranks skipped (loss %.6g, grad norm %.6g)\n", c, skipped, s.metrics[c].loss,
                   s.metrics[c].grad_norm);
  }
  WEFT_CHECK(guard.spikes() == 1);
  if (world.rank() == 0)
    std::printf("%s: NaN on rank %d skipped by all %d ranks, run equal to one without the batch; spike skipped by all\n",
                name.c_str(), poisoned_rank, n);
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string p = argc > 1 ? argv[1] : "";
  const long rank = argc > 2 ? test::number_arg(argv[2]) : world.size() - 1;
  test::require_args(world, test::one_of(p, {"dp", "zero1", "zero3", "tp2-sp", "pp2-1f1b"}) && rank >= 0 &&
                                rank < world.size() && argc <= 3,
                     "stability: usage: <dp|zero1|zero3|tp2-sp|pp2-1f1b> [poisoned rank < np]", argc, argv);
  const int r = static_cast<int>(rank);
  if (p == "dp") check_strategy<plan_of<dp_s<0>>>(world, p, r);
  else if (p == "zero1") check_strategy<plan_of<dp_s<1>>>(world, p, r);
  else if (p == "zero3") check_strategy<plan_of<dp_s<3>>>(world, p, r);
  else if (p == "tp2-sp") check_strategy<plan_of<tp2_sp_s>>(world, p, r);
  else check_strategy<plan_of<pp2_s>>(world, p, r);
  return test::finish(world, ("stability " + p).c_str());
}
