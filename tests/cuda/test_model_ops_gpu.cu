// The backend seam on a device: a whole GPT and a whole LLaMA (model/ as written, unchanged)
// run forward, fused softmax + cross-entropy and backward with frames whose context is
// cuda_context, their ops found by argument-dependent lookup in backend/cuda/ops.cuh; the loss
// and every gradient must match the host training step's on the same parameters and tokens.
// Compiling this file is itself the check that every op a GPT or LLaMA layer calls has a CUDA
// body (for sm_90a and sm_80 in CI). Exit codes: 0 pass, 1 fail, 77 skip (no device).
#include <weft/backend/cuda/ops.cuh>
#include <weft/backend/cuda/staging_copier.cuh>
#include <weft/comm/single.hpp>
#include <weft/weft.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

using namespace weft;

// Several processes sharing one GPU reach MPI through host staging (comm/staging.hpp).
static_assert(communicator<staging_communicator<single_world, cuda::cuda_staging_copier>>);

namespace {

int failures = 0;

template <class Plan>
int check_model(const char* name) {
  using model = typename Plan::model;
  using T = typename Plan::value_type;
  constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows, V = Plan::vocab_size;

  // ---- the host step: parameters, tokens, loss and gradients of one micro-batch ----
  training_step<Plan> host;
  for (std::size_t i = 0; i < rows; ++i) {
    host.tokens()[i] = static_cast<std::int32_t>((i * 7 + 3) % V);
    host.targets()[i] = static_cast<std::int32_t>((i * 5 + 1) % V);
  }
  ops::zero(host.context(), host.grads().data(), host.grads().size());
  const auto scale = static_cast<float>(1.0 / static_cast<double>(rows));
  const double host_loss = host.accumulate(scale);

  // ---- the same arena on the device ----
  cuda::cuda_resources res;
  const cuda::cuda_context& ctx = res.context();
  std::byte* arena = nullptr;
  cuda::check(cudaMalloc(&arena, Plan::bytes_per_rank), "cudaMalloc(arena)");
  cuda::check(cudaMemset(arena, 0, Plan::bytes_per_rank), "cudaMemset(arena)");
  auto at = [&]<class U = T>(typename Plan::section_id s) { return reinterpret_cast<U*>(arena + Plan::offsets[s]); };
  cuda::check(cudaMemcpy(at(Plan::params), host.params().data(), Plan::param_count * sizeof(T), cudaMemcpyHostToDevice),
              "params to device");
  cuda::check(cudaMemcpy(at.template operator()<std::int32_t>(Plan::tokens), host.tokens().data(), rows * sizeof(std::int32_t),
                         cudaMemcpyHostToDevice), "tokens to device");
  cuda::check(cudaMemcpy(at.template operator()<std::int32_t>(Plan::targets), host.targets().data(),
                         rows * sizeof(std::int32_t), cudaMemcpyHostToDevice), "targets to device");

  frame<T, B, S, model, cuda::cuda_context> f;
  f.params = f.root_params = at(Plan::params);
  f.grads = f.root_grads = at(Plan::grads);
  f.kept = at(Plan::kept);
  f.scratch = at(Plan::scratch);
  f.tokens = at.template operator()<std::int32_t>(Plan::tokens);
  f.ctx = ctx;
  T* logits = at(Plan::logits);
  float* losses = at.template operator()<float>(Plan::losses);
  model::forward(f, nullptr, logits);
  ops::softmax_cross_entropy_forward_backward<rows, V>(ctx, losses, logits, at.template operator()<std::int32_t>(Plan::targets), scale);
  model::backward(f, nullptr, logits, nullptr);
  const double device_loss = ops::mean_loss(ctx, losses, rows);
  res.synchronize();

  std::vector<T> grads(Plan::param_count);
  cuda::check(cudaMemcpy(grads.data(), at(Plan::grads), grads.size() * sizeof(T), cudaMemcpyDeviceToHost), "grads to host");
  cudaFree(arena);

  // ---- compare: the loss, and every parameter's gradient relative to its magnitude ----
  int bad = 0;
  if (!(std::abs(device_loss - host_loss) <= 1e-4 * std::abs(host_loss))) {
    std::printf("FAIL %s: loss %.8f on the device, %.8f on the host\n", name, device_loss, host_loss);
    ++bad;
  }
  for (const auto& p : host.parameter_infos()) {
    double ref = 0, diff = 0;
    for (std::size_t i = 0; i < p.size; ++i) {
      const double h = host.grads()[p.offset + i], d = grads[p.offset + i];
      ref = std::max(ref, std::abs(h));
      diff = std::max(diff, std::abs(h - d));
    }
    if (!(diff <= 1e-3 * ref + 1e-7)) {
      std::printf("FAIL %s: gradient of %s differs by %.3g (largest %.3g)\n", name, p.name.c_str(), diff, ref);
      ++bad;
    }
  }
  std::printf("%s %s: loss %.6f (host %.6f), %zu gradients compared\n", bad ? "FAIL" : "ok", name, device_loss, host_loss,
              host.parameter_infos().size());
  return bad;
}

// Whole steps: training_step<Plan, cuda_context> (arena in device memory) against the host step
// from the same initialisation and tokens: the losses of several steps agree.
template <class Plan>
int check_steps(const char* name) {
  constexpr std::size_t V = Plan::vocab_size;
  cuda::cuda_resources res;
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.grad_clip = 0.5f;
  training_step<Plan> host(o);
  training_step<Plan, cuda::cuda_context> device(o, res.context());
  // The same initial parameters on both.
  const std::vector<typename Plan::value_type> p0 = device.copy_params_to_host();
  int bad = 0;
  for (std::size_t i = 0; i < p0.size(); ++i)
    if (p0[i] != host.params()[i]) {
      std::printf("FAIL %s: initial parameter %zu differs\n", name, i);
      ++bad;
      break;
    }
  for (std::size_t s = 0; s < 4; ++s) {
    auto fill = [&](auto tok, auto tgt) {
      for (std::size_t i = 0; i < tok.size(); ++i) {
        tok[i] = static_cast<std::int32_t>((s * 31 + i * 7) % V);
        tgt[i] = static_cast<std::int32_t>((s * 17 + i * 5 + 1) % V);
      }
    };
    const auto h = host.step(fill);
    const auto d = device.step(fill);
    // f32: the two backends differ by summation order only; bf16 and f16: by 16-bit roundings of
    // different intermediate values (each backend rounds once per stored value), so a looser bound.
    constexpr bool narrow = sizeof(typename Plan::value_type) < 4;
    const double tol_loss = narrow ? 2e-2 : 1e-4, tol_norm = narrow ? 5e-2 : 1e-3;
    const bool ok = std::abs(h.loss - d.loss) <= tol_loss * std::abs(h.loss) &&
                    std::abs(h.grad_norm - d.grad_norm) <= tol_norm * h.grad_norm;
    std::printf("%s %s step %zu: loss %.6f (host %.6f), grad norm %.5f (host %.5f)\n", ok ? "ok" : "FAIL", name, s,
                d.loss, h.loss, d.grad_norm, h.grad_norm);
    bad += ok ? 0 : 1;
  }
  return bad;
}

// f16 with dynamic loss scaling on the device: a loss scale that overflows f16 (2^40) makes the
// step non-finite on both backends; it is skipped (the parameters unchanged on the device) and
// the scale halves, the host's verdict and the device's the same. The next step at a sane
// scale trains again.
template <class Plan>
int check_overflow(const char* name) {
  constexpr std::size_t V = Plan::vocab_size;
  cuda::cuda_resources res;
  train_options o;
  o.optimizer.lr = 1e-2f;
  training_step<Plan> host(o);
  training_step<Plan, cuda::cuda_context> device(o, res.context());
  auto fill = [&](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) {
      tok[i] = static_cast<std::int32_t>((i * 7) % V);
      tgt[i] = static_cast<std::int32_t>((i * 5 + 1) % V);
    }
  };
  const double huge = std::ldexp(1.0, 40);
  host.restore_loss_scale(huge, 0);
  device.restore_loss_scale(huge, 0);
  const auto before = device.copy_params_to_host();
  const auto h = host.step(fill);
  const auto d = device.step(fill);
  const auto after = device.copy_params_to_host();
  bool same_params = before.size() == after.size();
  for (std::size_t i = 0; same_params && i < before.size(); ++i) same_params = before[i].bits == after[i].bits;
  const bool ok = d.skipped && d.nonfinite && h.skipped && h.nonfinite && same_params &&
                  device.loss_scale_state().scale() == huge * 0.5 && host.loss_scale_state().scale() == huge * 0.5;
  std::printf("%s %s overflow: device skipped %d (non-finite %d, parameters unchanged %d, scale %.4g -> %.4g), host "
              "skipped %d\n", ok ? "ok" : "FAIL", name, d.skipped, d.nonfinite, same_params, huge,
              device.loss_scale_state().scale(), h.skipped);
  int bad = ok ? 0 : 1;
  device.restore_loss_scale(1024.0, 0);
  const auto d2 = device.step(fill);
  const bool trains = !d2.skipped && std::isfinite(d2.loss);
  std::printf("%s %s after the overflow, at scale 1024: loss %.5f, skipped %d\n", trains ? "ok" : "FAIL", name, d2.loss,
              d2.skipped);
  return bad + (trains ? 0 : 1);
}

using gpt_t = gpt<gpt_config<vocab<96>, context<64>, width<64>, heads<2>, depth<2>>>;
using llama_t = llama<llama_config<vocab<96>, context<64>, width<64>, heads<4>, kv_heads<2>, depth<2>>>;
// Mistral's sliding window, small: each query sees itself and the 16 keys before it.
using llama_window_t =
    llama<llama_config<vocab<96>, context<64>, width<64>, heads<4>, kv_heads<2>, depth<2>, sliding_window<17>>>;

}  // namespace

int main() {
  if (!cuda::device_available()) {
    std::printf("SKIP: no CUDA device (the model's CUDA ops compiled)\n");
    return 77;
  }
  try {
    failures += check_model<plan<gpt_t, batch<micro<2>, seq<64>>, precision<float>>>("gpt f32");
    failures += check_model<plan<llama_t, batch<micro<2>, seq<64>>, precision<float>>>("llama f32");
    failures += check_steps<plan<gpt_t, batch<micro<2>, seq<64>>, precision<float>>>("gpt f32 steps");
    failures += check_steps<plan<llama_t, batch<micro<2>, seq<64>>, precision<float>>>("llama f32 steps");
    failures += check_steps<plan<gpt_t, batch<micro<2>, seq<64>>, precision<bf16, f32>>>("gpt bf16 steps");
    failures += check_steps<plan<llama_t, batch<micro<2>, seq<64>>, precision<bf16, f32>>>("llama bf16 steps");
    failures += check_steps<plan<gpt_t, batch<micro<2>, seq<64>>, precision<f16, f32>>>("gpt f16 steps");
    failures += check_steps<plan<llama_t, batch<micro<2>, seq<64>>, precision<f16, f32>>>("llama f16 steps");
    failures += check_overflow<plan<gpt_t, batch<micro<2>, seq<64>>, precision<f16, f32>>>("gpt f16");
    // flash_attention: row statistics kept; the scalar flash kernels in f32, tensor cores in bf16/f16
    failures += check_model<plan<gpt_t, batch<micro<2>, seq<64>>, precision<float>, flash_attention>>("gpt f32 flash");
    failures += check_model<plan<llama_t, batch<micro<2>, seq<64>>, precision<float>, flash_attention>>("llama f32 flash");
    failures += check_steps<plan<gpt_t, batch<micro<2>, seq<64>>, precision<bf16, f32>, flash_attention>>(
        "gpt bf16 flash steps");
    failures += check_steps<plan<llama_t, batch<micro<2>, seq<64>>, precision<bf16, f32>, flash_attention>>(
        "llama bf16 flash steps");
    failures += check_steps<plan<llama_t, batch<micro<2>, seq<64>>, precision<f16, f32>, flash_attention>>(
        "llama f16 flash steps");
    // a sliding window: cuBLASLt and the scalar flash kernels in f32, tensor cores in bf16/f16
    failures += check_model<plan<llama_window_t, batch<micro<2>, seq<64>>, precision<float>>>("llama f32 window");
    failures += check_model<plan<llama_window_t, batch<micro<2>, seq<64>>, precision<float>, flash_attention>>(
        "llama f32 window flash");
    failures += check_steps<plan<llama_window_t, batch<micro<2>, seq<64>>, precision<bf16, f32>>>(
        "llama bf16 window steps");
    failures += check_steps<plan<llama_window_t, batch<micro<2>, seq<64>>, precision<f16, f32>, flash_attention>>(
        "llama f16 window flash steps");
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
