// Mixed precision under model parallelism: precision<bf16, f32> run by tensor_parallel_step and
// pipeline_step (and data parallelism with ZeRO-1 around a tensor-parallel shard) through the
// plan's entry point (make_training_step), against the single-process bf16 training_step over
// the same global batch. Each rank holds bf16 parameters, gradients and activations and an f32
// master of its block with f32 AdamW moments (before this test tp and pp did not build for bf16
// at all, and their arenas sized the moments in T with no master, while the plan's memory model
// counted one).
//   mpirun -np N mpi_mp_mixed_precision <tp2|pp2|tp2-pp2|dp2-zero1-tp2|dp2-zero3-tp2> [steps]
//     every rank runs its shard and the reference side by side:
//     * the model-parallel step's master type is f32, its master section holds one f32 element
//       per parameter of its block (under ZeRO-1: data_parallel_step's shard does), and its
//       arena is 8 bytes a parameter larger than the same step's with precision<bf16> (f32
//       master + f32 moments against bf16 moments), up to the sections' alignment;
//     * the f32 masters start at the reference's initial f32 values, element for element;
//     * every step, the loss within `ref_tol` (relative) and the gradient norm within `norm_tol`
//       of the reference's;
//     * at the end the f32 masters' RMS difference from the reference's (each logical element
//       once: the tp replicas and the pipeline's tied copy are skipped as the norm skips them)
//       within `master_tol` of the RMS distance the reference moved, and the bf16 parameters
//       are the master rounded once;
//     * dp2-zero1-tp2: the master shards of data_parallel_step (initialised from the tp shard's
//       own initial values) against the same mesh with zero<0>, within `twin_tol`;
//     * dp2-zero3-tp2: the same under ZeRO-3, the tp shard's block stack layer by layer (its
//       resident layers initialised alone, rounded from f32), within `layer_twin_tol`.
//   mpirun -np 2 mpi_mp_mixed_precision control [steps]
//     tp 2: many small updates (lr 1e-3, below half a bf16 ulp of a norm weight at 1.0) move the
//     f32-master run's norm weights as the reference's, while the same tp step on a bf16-master
//     plan (precision<bf16>: moments and update in bf16, no master) stalls at 1.0 and fails
//     that comparison.
//
// Tolerances, as tests/mpi/dp_mixed_precision.cpp's: the shards' partial sums are added over
// the tp group in bf16 and the gradients differ from the reference's by a few bf16 ulps, so
// the norm within 5%, the losses (bf16 activations) within 1%, and the masters, compared as a
// whole (an element whose gradient is near zero may step either way), within 10% of the
// training's movement (measured, 10 steps at lr 1e-2: losses 4.4e-4, norms 2.3%, masters 5.3%
// at most). dp2 x tp2 sums the replicas' bf16 gradients once more in bf16 and drifts further
// (step 0's norm within 0.05%, step 8's 8.5%; masters 9.3%): norm 10%, masters 15% there, and
// the ZeRO-1 run is held to 1e-4 against the same mesh with zero<0> (measured: bit for bit).
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/distributed_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<2>>>;
constexpr std::size_t B = 2, S = 8, K = 2;  // per replica: micro-batches of 2 sequences, 2 per step (4 in a pipeline)

template <class Strategy, class Precision = precision<bf16, f32>>
using plan_of = plan<gpt_t, batch<micro<B>, seq<S>>, Precision, Strategy>;
using reference_plan = plan<gpt_t, batch<micro<B>, seq<S>>, precision<bf16, f32>>;  // one process

template <std::size_t Zero>
using tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">, data_parallel<"dp", zero<Zero>>>;
using pp2_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<4>>,
                       data_parallel<"dp", zero<0>>>;
using tp2_pp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>, tensor_parallel<"tp">,
                           pipeline<"pp", one_f_one_b, microbatches<4>>, data_parallel<"dp", zero<0>>>;

constexpr double ref_tol = 1e-2, norm_tol = 5e-2, master_tol = 0.1, twin_tol = 1e-4;
constexpr double dp_norm_tol = 0.1, dp_master_tol = 0.15;
// ZeRO-2/3 (layer by layer) against zero<0>: each micro-batch's block gradients are summed over
// dp in bf16 before the micro-batches are added (one more rounding per micro-batch), as
// tests/mpi/dp_mixed_precision.cpp's zero<2/3> against zero<0>.
constexpr double layer_twin_tol = 5e-2;

// Token of (step, micro-batch, global row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % gpt_t::vocab_size);
}
// Rows [row0, row0 + B) of micro-batch `micro` of step `s`.
void fill_rows(std::size_t s, std::size_t micro, std::size_t row0, std::span<std::int32_t> tok,
               std::span<std::int32_t> tgt) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < S; ++t) {
      tok[b * S + t] = token_at(s, micro, row0 + b, t);
      tgt[b * S + t] = token_at(s, micro, row0 + b, t + 1);
    }
}

train_options options(std::size_t steps, float lr, bool clip) {
  train_options o;
  o.optimizer.lr = lr;
  o.schedule = {clip ? std::size_t{2} : 0, clip ? steps : 0, 0.1f};
  o.grad_clip = clip ? 0.5f : 0.0f;  // small enough to clip: the norm over the shards must be right
  return o;
}

// The arena bytes of a model-parallel step (a pipeline's: of stage `stage`).
template <class Step>
std::size_t arena_bytes(std::size_t stage) {
  if constexpr (requires { Step::bytes_of_stage(stage); }) return Step::bytes_of_stage(stage);
  else return Step::resident_bytes();
}

// For each element of the local step's block, its flat index in the single-process block.
template <class Local>
std::vector<std::size_t> whole_index(const Local& local, std::size_t tp) {
  return detail::block_indices(local.parameter_infos(), reference_plan::parameters(), tp, local.tp_rank(),
                               detail::parameter_block_size_of(local));
}
// Whether element i of the local block counts in sums over the world (not a tp replica on tp
// rank != 0, not the pipeline's tied copy): as the global norm counts it.
template <class Local>
std::vector<char> counted(const Local& local) {
  std::vector<char> c(detail::parameter_block_size_of(local), 1);
  for (const auto& r : local.norm_skipped())
    std::fill_n(c.begin() + static_cast<std::ptrdiff_t>(r.offset), r.size, char{0});
  return c;
}

// A distributed run of `P` (precision<bf16, f32>) and the reference, `steps` steps; under ZeRO-1
// also `Twin`, the same mesh with zero<0>.
template <class P, class Twin = void>
void run(mpi_communicator& world, const std::string& name, std::size_t steps) {
  constexpr std::size_t zero = P::strategy_type::zero_stage;
  constexpr std::size_t k = P::pp > 1 ? P::strategy_type::microbatches : K;
  train_options o = options(steps, 1e-2f, true);
  if constexpr (P::pp == 1) o.grad_accum = K;

  // example-begin mp-mixed-precision
  // P = plan<gpt_t, batch<micro<2>, seq<8>>, precision<bf16, f32>, strategy<… tensor_parallel, pipeline …>>
  auto step = make_training_step<P>(world, o);
  auto& local = step.inner().local();  // this rank's tensor-parallel shard or pipeline stage
  using local_t = std::remove_cvref_t<decltype(local)>;
  static_assert(local_t::mixed_precision && std::is_same_v<typename local_t::M, float>);
  std::span<bf16> bf16_params = local.params();  // bf16 parameters, gradients and activations
  std::span<float> f32_master = local.master();  // and an f32 master (empty under ZeRO >= 1: the dp shards hold it)
  // example-end mp-mixed-precision
  static_assert(decltype(step)::model_parallel_step::mixed_precision);
  const std::size_t dp = step.dp_size(), row0 = step.data_rank() * B, n = detail::parameter_block_size_of(local);
  const double ttol = zero >= 2 ? layer_twin_tol : twin_tol;
  if constexpr (zero == 3) WEFT_CHECK(bf16_params.size() < n);  // ZeRO-3 over the tp shard: layer by layer
  // dp > 1 sums the replicas' bf16 gradients once more in bf16: the run drifts further from the
  // reference (the twin below is then the tight check).
  const double ntol = dp > 1 ? dp_norm_tol : norm_tol, mtol = dp > 1 ? dp_master_tol : master_tol;
  const std::size_t stage = [&] {
    if constexpr (requires { local.stage(); }) return local.stage();
    else return std::size_t{0};
  }();

  // ---- the master is there, in f32 (the control the comparison below rests on) ----
  using bf16_local_t = detail::local_step_t<plan_of<typename P::strategy_type, precision<bf16>>, mpi_communicator>;
  static_assert(std::is_same_v<typename bf16_local_t::M, bf16> && !bf16_local_t::mixed_precision);
  const std::size_t wide = arena_bytes<local_t>(stage), narrow = arena_bytes<bf16_local_t>(stage);
  WEFT_CHECK(local.resident_bytes() == wide);
  std::span<const float> master;  // this rank's f32 master: its block, or its ZeRO-1 shard of it
  std::size_t base = 0;           // the first element of the block `master` holds
  if constexpr (zero == 0) {
    master = f32_master;
    static_assert(std::is_same_v<typename decltype(local.adam_m())::value_type, float>);
    WEFT_CHECK(f32_master.size() == n && local.adam_m().size() == n && local.adam_v().size() == n);
    // f32 master + m + v against bf16 m + v, up to each section's padding to 64 bytes
    WEFT_CHECK(wide - narrow + 3 * 64 >= 8 * n && wide - narrow <= 8 * n + 3 * 64);
    WEFT_CHECK(wide >= 16 * n);  // 2 + 2 + 4 + 4 + 4 bytes a parameter
  } else {
    master = step.inner().master_shard();
    base = step.inner().shard_begin();
    WEFT_CHECK(f32_master.empty());
    WEFT_CHECK(master.size() == step.inner().shard_size() && step.inner().moments_m().size() == master.size());
    WEFT_CHECK(wide == narrow);  // no optimizer state in the arena: the shards hold it
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(step.inner())>::M, float>);
  }

  train_options ro = o;
  ro.grad_accum = k * dp;  // the reference sees every replica's micro-batches
  training_step<reference_plan> ref(ro);
  const auto map = whole_index(local, P::tp);
  const auto count = counted(local);
  std::vector<float> init(ref.master().begin(), ref.master().end());
  // Under ZeRO-1, the same mesh without it beside: the update on f32 master shards against the
  // local step's own f32 master (on dp 2 each bf16 sum is one pair, rounded once either way).
  static_assert((zero >= 1) == !std::is_void_v<Twin>);
  using twin_step = std::conditional_t<zero >= 1, distributed_step<Twin, mpi_communicator>, int>;
  std::optional<twin_step> twin;
  if constexpr (zero >= 1) twin.emplace(world, o);
  double worst_twin = 0;

  // The masters start from the reference's f32 values (not from their bf16 rounding).
  std::size_t init_differ = 0;
  for (std::size_t i = 0; i < master.size(); ++i) init_differ += master[i] != init[map[base + i]];
  WEFT_CHECK(init_differ == 0);

  double worst_loss = 0, worst_norm = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0;
    const auto md = step.step([&](auto tok, auto tgt) { fill_rows(s, i++, row0, tok, tgt); });
    if constexpr (zero >= 1) {
      std::size_t i2 = 0;
      const auto mt = twin->step([&](auto tok, auto tgt) { fill_rows(s, i2++, row0, tok, tgt); });
      const double et = std::max(std::abs(md.loss - mt.loss) / mt.loss, std::abs(md.grad_norm - mt.grad_norm) / mt.grad_norm);
      WEFT_CHECK(et <= ttol);
      worst_twin = std::max(worst_twin, et);
    }
    std::size_t j = 0;
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = replica j / k's micro j % k
      fill_rows(s, j % k, j / k * B, tok, tgt);
      ++j;
    });
    WEFT_CHECK(!md.skipped && !mr.skipped);
    const double el = std::abs(md.loss - mr.loss) / mr.loss, en = std::abs(md.grad_norm - mr.grad_norm) / mr.grad_norm;
    WEFT_CHECK(el <= ref_tol);
    WEFT_CHECK(en <= ntol);
    worst_loss = std::max(worst_loss, el);
    worst_norm = std::max(worst_norm, en);
    if (el > ref_tol || en > ntol || std::getenv("WEFT_VERBOSE"))
      std::fprintf(stderr, "rank %d step %zu: loss %.9g vs %.9g, norm %.9g vs %.9g\n", world.rank(), s, md.loss,
                   mr.loss, md.grad_norm, mr.grad_norm);
  }

  // ---- the f32 masters against the reference's, relative to how far it moved ----
  const auto wr = ref.master();
  // the bf16 parameters of the whole shard block (ZeRO-3: the dp shards gathered)
  const std::vector<bf16> params = [&] {
    if constexpr (zero == 3) return step.inner().parameters();
    else return std::vector<bf16>(local.params().begin(), local.params().end());
  }();
  double sq[3] = {};  // squared: distributed - reference, reference - initial, distributed - twin
  std::size_t unrounded = 0;
  for (std::size_t i = 0; i < master.size(); ++i) {
    const std::size_t w = map[base + i];
    unrounded += params[base + i].bits != bf16(master[i]).bits;
    if (!count[base + i]) continue;
    sq[0] += (static_cast<double>(master[i]) - wr[w]) * (static_cast<double>(master[i]) - wr[w]);
    sq[1] += (static_cast<double>(wr[w]) - init[w]) * (static_cast<double>(wr[w]) - init[w]);
    if constexpr (zero >= 1) {
      const double t = twin->inner().local().master()[base + i];
      sq[2] += (master[i] - t) * (master[i] - t);
    }
  }
  world.all_reduce(std::span<double>(sq, 3), reduce_op::sum);
  const double master_diff = std::sqrt(sq[0] / sq[1]), twin_diff = std::sqrt(sq[2] / sq[1]);
  WEFT_CHECK(twin_diff <= (zero >= 2 ? 2 * ttol : ttol));
  WEFT_CHECK(sq[1] > 0);  // the reference trained
  WEFT_CHECK(master_diff <= mtol);
  WEFT_CHECK(unrounded == 0);  // the bf16 parameters are the new master rounded (one pass)
  WEFT_CHECK(step.step_count() == steps);
  if (world.rank() == 0)
    std::printf("%s bf16/f32 (dp %zu x tp %zu x pp %zu, zero<%zu>), %zu steps: f32 master %zu of %zu elements on "
                "rank 0, arena %zu bytes (%zu with precision<bf16>); worst loss difference %.3g (tolerance %.1g), "
                "worst gradient-norm difference %.3g (tolerance %.1g), master difference %.3g of the training's "
                "movement (tolerance %.2g)\n",
                name.c_str(), dp, P::tp, P::pp, zero, steps, master.size(), n, wide, narrow, worst_loss, ref_tol,
                worst_norm, ntol, master_diff, mtol);
  if (world.rank() == 0 && zero >= 1)
    std::printf("%s against zero<0>: worst loss or norm difference %.3g, master difference %.3g of the movement "
                "(tolerance %.1g)\n", name.c_str(), worst_twin, twin_diff, ttol);
}

// Many updates below half a bf16 ulp of the norm weights (initialised to 1.0, where the ulp is
// 2^-8 below and 2^-7 above): an f32 master accumulates them, a bf16 one rounds each away.
void control(mpi_communicator& world, std::size_t steps) {
  const train_options o = [&] {
    train_options t = options(steps, 1e-3f, false);
    t.grad_accum = K;
    return t;
  }();
  auto f32_master = make_training_step<plan_of<tp2_s<0>>>(world, o);
  auto bf16_master = make_training_step<plan_of<tp2_s<0>, precision<bf16>>>(world, o);
  train_options ro = o;
  training_step<reference_plan> ref(ro);  // dp 1: the same K micro-batches
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0, i2 = 0, j = 0;
    f32_master.step([&](auto tok, auto tgt) { fill_rows(s, i++, 0, tok, tgt); });
    bf16_master.step([&](auto tok, auto tgt) { fill_rows(s, i2++, 0, tok, tgt); });
    ref.step([&](auto tok, auto tgt) { fill_rows(s, j++, 0, tok, tgt); });
  }
  // The norm weights: parameters initialised to the constant 1 (replicated over tp: rank 0's).
  auto& la = f32_master.inner().local();
  auto& lb = bf16_master.inner().local();
  const auto map = whole_index(la, 2);
  const auto pa = la.params(), pb = lb.params(), pr = ref.params();
  // [norm weights, moved in the reference, moved with the f32 master, moved with the bf16
  // master, equal to the reference (f32 master), equal (bf16 master)]
  double c[6] = {};
  if (la.tp_rank() == 0)
    for (const auto& p : la.parameter_infos()) {
      if (p.random_init || p.init_constant != 1.0) continue;
      for (std::size_t i = p.offset; i < p.offset + p.size; ++i) {
        const std::size_t w = map[i];
        c[0] += 1;
        c[1] += static_cast<float>(pr[w]) != 1.0f;
        c[2] += static_cast<float>(pa[i]) != 1.0f;
        c[3] += static_cast<float>(pb[i]) != 1.0f;
        c[4] += pa[i].bits == pr[w].bits;
        c[5] += pb[i].bits == pr[w].bits;
      }
    }
  world.all_reduce(std::span<double>(c, 6), reduce_op::sum);
  WEFT_CHECK(c[0] > 0);
  WEFT_CHECK(c[1] >= 0.5 * c[0]);  // the reference trains its norm weights,
  WEFT_CHECK(c[4] >= 0.9 * c[0]);  // so does tp with the f32 master, to the same bf16 values;
  WEFT_CHECK(c[3] == 0);           // a bf16 master stalls: the comparison would fail
  WEFT_CHECK(c[5] < 0.9 * c[0]);
  if (world.rank() == 0)
    std::printf("control tp2, %zu steps at lr %.0e: of %.0f norm weights, moved: reference %.0f, f32 master %.0f, "
                "bf16 master %.0f; equal to the reference: f32 master %.0f, bf16 master %.0f\n",
                steps, o.optimizer.lr, c[0], c[1], c[2], c[3], c[4], c[5]);
}
}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string preset = argc > 1 ? argv[1] : "";
  const long steps_arg = argc > 2 ? test::number_arg(argv[2]) : 10;
  test::require_args(world,
                     argc >= 2 && argc <= 3 && test::one_of(preset, {"tp2", "pp2", "tp2-pp2", "dp2-zero1-tp2", "dp2-zero3-tp2", "control"}) &&
                         steps_arg > 0,
                     "mp_mixed_precision: usage: <tp2|pp2|tp2-pp2|dp2-zero1-tp2|dp2-zero3-tp2|control> [steps > 0]", argc, argv);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  if (preset == "tp2") run<plan_of<tp2_s<0>>>(world, preset, steps);
  else if (preset == "pp2") run<plan_of<pp2_s>>(world, preset, steps);
  else if (preset == "tp2-pp2") run<plan_of<tp2_pp2_s>>(world, preset, steps);
  else if (preset == "dp2-zero1-tp2") run<plan_of<tp2_s<1>>, plan_of<tp2_s<0>>>(world, preset, steps);
  else if (preset == "dp2-zero3-tp2") run<plan_of<tp2_s<3>>, plan_of<tp2_s<0>>>(world, preset, steps);
  else control(world, steps);
  return test::finish(world, ("mp_mixed_precision " + preset).c_str());
}
