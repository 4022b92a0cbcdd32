// Pipeline parallelism (alone, and under data parallelism) reproduces the single-process run:
// under mpirun the world is cut into pipeline groups of 2 stages (rank = pp_index·dp + dp_index,
// tp = 1); every rank runs its stage of the distributed step and also, cheaply (the models are
// tiny), the single-process reference over the whole global batch (dp·M micro-batches). After
// several steps with gradient clipping active, the losses, gradient norms and the parameters
// each stage holds (compared by global name, the last stage's tied copy of wte included) must
// agree: f64 tightly, f32 looser.
// gpt-vocab (1f1b, zero 0 only): a token table wider than the stages' activation slots and
// workspace, so that the tied-embedding gradient sum crosses in several pieces through them.
//   mpirun -np 2 mpi_pp_equivalence <gpt|gpt-vocab|llama> <gpipe|1f1b|interleaved> <f64|f32> [zero 0|1|3] [steps]
//   mpirun -np 4 ...  (dp 2 x pp 2, through data_parallel_step)
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/data_parallel_step.hpp>
#include <weft/exec/pipeline_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

using namespace weft;

// depth 4 = pp 2 x interleaved chunks 2 x 1 block
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<4>>>;
// vocab x width (131072) above a stage's slots and workspace: the tied sum takes several pieces
using gpt_vocab_t = gpt<gpt_config<vocab<2048>, context<8>, width<64>, heads<2>, depth<4>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<4>>>;
constexpr std::size_t B = 2, S = 8, M = 4, PP = 2;  // per data-parallel rank: M micro-batches of B sequences

// Token of (step, micro-batch, global row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

template <class Model, class T, class Schedule, std::size_t Zero>
void run(mpi_communicator& world, std::size_t steps, double tol) {
  const std::size_t rank = static_cast<std::size_t>(world.rank()), dp = static_cast<std::size_t>(world.size()) / PP;
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip every step: the norm over the stages must be right

  // dp == 1: the pipeline step alone (its own clipping and update); else under data parallelism.
  // example-begin pipeline_usage
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;
  // this rank's stage (its pp rank); under ZeRO >= 1 without moments of its own (the dp step's shards)
  using pipe_t = pipeline_step<zero_local_plan_t<P, Zero>, PP, Schedule, M, mpi_communicator>;
  using dist_t = data_parallel_step<P, mpi_communicator, Zero, pipe_t>;
  const std::size_t pp_index = rank / dp, dp_index = rank % dp;  // rank = pp_index·dp + dp_index (tp = 1)
  mpi_communicator pp_group = world.split(static_cast<int>(dp_index), static_cast<int>(pp_index));
  mpi_communicator dp_group = world.split(static_cast<int>(pp_index), static_cast<int>(dp_index));
  std::optional<pipe_t> alone;
  std::optional<dist_t> dist;
  if (dp == 1) alone.emplace(pp_group, o);                                   // pipeline only
  else dist.emplace(dp_group, pipe_t(pp_group, o), /*bucket_bytes=*/512);  // dp × pp
  // example-end pipeline_usage
  pipe_t& pipe = alone ? *alone : dist->local();
  WEFT_CHECK(static_cast<std::size_t>(pp_group.rank()) == pp_index);

  train_options ro = o;
  ro.grad_accum = M * dp;  // the reference sees every data-parallel rank's micro-batches
  training_step<P> ref(ro);

  // ---- slots: the simulation's peak, fewer than M where the schedule allows ----
  const std::size_t stage = pipe.stage();
  WEFT_CHECK(pipe.layout().slots == std::max<std::size_t>(1, pipe_t::report.peak_activations[stage]));
  if constexpr (std::is_same_v<Schedule, one_f_one_b>) WEFT_CHECK(pipe.layout().slots == PP - stage);
  if constexpr (std::is_same_v<Schedule, gpipe>) WEFT_CHECK(pipe.layout().slots == M);
  WEFT_CHECK(pipe.layout().bytes == pipe_t::bytes_of_stage(stage));
  if constexpr (std::is_same_v<Model, gpt_vocab_t>) WEFT_CHECK(Model::vocab_size * Model::width > pipe_t::tied_piece_elements());

  bool clipped = false;
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0, fills = 0;
    auto fill = [&](auto tok, auto tgt) {  // this data-parallel rank's rows of micro-batch i
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, i, dp_index * B + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, i, dp_index * B + b, t + 1, Model::vocab_size);
        }
      ++i, ++fills;
    };
    const step_metrics md = [&] {
      if constexpr (Zero == 0)  // alone only without ZeRO (dp == 1)
        if (alone) return alone->step(fill);
      return dist->step(fill);
    }();
    WEFT_CHECK(fills == (stage == 0 || stage + 1 == PP ? M : 0));  // the first and the last stage read data
    std::size_t j = 0;
    const step_metrics mr = ref.step([&](auto tok, auto tgt) {  // micro j = dp rank j / M's micro j % M
      const std::size_t r = j / M, mi = j % M;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, mi, r * B + b, t, Model::vocab_size);
          tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1, Model::vocab_size);
        }
      ++j;
    });
    clipped = clipped || mr.grad_norm > o.grad_clip;
    WEFT_CHECK(std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss));
    WEFT_CHECK(std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm);
    if (std::abs(md.loss - mr.loss) > tol * std::abs(mr.loss) || std::abs(md.grad_norm - mr.grad_norm) > tol * mr.grad_norm)
      std::fprintf(stderr, "rank %zu step %zu: loss %.17g vs %.17g, norm %.17g vs %.17g\n", rank, s, md.loss, mr.loss,
                   md.grad_norm, mr.grad_norm);
  }
  WEFT_CHECK(clipped);
  if (dist) dist->gather_parameters();
  WEFT_CHECK(pipe.step_count() == steps);

  // ---- this stage's parameters against the reference's, by global name ----
  std::map<std::string, const param_info*> by_name;
  for (const auto& p : ref.parameter_infos()) by_name[p.name] = &p;
  double worst = 0;
  std::string worst_name;
  std::size_t compared = 0;
  // The floor of the relative difference: in f32, parameters whose gradient is zero up to
  // rounding (the key bias: softmax ignores a constant added to every score of a row) take
  // AdamW steps driven by rounding noise, which differs with the order of the sums; they stay
  // within ~1e-5 of the reference, far below a step (lr 1e-2) but not relative to their size.
  const double floor = sizeof(T) == 8 ? 1e-3 : 1e-2;
  const auto a = pipe.params(), b = ref.params();
  for (const auto& p : pipe.parameter_infos()) {
    const auto it = by_name.find(p.name);
    WEFT_CHECK(it != by_name.end());
    if (it == by_name.end()) continue;
    WEFT_CHECK(it->second->size == p.size);
    for (std::size_t e = 0; e < p.size; ++e) {
      const double x = static_cast<double>(a[p.offset + e]), y = static_cast<double>(b[it->second->offset + e]);
      const double d = std::abs(x - y) / std::max(floor, std::abs(y));
      if (d > worst) worst = d, worst_name = p.name + "[" + std::to_string(e) + "] " + std::to_string(x) + " vs " + std::to_string(y);
    }
    compared += p.size;
  }
  WEFT_CHECK(compared == pipe.params().size());
  WEFT_CHECK(worst <= tol * 10);
  if (worst > tol * 10) std::fprintf(stderr, "rank %zu: worst parameter %s\n", rank, worst_name.c_str());
  // Every parameter of the model lives on some stage (the tied copy counted once).
  std::int64_t total = static_cast<std::int64_t>(compared);
  for (const auto& r : pipe.norm_skipped()) total -= static_cast<std::int64_t>(r.size);
  world.all_reduce(std::span<std::int64_t>(&total, 1), reduce_op::sum);
  WEFT_CHECK(total == static_cast<std::int64_t>(dp * P::param_count));

  // ---- evaluation: forward only through the stages, the same mean loss ----
  auto eval_fill = [&](std::size_t row0) {
    return [&, row0, k = std::size_t{0}](auto tok, auto tgt) mutable {
      for (std::size_t bb = 0; bb < B; ++bb)
        for (std::size_t t = 0; t < S; ++t) {
          tok[bb * S + t] = token_at(99, k, row0 + bb, t, Model::vocab_size);
          tgt[bb * S + t] = token_at(99, k, row0 + bb, t + 1, Model::vocab_size);
        }
      ++k;
    };
  };
  const double ev = alone ? alone->evaluate(eval_fill(dp_index * B), 2) : dist->evaluate(eval_fill(dp_index * B), 2);
  double ev_ref = 0;
  for (std::size_t r = 0; r < dp; ++r) ev_ref += ref.evaluate(eval_fill(r * B), 2);
  ev_ref /= static_cast<double>(dp);
  WEFT_CHECK(std::abs(ev - ev_ref) <= tol * std::abs(ev_ref));

  if (world.rank() == 0)
    std::printf("pp %zu x dp %zu, zero<%zu>, %s: %zu steps, %zu slots on stage 0 (M = %zu), worst parameter "
                "difference %.3g (tolerance %.1g)\n",
                PP, dp, Zero, sizeof(T) == 8 ? "f64" : "f32", steps, pipe.layout().slots, M, worst, tol * 10);
}

template <class Model, class T, class Schedule>
void dispatch_zero(mpi_communicator& world, int zero, std::size_t steps, double tol) {
  if (zero == 1) run<Model, T, Schedule, 1>(world, steps, tol);
  else if (zero == 3) run<Model, T, Schedule, 3>(world, steps, tol);
  else run<Model, T, Schedule, 0>(world, steps, tol);
}

template <class Model, class T>
void dispatch(mpi_communicator& world, const std::string& schedule, int zero, std::size_t steps, double tol) {
  if (schedule == "gpipe") dispatch_zero<Model, T, gpipe>(world, zero, steps, tol);
  else if (schedule == "interleaved") dispatch_zero<Model, T, interleaved<2>>(world, zero, steps, tol);
  else dispatch_zero<Model, T, one_f_one_b>(world, zero, steps, tol);
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string model = argc > 1 ? argv[1] : "", schedule = argc > 2 ? argv[2] : "", dtype = argc > 3 ? argv[3] : "";
  const long zero_arg = argc > 4 ? test::number_arg(argv[4]) : -1, steps_arg = argc > 5 ? test::number_arg(argv[5]) : 4;
  test::require_args(world,
                     argc >= 5 && argc <= 6 && test::one_of(model, {"gpt", "gpt-vocab", "llama"}) &&
                         test::one_of(schedule, {"gpipe", "1f1b", "interleaved"}) && test::one_of(dtype, {"f64", "f32"}) &&
                         (zero_arg == 0 || zero_arg == 1 || zero_arg == 3) && steps_arg > 0 &&
                         (model != "gpt-vocab" || (schedule == "1f1b" && zero_arg == 0)),
                     "pp_equivalence: usage: <gpt|gpt-vocab|llama> <gpipe|1f1b|interleaved> <f64|f32> <zero 0|1|3> [steps > 0] "
                     "(gpt-vocab: 1f1b, zero 0)",
                     argc, argv);
  const int zero = static_cast<int>(zero_arg);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  if (world.size() % static_cast<int>(PP) != 0)
    world.abort(2, "pp_equivalence: run on a multiple of 2 ranks (pipeline of 2 stages).");
  const bool f64 = dtype == "f64";
  const double tol = f64 ? 1e-10 : 2e-4;
  if (model == "gpt-vocab")
    f64 ? run<gpt_vocab_t, double, one_f_one_b, 0>(world, steps, tol) : run<gpt_vocab_t, float, one_f_one_b, 0>(world, steps, tol);
  else if (model == "gpt") f64 ? dispatch<gpt_t, double>(world, schedule, zero, steps, tol) : dispatch<gpt_t, float>(world, schedule, zero, steps, tol);
  else f64 ? dispatch<llama_t, double>(world, schedule, zero, steps, tol) : dispatch<llama_t, float>(world, schedule, zero, steps, tol);
  return test::finish(world, ("pp_equivalence " + model + " " + schedule + " " + dtype + " zero " +
                              std::to_string(zero)).c_str());
}
