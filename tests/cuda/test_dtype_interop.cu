// nvcc translation unit for backend/cuda/dtype.cuh: weft::bf16 / f16 cross into CUDA's
// __nv_bfloat16 / __half by bit copy, and weft's own (device-side) rounding agrees with CUDA's
// intrinsics. Exit codes: 0 pass, 1 fail, 77 skip (no CUDA device).
#include <weft/backend/cuda/dtype.cuh>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

static_assert(std::is_same_v<weft::cuda_type_t<weft::bf16>, __nv_bfloat16>);
static_assert(std::is_same_v<weft::cuda_type_t<weft::f16>, __half>);
static_assert(std::is_same_v<weft::cuda_type_t<weft::f32>, float>);
static_assert(std::is_same_v<weft::cuda_type_t<weft::f64>, double>);

namespace {

constexpr int n = 1 << 16;  // one thread per 16-bit pattern

struct buffers {
  weft::bf16 in[n];          // every bf16 pattern
  weft::bf16 round_trip[n];  // from_cuda(to_cuda(in))
  weft::bf16 doubled[n];     // in * 2 by CUDA's __hmul
  float xs[n];               // a sweep of float bit patterns
  weft::bf16 weft_bf16[n];   // weft::bf16(xs), rounded on the device by weft
  weft::bf16 cuda_bf16[n];   // __float2bfloat16_rn(xs)
  weft::f16 weft_f16[n];     // weft::f16(xs)
  weft::f16 cuda_f16[n];     // __float2half_rn(xs)
};

__global__ void interop_kernel(buffers* b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const __nv_bfloat16 native = weft::to_cuda(b->in[i]);
  b->round_trip[i] = weft::from_cuda(native);
  b->doubled[i] = weft::from_cuda(__hmul(native, __float2bfloat16_rn(2.0f)));
  const float x = b->xs[i];
  b->weft_bf16[i] = weft::bf16(x);
  b->cuda_bf16[i] = weft::from_cuda(__float2bfloat16_rn(x));
  b->weft_f16[i] = weft::f16(x);
  b->cuda_f16[i] = weft::from_cuda(__float2half_rn(x));
}

bool is_nan(float x) { return x != x; }

// Equal bits, or both NaN (CUDA returns its canonical NaN).
template <class T>
bool same(T a, T b) {
  return a.bits == b.bits || (is_nan(static_cast<float>(a)) && is_nan(static_cast<float>(b)));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }

  std::vector<buffers> host(1);
  buffers& h = host[0];
  for (int i = 0; i < n; ++i) {
    h.in[i] = weft::bf16::from_bits(static_cast<std::uint16_t>(i));
    const std::uint32_t bits = static_cast<std::uint32_t>(i) * 65537u + 12345u;  // spans all exponents
    std::memcpy(&h.xs[i], &bits, sizeof bits);
  }

  buffers* dev = nullptr;
  if (cudaMalloc(&dev, sizeof(buffers)) != cudaSuccess) return 1;
  cudaMemcpy(dev, &h, sizeof(buffers), cudaMemcpyHostToDevice);
  interop_kernel<<<n / 256, 256>>>(dev);
  const cudaError_t err = cudaMemcpy(&h, dev, sizeof(buffers), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  if (err != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(err));
    return 1;
  }

  int failures = 0;
  for (int i = 0; i < n; ++i) {
    const weft::bf16 twice = h.in[i] * weft::bf16(2.0f);  // the host backend's answer
    const bool ok = h.round_trip[i].bits == h.in[i].bits && same(h.doubled[i], twice) &&
                    same(h.weft_bf16[i], h.cuda_bf16[i]) && same(h.weft_f16[i], h.cuda_f16[i]);
    if (!ok && ++failures <= 5)
      std::printf("FAIL at %d: round trip %04x, doubled %04x vs %04x, bf16 %04x vs %04x, f16 %04x vs %04x\n", i,
                  h.round_trip[i].bits, h.doubled[i].bits, twice.bits, h.weft_bf16[i].bits, h.cuda_bf16[i].bits,
                  h.weft_f16[i].bits, h.cuda_f16[i].bits);
  }
  std::printf("%s: %d of %d patterns differ\n", failures ? "FAIL" : "PASS", failures, n);
  return failures ? 1 : 0;
}
