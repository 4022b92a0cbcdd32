// Several processes sharing one GPU (NCCL refuses that): data parallelism (ZeRO 0 to 3) over device buffers
// through staging_communicator<mpi_communicator, cuda_staging_copier>, each rank's local step a
// training_step<Plan, cuda_context> with its arena in device memory. Three steps must give the
// losses and gradient norms of one training_step<Plan, cuda_context> over the whole batch.
//   mpirun -np 2 cuda_gpu_shared_dp      (exit 77 on every rank without a device: skipped)
#include <weft/backend/cuda/ops.cuh>
#include <weft/backend/cuda/staging_copier.cuh>
#include <weft/comm/check.hpp>
#include <weft/comm/mpi.hpp>
#include <weft/comm/staging.hpp>
#include <weft/weft.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>

using namespace weft;

using model_t = gpt<gpt_config<vocab<96>, context<64>, width<64>, heads<2>, depth<2>>>;
using plan_t = plan<model_t, batch<micro<2>, seq<64>>, precision<float>>;
using device_step = training_step<plan_t, cuda::cuda_context>;
using staged = staging_communicator<mpi_communicator, cuda::cuda_staging_copier>;

std::int32_t token_at(std::size_t step, std::size_t row, std::size_t pos) {
  return static_cast<std::int32_t>((step * 131 + row * 17 + pos * 7) % 96);
}

// One strategy: data parallelism with ZeRO stage `Zero` over the staged group, three steps
// against one device step over every rank's rows as micro-batches.
template <int Zero>
int run_dp(mpi_communicator& world, const cuda::cuda_resources& res) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;
  staged group(world, cuda::cuda_staging_copier{res.context().stream});
  using local_step = training_step<zero_local_plan_t<plan_t, Zero>, cuda::cuda_context>;  // its arena as ZeRO says
  data_parallel_step<plan_t, staged, Zero, local_step> dp(group, local_step(o, res.context()), 16 << 10);
  train_options ro = o;
  ro.grad_accum = static_cast<std::size_t>(world.size());
  device_step ref(ro, res.context());  // one GPU, every rank's rows as micro-batches

  constexpr std::size_t B = plan_t::B, S = plan_t::S;
  int bad = 0;
  for (std::size_t s = 0; s < 3; ++s) {
    const std::size_t r0 = static_cast<std::size_t>(world.rank()) * B;
    const auto a = dp.step([&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, r0 + b, t);
          tgt[b * S + t] = token_at(s, r0 + b, t + 1);
        }
    });
    std::size_t j = 0;
    const auto e = ref.step([&](auto tok, auto tgt) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < S; ++t) {
          tok[b * S + t] = token_at(s, j * B + b, t);
          tgt[b * S + t] = token_at(s, j * B + b, t + 1);
        }
      ++j;
    });
    const bool ok = std::abs(a.loss - e.loss) <= 1e-5 * std::abs(e.loss) &&
                    std::abs(a.grad_norm - e.grad_norm) <= 1e-4 * e.grad_norm;
    if (!ok) ++bad;
    if (world.rank() == 0 || !ok)
      std::printf("zero%d rank %d step %zu: loss %.7f vs %.7f, grad norm %.6f vs %.6f %s\n", Zero, world.rank(), s,
                  a.loss, e.loss, a.grad_norm, e.grad_norm, ok ? "ok" : "FAIL");
  }
  world.all_reduce(std::span<int>(&bad, 1), reduce_op::sum);
  if (world.rank() == 0)
    std::printf("%s: dp (ZeRO-%d) over %d processes on one GPU\n", bad ? "FAIL" : "ok", Zero, world.size());
  return bad;
}

int main(int argc, char** argv) {
  auto world = mpi::world(argc, argv);
  int have = cuda::device_available() ? 1 : 0;
  world.all_reduce(std::span<int>(&have, 1), reduce_op::max);
  if (!have) {
    if (world.rank() == 0) std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  cuda::cuda_resources res;
  int bad = run_dp<0>(world, res);
  bad += run_dp<1>(world, res);
  bad += run_dp<2>(world, res);
  bad += run_dp<3>(world, res);
  return bad ? 1 : 0;
}
