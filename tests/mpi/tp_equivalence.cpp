// Tensor parallelism (Megatron-LM), with and without sequence parallelism, and dp x tp
// reproduce the single-process run: under mpirun every rank runs its shard of the model and,
// cheaply (the models are tiny), the single-process reference over the whole global batch;
// after several steps with gradient clipping active, the losses, the gradient norms and the
// gathered parameters must agree. f64 tightly, f32 looser.
//   mpirun -np 2 mpi_tp_equivalence <gpt|llama> <tp|tpsp> <f64|f32> [steps]
//   mpirun -np 4 mpi_tp_equivalence <gpt|llama> <dptp|dptpsp> <f64|f32> [steps] [zero 0-3]
// Under zero<2> and zero<3> the tp shard holds its block stack's gradients (and parameters)
// layer by layer, two one-block windows that dp fills and reduce-scatters; the run checks that
// the windows were used (window_reductions, the resident sizes) besides the equivalence.
// Rank layout (tp fastest): tp group = ranks {2d, 2d+1}, dp group = ranks with one tp index.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/exec/data_parallel_step.hpp>
#include <weft/exec/tensor_parallel_step.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace weft;

using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<2>>>;
using llama_t = llama<llama_config<vocab<32>, context<8>, width<16>, heads<4>, kv_heads<2>, depth<2>, ffn<24>>>;
constexpr std::size_t B = 2, S = 8, K = 2;  // per data-parallel rank: micro-batches of 2 sequences, 2 per step
constexpr std::size_t TP = 2;

// Token of (step, global micro-batch row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t micro, std::size_t row, std::size_t pos, std::size_t V) {
  std::uint64_t h = step * 1000003u + micro * 10007u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % V);
}

// Rows of data-parallel rank `d`, micro-batch `i` of step `s`; position 3 of row 1 is ignored (-1).
template <std::size_t V>
auto filler(std::size_t s, std::size_t d, std::size_t& i) {
  return [s, d, &i](auto tok, auto tgt) {
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < S; ++t) {
        tok[b * S + t] = token_at(s, i, d * B + b, t, V);
        tgt[b * S + t] = (b == 1 && t == 3) ? -1 : token_at(s, i, d * B + b, t + 1, V);
      }
    ++i;
  };
}

// The key bias's gradient is zero in exact arithmetic (softmax ignores a constant added to a
// query's scores), so what the run computes for it is rounding noise, which AdamW's division
// by sqrt(v) + eps would blow up to updates of ±lr; in f32 the noise (~1e-9) is not small
// against the default eps 1e-8, so f32 runs use eps 1e-6.
template <class T>
train_options options() {
  train_options o;
  if constexpr (sizeof(T) < sizeof(double)) o.optimizer.eps = 1e-6f;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, 4, 0.1f};
  o.grad_clip = 0.5f;  // small enough to clip: the sharded norm must be right
  o.grad_accum = K;
  return o;
}

// Worst relative difference of the gathered parameters against the reference's.
template <class T>
double worst_difference(std::span<const T> a, std::span<const T> b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])) /
                                std::max(1e-3, std::abs(static_cast<double>(b[i]))));
  return worst;
}

template <class Model, class T, bool SP>
void run_tp(mpi_communicator& world, std::size_t steps, double tol) {
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;
  // example-begin tp-step
  tensor_parallel_step<P, TP, SP> dist(world, options<T>());  // the world is the tp group
  // example-end tp-step
  training_step<P> ref(options<T>());
  // The shards start from the reference's values.
  std::vector<T> whole(P::param_count);
  dist.gather_parameters(whole);
  WEFT_CHECK(worst_difference<T>(whole, ref.params()) == 0.0);

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0, j = 0;
    const auto md = dist.step(filler<Model::vocab_size>(s, 0, i));
    const auto mr = ref.step(filler<Model::vocab_size>(s, 0, j));
    WEFT_CHECK(std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss));
    WEFT_CHECK(std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm);
    WEFT_CHECK(mr.grad_norm > options<T>().grad_clip);  // clipping is active
    if (world.rank() == 0 && std::abs(md.loss - mr.loss) > tol * std::abs(mr.loss))
      std::fprintf(stderr, "step %zu: loss %.17g vs reference %.17g\n", s, md.loss, mr.loss);
  }
  dist.gather_parameters(whole);
  const double worst = worst_difference<T>(whole, ref.params());
  WEFT_CHECK(worst <= tol * 10);
  WEFT_CHECK(dist.step_count() == steps);
  // Evaluation and a checkpoint round trip through the shard maps.
  std::size_t i = 0, j = 0;
  const double ed = dist.evaluate(filler<Model::vocab_size>(99, 0, i), 1);
  const double er = ref.evaluate(filler<Model::vocab_size>(99, 0, j), 1);
  WEFT_CHECK(std::abs(ed - er) <= tol * std::abs(er));
  std::vector<T> before(dist.params().begin(), dist.params().end());
  std::fill(dist.params().begin(), dist.params().end(), T{0});
  dist.load_parameters(whole);
  WEFT_CHECK(std::equal(before.begin(), before.end(), dist.params().begin()));
  if (world.rank() == 0)
    std::printf("tp%zu%s %s: %zu steps, shard %zu of %zu parameters, worst parameter difference %.3g (tolerance %.1g)\n",
                TP, SP ? "+sp" : "", sizeof(T) == 8 ? "f64" : "f32", steps, dist.params().size(),
                static_cast<std::size_t>(P::param_count), worst, tol * 10);
}

template <class Model, class T, bool SP, std::size_t Zero>
void run_dp_tp(mpi_communicator& world, std::size_t steps, double tol) {
  using P = plan<Model, batch<micro<B>, seq<S>>, precision<T>>;
  // example-begin dp-tp-step
  // Under ZeRO >= 1 the local arena holds no moments: the dp step's shards are the only copy.
  using local_t = tensor_parallel_step<zero_local_plan_t<P, Zero>, TP, SP>;
  const int r = world.rank();
  auto tp = world.split(r / static_cast<int>(TP), r % static_cast<int>(TP));  // ranks {2d, 2d+1}
  auto dp = world.split(r % static_cast<int>(TP), r / static_cast<int>(TP));  // ranks with one tp index
  data_parallel_step<P, mpi_communicator, Zero, local_t> dist(dp, local_t(tp, options<T>()), /*bucket_bytes=*/512);
  // example-end dp-tp-step
  const std::size_t dpn = static_cast<std::size_t>(dp.size()), d = static_cast<std::size_t>(dp.rank());

  train_options ro = options<T>();
  ro.grad_accum = K * dpn;  // the reference sees every data-parallel rank's micro-batches
  training_step<P> ref(ro);

  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t i = 0, j = 0;
    const auto md = dist.step(filler<Model::vocab_size>(s, d, i));
    const auto mr = ref.step([&](auto tok, auto tgt) {  // micro j = dp rank j / K's micro j % K
      std::size_t mi = j % K;
      filler<Model::vocab_size>(s, j / K, mi)(tok, tgt);
      ++j;
    });
    WEFT_CHECK(std::abs(md.loss - mr.loss) <= tol * std::abs(mr.loss));
    WEFT_CHECK(std::abs(md.grad_norm - mr.grad_norm) <= tol * mr.grad_norm);
    WEFT_CHECK(mr.grad_norm > options<T>().grad_clip);
    if (world.rank() == 0 && std::abs(md.grad_norm - mr.grad_norm) > tol * mr.grad_norm)
      std::fprintf(stderr, "step %zu: grad norm %.17g vs reference %.17g\n", s, md.grad_norm, mr.grad_norm);
  }
  // example-begin tp-gather
  std::vector<T> whole(P::param_count);
  if constexpr (Zero == 3) {
    // ZeRO-3 layer by layer: the arena holds only the layers outside the block stack; the dp
    // shards all-gathered are this rank's tp shard block, and the tp group makes it whole.
    const std::vector<T> block = dist.parameters();
    dist.local().gather_parameters(block, whole);
  } else {
    dist.local().gather_parameters(whole);  // the single-process block, on every rank of the tp group
  }
  // example-end tp-gather
  const double worst = worst_difference<T>(whole, ref.params());
  WEFT_CHECK(worst <= tol * 10);
  WEFT_CHECK(dist.step_count() == steps);
  if constexpr (Zero <= 1) WEFT_CHECK(dist.buckets_overlapped() > 0);  // dp reduction overlapped backward
  // ZeRO-2/3 hold the block stack layer by layer over the tp shard too: two windows of one
  // block, every block's window reduce-scattered once per micro-batch and step.
  using local_plan = typename local_t::local_plan;
  constexpr std::size_t depth = Model::depth, n = local_plan::param_count, block = local_plan::window_block;
  if constexpr (Zero >= 2) {
    static_assert(decltype(dist)::grads_by_layer && local_t::windowed_grads);
    static_assert(decltype(dist)::layer_by_layer == (Zero == 3) && local_t::windowed_params == (Zero == 3));
    WEFT_CHECK(block > 0 && local_plan::window_blocks == depth);
    WEFT_CHECK(dist.window_reductions() == steps * K * depth);
    WEFT_CHECK(dist.local().grads().size() == n - depth * block);
    WEFT_CHECK(dist.local().grad_windows().size() == 2 * block);
    if constexpr (Zero == 3) {
      WEFT_CHECK(dist.local().params().size() == n - depth * block);
      WEFT_CHECK(dist.local().param_windows().size() == 2 * block);
      WEFT_CHECK(dist.window_gathers() > 0);
      // The whole-block paths say so rather than read a block the arena does not hold.
      bool threw = false;
      try {
        dist.local().gather_parameters(std::span<T>(whole));
      } catch (const std::logic_error&) {
        threw = true;
      }
      WEFT_CHECK(threw);
    } else {
      WEFT_CHECK(dist.local().params().size() == n);
    }
  } else {
    static_assert(!local_t::windowed_grads && !local_t::windowed_params);
    WEFT_CHECK(dist.local().grads().size() == n);
  }
  if (world.rank() == 0)
    std::printf("dp%zu x tp%zu%s zero<%zu> %s: %zu steps, worst parameter difference %.3g (tolerance %.1g)\n", dpn,
                TP, SP ? "+sp" : "", Zero, sizeof(T) == 8 ? "f64" : "f32", steps, worst, tol * 10);
}

template <class Model, class T>
void dispatch(mpi_communicator& world, const std::string& mode, int zero, std::size_t steps, double tol) {
  if (mode == "tp") run_tp<Model, T, false>(world, steps, tol);
  else if (mode == "tpsp") run_tp<Model, T, true>(world, steps, tol);
  else {
    const bool sp = mode == "dptpsp";
    switch (zero) {
      case 0: sp ? run_dp_tp<Model, T, true, 0>(world, steps, tol) : run_dp_tp<Model, T, false, 0>(world, steps, tol); break;
      case 1: sp ? run_dp_tp<Model, T, true, 1>(world, steps, tol) : run_dp_tp<Model, T, false, 1>(world, steps, tol); break;
      case 2: sp ? run_dp_tp<Model, T, true, 2>(world, steps, tol) : run_dp_tp<Model, T, false, 2>(world, steps, tol); break;
      default: sp ? run_dp_tp<Model, T, true, 3>(world, steps, tol) : run_dp_tp<Model, T, false, 3>(world, steps, tol); break;
    }
  }
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string model = argc > 1 ? argv[1] : "", mode = argc > 2 ? argv[2] : "", dtype = argc > 3 ? argv[3] : "";
  const long steps_arg = argc > 4 ? test::number_arg(argv[4]) : 4, zero_arg = argc > 5 ? test::number_arg(argv[5]) : 0;
  test::require_args(world,
                     argc >= 4 && argc <= 6 && test::one_of(model, {"gpt", "llama"}) &&
                         test::one_of(mode, {"tp", "tpsp", "dptp", "dptpsp"}) && test::one_of(dtype, {"f64", "f32"}) &&
                         steps_arg > 0 && zero_arg >= 0 && zero_arg <= 3,
                     "tp_equivalence: usage: <gpt|llama> <tp|tpsp|dptp|dptpsp> <f64|f32> [steps > 0] [zero 0-3]", argc,
                     argv);
  const std::size_t steps = static_cast<std::size_t>(steps_arg);
  const int zero = static_cast<int>(zero_arg);
  const bool dp_mode = mode == "dptp" || mode == "dptpsp";
  if ((mode != "tp" && mode != "tpsp" && !dp_mode) || world.size() % static_cast<int>(TP) != 0 ||
      (!dp_mode && world.size() != static_cast<int>(TP)))
    world.abort(2, "tp_equivalence: use mode tp|tpsp on 2 ranks, dptp|dptpsp on a multiple of 2 ranks.");
  const bool f64 = dtype == "f64";
  const double tol = f64 ? 1e-10 : 2e-4;
  if (model == "gpt") f64 ? dispatch<gpt_t, double>(world, mode, zero, steps, tol) : dispatch<gpt_t, float>(world, mode, zero, steps, tol);
  else f64 ? dispatch<llama_t, double>(world, mode, zero, steps, tol) : dispatch<llama_t, float>(world, mode, zero, steps, tol);
  return test::finish(world, ("tp_equivalence " + model + " " + mode + " " + dtype +
                              (dp_mode ? " zero " + std::to_string(zero) : std::string())).c_str());
}
