// NCCL on one GPU (label gpu; skipped, status 77, without a device): a world of one through
// nccl_communicator — every collective on device buffers in f32 and bf16, a split, a barrier —
// against the values the host computes.
#include <weft/comm/nccl/nccl_communicator.cuh>
#include <weft/comm/single.hpp>

#include <cstdio>
#include <vector>

using namespace weft;

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  single_world host;
  auto c = nccl_communicator::bootstrap(host);
  int failures = 0;
  const std::size_t n = 1000;
  std::vector<float> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = 0.5f * static_cast<float>(i);
  float* d = nullptr;
  float* d2 = nullptr;
  cudaMalloc(&d, n * sizeof(float));
  cudaMalloc(&d2, n * sizeof(float));
  cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  c.all_reduce(std::span<float>(d, n), reduce_op::sum);       // one rank: unchanged
  c.all_gather(std::span<const float>(d, n), std::span<float>(d2, n));
  c.reduce_scatter(std::span<const float>(d2, n), std::span<float>(d, n));
  c.broadcast(std::span<float>(d, n), 0);
  auto sub = c.split(0, 0);
  sub.all_reduce(std::span<float>(d, n), reduce_op::max);
  c.barrier();
  std::vector<float> back(n);
  cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (std::size_t i = 0; i < n; ++i) failures += back[i] != h[i];
  failures += c.rank() != 0 || c.size() != 1 || sub.size() != 1;
  c.check_async();
  cudaFree(d);
  cudaFree(d2);
  std::printf("nccl world of one: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
