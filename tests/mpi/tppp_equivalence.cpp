// Tensor × pipeline parallelism (tp 2 × pp 2, and dp 2 × tp 2 × pp 2 through data_parallel_step)
// reproduces the single-process run: under mpirun every rank runs its tp shard of its pipeline
// stage and also, cheaply (the models are tiny), the single-process reference over the whole
// global batch (dp·M micro-batches). After several steps with gradient clipping active, the
// losses, gradient norms and the parameters (each stage's shards gathered over its tp group into
// the single-process layout, compared by global name, the last stage's tied copy of wte
// included) must agree: f64 tightly, f32 looser.
//   mpirun -np 4 mpi_tppp_equivalence <gpt|llama> <gpipe|1f1b|interleaved> <f64|f32> [zero 0|1|3] [steps]
//   mpirun -np 8 ...  (dp 2 × tp 2 × pp 2)
// Rank layout (strategy.hpp): r = (pp_index·dp + dp_index)·tp + tp_index.
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
#include <optional>
#include <string>
#include <vector>

using namespace weft;

// depth 4 = pp 2 x interleaved chunks 2 x 1 block; heads, kv_heads, ffn and vocab divisible by tp 2
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<4>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<4>, ffn<24>>>;
constexpr std::size_t B = 2, S = 8, M = 4, PP = 2, TP = 2;  // per data-parallel rank: M micro-batches of B sequences

// Token of (step, micro-batch, global row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

// Rows of data-parallel rank `d`, micro-batch `i` of step `s`; position 3 of row 1 is ignored (-1).
template <std::size_t V>
void fill_rows(std::size_t s, std::size_t d, std::size_t i, std::span<std::int32_t> tok, std::span<std::int32_t> tgt) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < S; ++t) {
      tok[b * S + t] = token_at(s, i, d * B + b, t, V);
      tgt[b * S + t] = (b == 1 && t == 3) ? -1 : token_at(s, i, d * B + b, t + 1, V);
    }
}

// See tp_equivalence.cpp: the key bias's gradient is rounding noise; f32 runs use eps 1e-6.
template <class T>
train_options options(std::size_t steps) {
  train_options o;
  if constexpr (sizeof(T) < sizeof(double)) o.optimizer.eps = 1e-6f;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, steps, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip every step: the norm over tp and pp must be right
  return o;
}

// Worst relative difference of this stage's parameters (gathered into `whole`) against the
// reference's, over the elements the stage holds.
template <class T>
double worst_difference(const std::vector<param_info>& stage, const std::vector<param_info>& ref_infos,
                        const std::vector<T>& whole, std::span<const T> ref, double floor, std::size_t& compared) {
  double worst = 0;
  for (const auto& p : stage) {
    const param_info& w = detail::whole_param(ref_infos, p.name);
    for (std::size_t e = 0; e < w.size; ++e) {
      const double x = static_cast<double>(whole[w.offset + e]), y = static_cast<double>(ref[w.offset + e]);
      worst = std::max(worst, std::abs(x - y) / std::max(floor, std::abs(y)));
    }
    compared += p.size;
  }
  return worst;
}

template <class Model, class T, class Schedule, std::size_t Zero>
void run(mpi_communicator& world, std::size_t steps, double tol) {
  const std::size_t rank = static_cast<std::size_t>(world.rank()), dp = static_cast<std::size_t>(world.size()) / (PP * TP);
  const train_options o = options<T>(steps);

  // example-begin tppp_usage
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;
  // a tp shard of a stage; under ZeRO >= 1 without moments of its own (the dp step's shards)
  using pipe_t = pipeline_step<zero_local_plan_t<P, Zero>, PP, Schedule, M, mpi_communicator, TP>;
  using dist_t = data_parallel_step<P, mpi_communicator, Zero, pipe_t>;
  // rank = (pp_index·dp + dp_index)·tp + tp_index
  const std::size_t tp_index = rank % TP, dp_index = rank / TP % dp, pp_index = rank / (TP * dp);
  const auto color = [](std::size_t a, std::size_t n, std::size_t b) { return static_cast<int>(a * n + b); };
  mpi_communicator tp_group = world.split(color(pp_index, dp, dp_index), static_cast<int>(tp_index));
  mpi_communicator pp_group = world.split(color(dp_index, TP, tp_index), static_cast<int>(pp_index));
  mpi_communicator dp_group = world.split(color(pp_index, TP, tp_index), static_cast<int>(dp_index));
  std::optional<pipe_t> alone;
  std::optional<dist_t> dist;
  if (dp == 1) alone.emplace(pp_group, tp_group, o);                                   // tp × pp
  else dist.emplace(dp_group, pipe_t(pp_group, tp_group, o), /*bucket_bytes=*/512);  // dp × tp × pp
  // example-end tppp_usage
  pipe_t& pipe = alone ? *alone : dist->local();
  WEFT_CHECK(pipe.stage() == pp_index);
  WEFT_CHECK(pipe.tp_rank() == tp_index);

  train_options ro = o;
  ro.grad_accum = M * dp;  // the reference sees every data-parallel rank's micro-batches
  training_step<P> ref(ro);
  const auto ref_infos = P::parameters();

  // The shards start from the reference's values (the tied copy too).
  std::vector<T> whole(P::param_count, T{0});
  std::size_t compared = 0;
  pipe.gather_stage_parameters(whole);
  WEFT_CHECK(worst_difference<T>(pipe.parameter_infos(), ref_infos, whole, ref.params(), 1e-3, compared) == 0.0);
  WEFT_CHECK(pipe.params().size() < P::param_count / 2);  // a shard of a stage

  bool clipped = false;
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0, fills = 0;
    auto fill = [&](auto tok, auto tgt) {  // this data-parallel rank's rows of micro-batch i
      fill_rows<Model::vocab_size>(s, dp_index, i, tok, tgt);
      ++i, ++fills;
    };
    const step_metrics md = [&] {
      if constexpr (Zero == 0)  // alone only without ZeRO (dp == 1)
        if (alone) return alone->step(fill);
      return dist->step(fill);
    }();
    WEFT_CHECK(fills == (pp_index == 0 || pp_index + 1 == PP ? M : 0));
    std::size_t j = 0;
    const step_metrics mr = ref.step([&](auto tok, auto tgt) {  // micro j = dp rank j / M's micro j % M
      fill_rows<Model::vocab_size>(s, j / M, j % M, tok, tgt);
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
  if (dist) dist->gather_parameters();  // ZeRO-3: the dp shards into every rank's working copy
  WEFT_CHECK(pipe.step_count() == steps);

  // ---- the gathered stage parameters against the reference's, by global name ----
  // The floor of the relative difference: see pp_equivalence.cpp (the key bias in f32).
  const double floor = sizeof(T) == 8 ? 1e-3 : 1e-2;
  std::fill(whole.begin(), whole.end(), T{0});
  pipe.gather_stage_parameters(whole);
  compared = 0;
  const double worst = worst_difference<T>(pipe.parameter_infos(), ref_infos, whole, ref.params(), floor, compared);
  WEFT_CHECK(compared == pipe.params().size());
  WEFT_CHECK(worst <= tol * 10);
  if (worst > tol * 10) std::fprintf(stderr, "rank %zu: worst parameter difference %.3g\n", rank, worst);
  // Every parameter element of the model is counted once per dp replica by the global norm:
  // shards once, replicated parameters on tp rank 0, the tied copy on the first stage.
  std::int64_t total = static_cast<std::int64_t>(compared);
  for (const auto& r : pipe.norm_skipped()) total -= static_cast<std::int64_t>(r.size);
  world.all_reduce(std::span<std::int64_t>(&total, 1), reduce_op::sum);
  WEFT_CHECK(total == static_cast<std::int64_t>(dp * P::param_count));

  // ---- evaluation: forward only through the stages, the same mean loss ----
  auto eval_fill = [](std::size_t d) {
    return [d, k = std::size_t{0}](auto tok, auto tgt) mutable { fill_rows<Model::vocab_size>(99, d, k++, tok, tgt); };
  };
  const double ev = alone ? alone->evaluate(eval_fill(dp_index), 2) : dist->evaluate(eval_fill(dp_index), 2);
  double ev_ref = 0;
  for (std::size_t r = 0; r < dp; ++r) ev_ref += ref.evaluate(eval_fill(r), 2);
  ev_ref /= static_cast<double>(dp);
  WEFT_CHECK(std::abs(ev - ev_ref) <= tol * std::abs(ev_ref));

  if (world.rank() == 0)
    std::printf("dp %zu x tp %zu x pp %zu, zero<%zu>, %s: %zu steps, shard of %zu of %zu parameters on rank 0, "
                "worst parameter difference %.3g (tolerance %.1g)\n",
                dp, TP, PP, Zero, sizeof(T) == 8 ? "f64" : "f32", steps, pipe.params().size(),
                static_cast<std::size_t>(P::param_count), worst, tol * 10);
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
                     argc >= 5 && argc <= 6 && test::one_of(model, {"gpt", "llama"}) &&
                         test::one_of(schedule, {"gpipe", "1f1b", "interleaved"}) && test::one_of(dtype, {"f64", "f32"}) &&
                         (zero_arg == 0 || zero_arg == 1 || zero_arg == 3) && steps_arg > 0,
                     "tppp_equivalence: usage: <gpt|llama> <gpipe|1f1b|interleaved> <f64|f32> <zero 0|1|3> [steps > 0]",
                     argc, argv);
  const int zero = static_cast<int>(zero_arg);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  if (world.size() % static_cast<int>(PP * TP) != 0)
    world.abort(2, "tppp_equivalence: run on a multiple of 4 ranks (tp 2 × pp 2).");
  const bool f64 = dtype == "f64";
  const double tol = f64 ? 1e-10 : 2e-4;
  if (model == "gpt") f64 ? dispatch<gpt_t, double>(world, schedule, zero, steps, tol) : dispatch<gpt_t, float>(world, schedule, zero, steps, tol);
  else f64 ? dispatch<llama_t, double>(world, schedule, zero, steps, tol) : dispatch<llama_t, float>(world, schedule, zero, steps, tol);
  return test::finish(world, ("tppp_equivalence " + model + " " + schedule + " " + dtype + " zero " +
                              std::to_string(zero)).c_str());
}
