// Mixed precision under data parallelism (issue #7, "precision executed"): precision<bf16, f32>
// run by data_parallel_step on 2+ ranks with ZeRO 0-3 against the single-process bf16
// training_step over the same global batch (dp · K micro-batches of B sequences).
//   mpirun -np 2 mpi_dp_mixed_precision <gpt|llama> <zero 1-3> [steps]
//     every rank runs the reference, the zero<0> run and the zero<Z> run side by side:
//     * zero<0> and zero<Z> against the reference: losses within `ref_tol` and gradient norms
//       within `norm_tol` (relative) every step; at the end the f32 master weights' RMS
//       difference from the reference's within `master_tol` of the RMS distance the reference
//       moved from the initial values;
//     * zero<Z> against zero<0>: losses, norms and masters (the same RMS measure) within 1e-4
//       on 2 ranks (the reference's tolerances on more, see below);
//     * zero<Z>'s shards are f32 (the master type) and the bf16 parameters are its master
//       rounded to bf16 (the update writes both in one pass), on every rank.
//   mpirun -np 2 mpi_dp_mixed_precision <gpt|llama> control [steps]
//     the check that the master is f32 matters: many small updates (lr 1e-3, below half a bf16
//     ulp of a norm weight at 1.0) move the f32-master run's norm weights as the reference's,
//     while a run whose master is bf16 (precision<bf16>, the state before this test: moments
//     and update in the parameter dtype) stalls at 1.0 and fails the same comparison.
//   mpirun -np 2 mpi_dp_mixed_precision <gpt|llama> f16 [steps]
//     precision<f16, f32> with dynamic loss scaling under zero<0> and zero<1>: the last rank's
//     gradients overflow in step 2 (fault injection); every rank skips that step and halves its
//     loss scale, as the single-process f16 step given the same overflow does, and the runs
//     agree with it (losses within `ref_tol`) and across ranks (the same parameters).
//
// Tolerances. The reference sums the dp·K micro-batch gradients one by one into bf16; the
// distributed run sums K per rank in bf16 and then the ranks' sums (one more bf16 rounding),
// so the gradients differ by a few bf16 ulps (2^-8 relative): `norm_tol` = 5% on their norm
// (measured 0.5%). AdamW normalises each update, so an element whose gradient is near zero can
// step either way (up to 2·lr) on one ulp of difference: the masters are compared as a whole,
// `master_tol` = 10% of the training's movement (measured 4.7% gpt, 1.8% llama, 6 steps at
// lr 1e-2), and the losses, computed in bf16 activations, within `ref_tol` = 1% (about 2.5
// bf16 ulps; measured 1.2e-4). On 2 ranks zero<1> against zero<0> differs only in the order
// of the double sum of the gradient norm and in where the update runs: 1e-4 (measured 0: bit
// for bit). On 3 ranks the bf16 sums of the bucketed all-reduce and of the reduce-scatter
// associate differently, so zero<Z> is held to the reference's tolerances (measured 3.5e-4
// loss, 3.4% master). So are zero<2> and zero<3> on any number of ranks: they reduce each
// micro-batch's block gradients over the ranks as the block's backward ends and add them to
// the earlier micro-batches' sum in bf16 (data_parallel_step.hpp), where zero<0> adds the
// micro-batches first (measured on 2 ranks: 2e-4 loss, 3.7% master, 0.4% norm).
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/data_parallel_step.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace weft;

namespace {
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<3>>>;  // 3 blocks: ZeRO-3 cycles its two windows
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>>>;
constexpr std::size_t B = 2, S = 8, K = 2;  // per rank: micro-batches of 2 sequences, 2 per step

template <class Model>
using mixed_plan = plan<Model, batch<micro<B>, seq<S>>, precision<bf16, f32>>;
template <class Model>
using bf16_master_plan = plan<Model, batch<micro<B>, seq<S>>, precision<bf16>>;  // the control: no f32 master

constexpr double ref_tol = 1e-2, norm_tol = 5e-2, master_tol = 0.1;

// Token of (step, global micro-batch row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

// This rank's rows of its micro-batch i of step s (the distributed runs).
template <class Model>
auto rank_fill(std::size_t s, std::size_t rank) {
  return [s, rank, i = std::size_t{0}](auto tok, auto tgt) mutable {
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < S; ++t) {
        tok[b * S + t] = token_at(s, i, rank * B + b, t, Model::vocab_size);
        tgt[b * S + t] = token_at(s, i, rank * B + b, t + 1, Model::vocab_size);
      }
    ++i;
  };
}
// The reference's micro-batch j of step s: rank j / K's micro-batch j % K.
template <class Model>
auto global_fill(std::size_t s) {
  return [s, j = std::size_t{0}](auto tok, auto tgt) mutable {
    const std::size_t r = j / K, mi = j % K;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < S; ++t) {
        tok[b * S + t] = token_at(s, mi, r * B + b, t, Model::vocab_size);
        tgt[b * S + t] = token_at(s, mi, r * B + b, t + 1, Model::vocab_size);
      }
    ++j;
  };
}

train_options options(std::size_t steps, float lr, bool clip) {
  train_options o;
  o.optimizer.lr = lr;
  o.schedule = {clip ? std::size_t{2} : 0, clip ? steps : 0, 0.1f};
  o.grad_clip = clip ? 0.5f : 0.0f;  // small enough to clip: the sharded norm must be right
  o.grad_accum = K;
  return o;
}

// The f32 master weights of a distributed run, this rank's shard [begin, begin + n) of the block.
template <class Dist>
std::vector<double> master_of(Dist& d, std::size_t begin, std::size_t n) {
  std::vector<double> out(n);
  if constexpr (Dist::zero_stage == 0) {
    const auto m = d.local().master();
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(m[begin + i]);
  } else {
    const auto m = d.master_shard();
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(m[i]);
  }
  return out;
}

template <class Model, std::size_t Zero>
void run(mpi_communicator& world, std::size_t steps) {
  using P = mixed_plan<Model>;
  const std::size_t dp = static_cast<std::size_t>(world.size()), rank = static_cast<std::size_t>(world.rank());
  const train_options o = options(steps, 1e-2f, true);
  // Two ranks: each bf16 sum of the reduction is one pair, rounded once whatever the algorithm
  // (bucketed all-reduce, reduce-scatter), so zero<1> equals zero<0>; on more ranks the
  // algorithms associate the bf16 sums differently, and the runs differ as the reference does.
  // zero<2> and zero<3> reduce the block stack's gradients layer by layer, each micro-batch's
  // over the ranks before the earlier micro-batches are added: they differ as the reference does.
  constexpr bool by_layer = data_parallel_step<P, mpi_communicator, Zero>::grads_by_layer;
  const bool exact = dp == 2 && !by_layer;
  const double zero_tol = exact ? 1e-4 : ref_tol, zero_master_tol = exact ? 1e-4 : master_tol;
  data_parallel_step<P, mpi_communicator, 0> d0(world, o, /*bucket_bytes=*/512);
  train_options ro = o;
  ro.grad_accum = K * dp;  // the reference sees every rank's micro-batches
  training_step<P> ref(ro);

  // example-begin dp-mixed-precision
  // P = plan<Model, batch<micro<2>, seq<8>>, precision<bf16, f32>>
  data_parallel_step<P, mpi_communicator, Zero> dz(world, o, /*bucket_bytes=*/512);
  // bf16 parameters and gradients in the local arena; this rank's shard of the optimizer state in f32
  static_assert(std::is_same_v<typename decltype(dz)::M, float> && decltype(dz)::mixed_precision);
  std::span<float> master = dz.master_shard(), m = dz.moments_m(), v = dz.moments_v();
  std::vector<bf16> params = dz.parameters();  // the whole block (zero<3>: all-gathered from the shards)
  // example-end dp-mixed-precision
  WEFT_CHECK(master.size() == dz.shard_size() && m.size() == dz.shard_size() && v.size() == dz.shard_size());
  WEFT_CHECK(params.size() == P::param_count);
  // zero<3>: the arena holds the layers outside the block stack and two one-block windows
  if constexpr (Zero == 3)
    WEFT_CHECK(dz.local().params().size() + dz.local().param_windows().size() <= P::param_count);  // < from 3 blocks on
  WEFT_CHECK(d0.master_shard().empty() && d0.local().master().size() == P::param_count);

  double worst_ref = 0, worst_zero = 0, worst_norm = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto m0 = d0.step(rank_fill<Model>(s, rank));
    const auto mz = dz.step(rank_fill<Model>(s, rank));
    const auto mr = ref.step(global_fill<Model>(s));
    WEFT_CHECK(!m0.skipped && !mz.skipped && !mr.skipped);
    const double e0 = std::abs(m0.loss - mr.loss) / mr.loss, ez = std::abs(mz.loss - mr.loss) / mr.loss;
    const double e0z = std::abs(mz.loss - m0.loss) / m0.loss;
    WEFT_CHECK(e0 <= ref_tol);
    WEFT_CHECK(ez <= ref_tol);
    WEFT_CHECK(e0z <= zero_tol);
    // The norm: within a few bf16 ulps per element (it squares the rounded gradients).
    const double n0 = std::abs(m0.grad_norm - mr.grad_norm) / mr.grad_norm, nz = std::abs(mz.grad_norm - m0.grad_norm) / m0.grad_norm;
    WEFT_CHECK(n0 <= norm_tol);
    WEFT_CHECK(nz <= (exact ? zero_tol : norm_tol));
    worst_norm = std::max({worst_norm, n0, nz});
    worst_ref = std::max({worst_ref, e0, ez});
    worst_zero = std::max(worst_zero, e0z);
    if (rank == 0 && (e0 > ref_tol || ez > ref_tol || e0z > zero_tol))
      std::fprintf(stderr, "step %zu: loss zero0 %.9g zero%zu %.9g reference %.9g\n", s, m0.loss, Zero, mz.loss, mr.loss);
  }

  // Master weights: this rank's shard of each run against the reference's f32 master, as the
  // size of the difference relative to how far the reference moved from the initial values.
  const std::size_t b = dz.shard_begin(), n = dz.shard_size();
  const auto w0 = master_of(d0, b, n), wz = master_of(dz, b, n);
  const auto wr = ref.master();
  std::vector<float> init(P::param_count);
  initialise_parameters(std::span<float>(init), ref.parameter_infos(), o.seed);
  double sq[4] = {};  // squared: zero<0> - reference, zero<Z> - reference, reference - initial, zero<Z> - zero<0>
  for (std::size_t i = 0; i < n; ++i) {
    const double r = wr[b + i];
    sq[0] += (w0[i] - r) * (w0[i] - r);
    sq[1] += (wz[i] - r) * (wz[i] - r);
    sq[2] += (r - init[b + i]) * (r - init[b + i]);
    sq[3] += (wz[i] - w0[i]) * (wz[i] - w0[i]);
  }
  world.all_reduce(std::span<double>(sq, 4), reduce_op::sum);
  const double master_ref = std::sqrt(std::max(sq[0], sq[1]) / sq[2]), master_zero = std::sqrt(sq[3] / sq[2]);
  // The bf16 parameters (gathered for zero<3>) are the master rounded once.
  const auto pz = dz.parameters();
  std::size_t unrounded = 0;
  for (std::size_t i = 0; i < n; ++i) unrounded += pz[b + i].bits != bf16(static_cast<float>(wz[i])).bits;
  WEFT_CHECK(unrounded == 0);
  // And every rank holds the same parameters after the all-gather.
  std::vector<bf16> gathered(pz.size() * dp);
  world.all_gather(std::span<const bf16>(pz.data(), pz.size()), std::span<bf16>(gathered));
  std::size_t differ = 0;
  for (std::size_t r = 1; r < dp; ++r)
    for (std::size_t i = 0; i < pz.size(); ++i) differ += gathered[r * pz.size() + i].bits != gathered[i].bits;
  WEFT_CHECK(differ == 0);
  WEFT_CHECK(sq[2] > 0);  // the reference trained
  WEFT_CHECK(master_ref <= master_tol);
  WEFT_CHECK(master_zero <= zero_master_tol);
  WEFT_CHECK(dz.step_count() == steps && d0.step_count() == steps);
  if (rank == 0)
    std::printf("bf16/f32 zero<%zu> vs zero<0> vs reference, %zu steps: worst loss difference %.3g vs reference "
                "(tolerance %.1g), %.3g zero<%zu> vs zero<0> (tolerance %.1g); worst master difference %.3g vs "
                "reference, relative to the training's movement (tolerance %.2g), %.3g zero<%zu> vs zero<0> (tolerance %.2g); worst gradient-norm difference %.3g\n",
                Zero, steps, worst_ref, ref_tol, worst_zero, Zero, zero_tol, master_ref, master_tol, master_zero, Zero, zero_master_tol, worst_norm);
}

// Many updates below half a bf16 ulp of the norm weights (initialised to 1.0, where the ulp is
// 2^-8 below and 2^-7 above): an f32 master accumulates them, a bf16 one rounds each away.
template <class Model>
void control(mpi_communicator& world, std::size_t steps) {
  const std::size_t dp = static_cast<std::size_t>(world.size()), rank = static_cast<std::size_t>(world.rank());
  const train_options o = options(steps, 1e-3f, false);
  data_parallel_step<mixed_plan<Model>, mpi_communicator, 1> f32_master(world, o, 512);
  data_parallel_step<bf16_master_plan<Model>, mpi_communicator, 1> bf16_master(world, o, 512);
  static_assert(std::is_same_v<typename decltype(bf16_master)::M, bf16>);
  train_options ro = o;
  ro.grad_accum = K * dp;
  training_step<mixed_plan<Model>> ref(ro);
  for (std::size_t s = 0; s < steps; ++s) {
    f32_master.step(rank_fill<Model>(s, rank));
    bf16_master.step(rank_fill<Model>(s, rank));
    ref.step(global_fill<Model>(s));
  }
  // The norm weights: parameters initialised to the constant 1.
  const std::size_t b = f32_master.shard_begin(), e = b + f32_master.shard_size();
  const auto pa = f32_master.local().params(), pb = bf16_master.local().params(), pr = ref.params();
  // counts: [norm weights in the shard, moved in the reference, moved with the f32 master,
  // moved with the bf16 master, equal to the reference (f32 master), equal (bf16 master)]
  double c[6] = {};
  for (const auto& p : ref.parameter_infos()) {
    if (p.random_init || p.init_constant != 1.0) continue;
    for (std::size_t i = std::max(b, p.offset); i < std::min(e, p.offset + p.size); ++i) {
      c[0] += 1;
      c[1] += static_cast<float>(pr[i]) != 1.0f;
      c[2] += static_cast<float>(pa[i]) != 1.0f;
      c[3] += static_cast<float>(pb[i]) != 1.0f;
      c[4] += pa[i].bits == pr[i].bits;
      c[5] += pb[i].bits == pr[i].bits;
    }
  }
  world.all_reduce(std::span<double>(c, 6), reduce_op::sum);
  WEFT_CHECK(c[0] > 0);
  // The reference trains its norm weights; so does the f32-master run, to the same bf16 values
  // (nearly all of them); the bf16 master stalls: the check the other modes make would fail.
  WEFT_CHECK(c[1] >= 0.5 * c[0]);
  WEFT_CHECK(c[4] >= 0.9 * c[0]);
  WEFT_CHECK(c[3] == 0);
  WEFT_CHECK(c[5] < 0.9 * c[0]);
  if (rank == 0)
    std::printf("control, %zu steps at lr %.0e: of %.0f norm weights, moved: reference %.0f, f32 master %.0f, bf16 "
                "master %.0f; equal to the reference: f32 master %.0f, bf16 master %.0f\n",
                steps, o.optimizer.lr, c[0], c[1], c[2], c[3], c[4], c[5]);
}

// f16: an overflow on one rank skips the step on every rank and halves every rank's scale.
template <class Model>
void f16_overflow(mpi_communicator& world, std::size_t steps) {
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<f16, f32>>;
  const std::size_t dp = static_cast<std::size_t>(world.size()), rank = static_cast<std::size_t>(world.rank());
  constexpr double inf = std::numeric_limits<double>::infinity();
  train_options o = options(steps, 1e-2f, true);
  o.loss_scale.init_scale = 4096.0;
  o.loss_scale.growth_interval = 3;
  o.fault = [last = rank + 1 == dp](std::size_t call) { return call == 2 && last ? inf : 1.0; };
  data_parallel_step<P, mpi_communicator, 0> d0(world, o, 512);
  data_parallel_step<P, mpi_communicator, 1> d1(world, o, 512);
  static_assert(decltype(d1)::scalable && std::is_same_v<typename decltype(d1)::M, float>);
  train_options ro = o;
  ro.grad_accum = K * dp;
  ro.fault = [](std::size_t call) { return call == 2 ? inf : 1.0; };
  training_step<P> ref(ro);
  for (std::size_t s = 0; s < steps; ++s) {
    const auto m0 = d0.step(rank_fill<Model>(s, rank));
    const auto m1 = d1.step(rank_fill<Model>(s, rank));
    const auto mr = ref.step(global_fill<Model>(s));
    // Every rank skips step 2 (only the last rank overflowed), and only it.
    double flags[2] = {m0.skipped ? 1.0 : 0.0, m1.skipped ? 1.0 : 0.0};
    world.all_reduce(std::span<double>(flags, 2), reduce_op::sum);
    const double expect = s == 2 ? static_cast<double>(dp) : 0.0;
    WEFT_CHECK(flags[0] == expect && flags[1] == expect);
    WEFT_CHECK(mr.skipped == (s == 2));
    // The scale: 4096 for steps 0-2, halved by the overflow for 3-5, doubled after 3 good ones.
    const double scale = s <= 2 ? 4096.0 : s <= 5 ? 2048.0 : 4096.0;
    WEFT_CHECK(m0.loss_scale == scale && m1.loss_scale == scale && mr.loss_scale == scale);
    if (s != 2) {
      WEFT_CHECK(std::abs(m0.loss - mr.loss) <= ref_tol * mr.loss);
      WEFT_CHECK(std::abs(m1.loss - mr.loss) <= ref_tol * mr.loss);
      WEFT_CHECK(std::abs(m1.loss - m0.loss) <= 1e-4 * m0.loss);  // 2 ranks: the same f16 sums
    }
    if (rank == 0)
      std::printf("f16 step %zu: loss zero0 %.6f zero1 %.6f reference %.6f, scale %g%s\n", s, m0.loss, m1.loss, mr.loss,
                  m1.loss_scale, m1.skipped ? " (skipped on every rank)" : "");
  }
  WEFT_CHECK(d1.loss_scale_state().overflows() == 1 && d0.loss_scale_state().overflows() == 1);
  WEFT_CHECK(d1.step_count() == steps - 1 && d0.step_count() == steps - 1 && ref.step_count() == steps - 1);
  // Every rank holds the same f16 parameters.
  const auto p = d1.local().params();
  std::vector<f16> all(p.size() * dp);
  world.all_gather(std::span<const f16>(p.data(), p.size()), std::span<f16>(all));
  std::size_t differ = 0;
  for (std::size_t r = 1; r < dp; ++r)
    for (std::size_t i = 0; i < p.size(); ++i) differ += all[r * p.size() + i].bits != all[i].bits;
  WEFT_CHECK(differ == 0);
}

template <class Model>
void dispatch(mpi_communicator& world, const std::string& mode, std::size_t steps) {
  if (mode == "1") run<Model, 1>(world, steps);
  else if (mode == "2") run<Model, 2>(world, steps);
  else if (mode == "3") run<Model, 3>(world, steps);
  else if (mode == "f16") f16_overflow<Model>(world, std::max<std::size_t>(steps, 7));
  else control<Model>(world, steps);
}
}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string model = argc > 1 ? argv[1] : "", mode = argc > 2 ? argv[2] : "";
  const long steps_arg = argc > 3 ? test::number_arg(argv[3]) : 6;
  test::require_args(world,
                     argc >= 3 && argc <= 4 && test::one_of(model, {"gpt", "llama"}) &&
                         test::one_of(mode, {"1", "2", "3", "control", "f16"}) && steps_arg > 0,
                     "dp_mixed_precision: usage: <gpt|llama> <1|2|3|control|f16> [steps > 0]", argc, argv);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  if (model == "gpt") dispatch<gpt_t>(world, mode, steps);
  else dispatch<llama_t>(world, mode, steps);
  return test::finish(world, ("dp_mixed_precision " + model + " " + mode).c_str());
}
