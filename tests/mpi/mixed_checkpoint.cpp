// Distributed checkpoints of mixed-precision runs (precision<bf16, f32>; io/distributed_checkpoint.hpp).
//   mpirun -np N mpi_mixed_checkpoint <preset> <root>
// A tiny GPT trains 3 steps under the preset and saves; the same step object trains 3 more
// ("straight"). A second step object, initialised from another seed, loads the checkpoint and
// trains the same 3 steps: its losses, gradient norms and f32 master weights must equal the
// straight run's bit for bit (same strategy, same ranks: the same arithmetic), and right after
// the load its bf16 parameters must be its master rounded once. Then the files are checked
// against the single process: rank 0 loads them into a single-process training_step and its
// master must equal the gathered master of the save (the files hold the f32 master and f32
// moments, not the bf16 copy), and a step under another ZeRO stage loads them too, with the
// same parameters afterwards.
// Presets: zero0, zero1, zero2, zero3 (dp over the world); f16-zero1: precision<f16, f32> under
// ZeRO-1, whose dynamic loss scale (grown from 1024 to 2048 before the save) must come back too;
// tp2 (2 ranks: each holds an f32 master of its shard) and pp2-zero1 (4 ranks: dp 2 x pp 2,
// the stages' master shards held by data_parallel_step) resume bit for bit.
#include "mpi_check.hpp"  // WEFT_CHECK, finish

#include <weft/comm/mpi.hpp>
#include <weft/model.hpp>
#include <weft/parallel.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/distributed_checkpoint.hpp>
#include <weft/exec/distributed_step.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

using namespace weft;

namespace {
using gpt_t = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<2>, depth<2>>>;
constexpr std::size_t B = 2, S = 8, K = 3;
using mixed = precision<bf16, f32>;
template <std::size_t Zero>
using dp_s = strategy<mesh<axis<"dp">>, data_parallel<"dp", zero<Zero>>>;
using tp2_s = strategy<mesh<axis<"dp">, axis<"tp", 2>>, tensor_parallel<"tp">>;
using pp2_zero1_s = strategy<mesh<axis<"dp">, axis<"pp", 2>>, pipeline<"pp", one_f_one_b, microbatches<2>>,
                             data_parallel<"dp", zero<1>>>;
template <class Strategy, class Precision = mixed>
using plan_of = plan<gpt_t, batch<micro<B>, seq<S>>, Precision, Strategy>;
template <class Precision>
using single_plan = plan<gpt_t, batch<micro<B>, seq<S>>, Precision>;

std::int32_t token_at(std::size_t step, std::size_t row, std::size_t pos) {
  std::uint64_t h = step * 1000003u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % gpt_t::vocab_size);
}

train_options options(std::uint64_t seed) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, 2 * K, 0.1f};
  o.grad_clip = 0.5f;
  o.seed = seed;
  o.loss_scale.init_scale = 1024;  // f16 only: the scale doubles after 2 good steps, so the
  o.loss_scale.growth_interval = 2;  // saved scale is not the initial one
  return o;
}

// This rank's master weights: the local step's (zero<0>) or the shard.
template <class Step>
std::vector<float> master_of(Step& step) {
  auto& dp = step.inner();
  if constexpr (std::remove_reference_t<decltype(dp)>::zero_stage == 0) {
    const auto m = dp.local().master();
    return {m.begin(), m.end()};
  } else {
    const auto m = dp.master_shard();
    return {m.begin(), m.end()};
  }
}
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
// The whole parameter block on every rank (ZeRO-3: gathered first).
template <class Step>
auto params_of(Step& step) {
  return step.inner().parameters();
}

template <class Step>
step_metrics train(Step& step, mpi_communicator&, std::size_t s) {
  const std::size_t row0 = step.data_rank() * B;
  return step.step([&](auto tok, auto tgt) {
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < S; ++t) {
        tok[b * S + t] = token_at(s, row0 + b, t);
        tgt[b * S + t] = token_at(s, row0 + b, t + 1);
      }
  });
}

// Before any step, every rank's f32 master (its shard, or the local step's) rounds to its 16-bit
// parameters: the master starts from the same initial values, computed for its shard alone.
template <class Step>
void check_master_rounds_to_params(Step& step) {
  auto& dp = step.inner();
  const std::size_t begin = std::remove_reference_t<decltype(dp)>::zero_stage == 0 ? 0 : dp.shard_begin();
  const std::vector<float> m = master_of(step);
  const auto p = dp.parameters();
  using T = typename std::remove_cvref_t<decltype(p)>::value_type;
  std::size_t rounded = 0;
  for (std::size_t i = 0; i < m.size(); ++i) rounded += p[begin + i].bits == T(m[i]).bits;
  WEFT_CHECK(!m.empty());
  WEFT_CHECK(rounded == m.size());
}

// The files of a data-parallel save against one process and another ZeRO stage.
template <class P, class Other, class Step, class T>
void check_against_others(mpi_communicator& world, Step& straight, const std::filesystem::path& dir,
                          const std::vector<float>& saved_master, const std::vector<T>& loaded_params) {
  constexpr std::size_t Zero = P::strategy_type::zero_stage;
  const auto& root = dir.parent_path();
  // The files against one process: the master there is the gathered master of the save.
  std::vector<float> whole(P::param_count);
  if constexpr (Zero == 0) {
    whole = saved_master;  // every rank holds the whole master
  } else {
    auto& dp = straight.inner();
    std::vector<int> counts(static_cast<std::size_t>(world.size()));
    const int mine = static_cast<int>(dp.shard_size());
    world.all_gather(std::span<const int>(&mine, 1), std::span<int>(counts));
    world.all_gather_v(std::span<const float>(saved_master), std::span<float>(whole), std::span<const int>(counts));
  }
  if (world.rank() == 0) {
    training_step<single_plan<precision<typename P::value_type, typename P::master_type>>> one(options(31));
    load_checkpoint(one, dir);
    WEFT_CHECK(one.step_count() == K);
    const std::vector<float> m(one.master().begin(), one.master().end());
    WEFT_CHECK(same_bits(m, whole));
    const std::vector<T> p(one.params().begin(), one.params().end());
    WEFT_CHECK(same_bits(p, loaded_params));
  }
  // Another ZeRO stage loads the same files: the same parameters.
  auto other = make_training_step<plan_of<Other, precision<typename P::value_type, typename P::master_type>>>(world, options(123));
  load_checkpoint(other, world, root);
  WEFT_CHECK(same_bits(params_of(other), loaded_params));
}
// `Other`: a strategy that loads the same files (void: none, and no single-process comparison:
// tp and pp keep their masters in shards and stages).
template <class Strategy, class Other = void, class Precision = mixed>
void run(mpi_communicator& world, const std::filesystem::path& root) {
  using P = plan_of<Strategy, Precision>;
  using T = typename P::value_type;
  constexpr std::size_t Zero = P::strategy_type::zero_stage;
  if (world.rank() == 0) std::filesystem::remove_all(root);
  world.barrier();
  auto straight = make_training_step<P>(world, options(7));
  check_master_rounds_to_params(straight);
  std::vector<step_metrics> want;
  for (std::size_t s = 0; s < K; ++s) train(straight, world, s);
  const auto dir = save_checkpoint(straight, world, root, checkpoint_state{{5, K}});
  const std::vector<float> saved_master = master_of(straight);
  const double straight_scale = straight.inner().loss_scale_state().scale();
  const std::size_t straight_good = straight.inner().loss_scale_state().good_steps();
  for (std::size_t s = K; s < 2 * K; ++s) want.push_back(train(straight, world, s));

  // Resumed: everything from the files.
  auto resumed = make_training_step<P>(world, options(999));
  const checkpoint_state cs = load_checkpoint(resumed, world, root);
  WEFT_CHECK(cs.sampler.seed == 5 && cs.sampler.step == K);
  WEFT_CHECK(resumed.inner().step_count() == K);
  WEFT_CHECK(same_bits(master_of(resumed), saved_master));
  const std::vector<T> loaded_params = params_of(resumed);
  // f16: the dynamic loss scale came back with the rest.
  WEFT_CHECK(resumed.inner().loss_scale_state().scale() == straight_scale);
  WEFT_CHECK(resumed.inner().loss_scale_state().good_steps() == straight_good);
  if constexpr (std::is_same_v<T, f16>) WEFT_CHECK(straight_scale == 2048);
  {
    // The bf16 parameters are the master rounded once: compare this rank's master elements.
    auto& dp = resumed.inner();
    const std::size_t begin = Zero == 0 ? 0 : dp.shard_begin();
    const std::vector<float> m = master_of(resumed);
    std::size_t rounded = 0;
    for (std::size_t i = 0; i < m.size(); ++i) rounded += loaded_params[begin + i].bits == T(m[i]).bits;
    WEFT_CHECK(rounded == m.size());
  }
  for (std::size_t s = K; s < 2 * K; ++s) {
    const step_metrics m = train(resumed, world, s);
    const step_metrics& w = want[s - K];
    const bool same = std::memcmp(&m.loss, &w.loss, sizeof(double)) == 0 &&
                      std::memcmp(&m.grad_norm, &w.grad_norm, sizeof(double)) == 0;
    WEFT_CHECK(same);
    if (!same)
      std::fprintf(stderr, "rank %d step %zu: resumed loss %.17g norm %.17g, straight %.17g %.17g\n", world.rank(), s,
                   m.loss, m.grad_norm, w.loss, w.grad_norm);
  }
  WEFT_CHECK(same_bits(master_of(resumed), master_of(straight)));
  WEFT_CHECK(want.back().loss != want.front().loss);  // training moved
  if constexpr (!std::is_void_v<Other>) check_against_others<P, Other>(world, straight, dir, saved_master, loaded_params);
}

}  // namespace

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  test::world_rank = world.rank();
  const std::string usage = "usage: mpi_mixed_checkpoint <zero0|zero1|zero2|zero3|f16-zero1|tp2|pp2-zero1> <root>";
  const std::string preset = argc == 3 ? argv[1] : "";
  test::require_args(world, argc == 3 && test::one_of(preset, {"zero0", "zero1", "zero2", "zero3", "f16-zero1", "tp2", "pp2-zero1"}), usage,
                     argc, argv);
  const std::filesystem::path root = argv[2];
  if (preset == "zero0") run<dp_s<0>, dp_s<3>>(world, root);
  else if (preset == "zero1") run<dp_s<1>, dp_s<0>>(world, root);
  else if (preset == "zero2") run<dp_s<2>, dp_s<3>>(world, root);
  else if (preset == "zero3") run<dp_s<3>, dp_s<1>>(world, root);
  else if (preset == "f16-zero1") run<dp_s<1>, dp_s<0>, precision<f16, f32>>(world, root);
  else if (preset == "tp2") run<tp2_s>(world, root);
  else run<pp2_zero1_s>(world, root);
  return test::finish(world, ("mixed_checkpoint " + preset).c_str());
}
