/*
 * 06_train_gpt_cuda — the GPT of 01_train_gpt trained on one GPU.
 *
 * The model, plan and training step are the host example's types; the only difference is the
 * execution context: training_step<Plan, cuda::cuda_context> allocates the plan's arena in
 * device memory (one allocation, its size known at compile time), and every op of the model
 * finds its CUDA body (backend/cuda/ops.cuh) through the context, as the host ops are found
 * through host_context. Token ids are written on the host and copied per micro-batch.
 *
 *   build/examples/train_gpt_cuda --preset small --steps 200
 *   build/examples/train_gpt_cuda --preset gpt2-124m --steps 20     # GPT-2 small at sequence 1024
 *   build/examples/train_gpt_cuda --help
 *
 * Without a device it prints one line and exits 77 (how CTest reports a skip).
 */
#include <weft/backend/cuda/ops.cuh>
#include <weft/data/batch_sampler.hpp>
#include <weft/data/corpus.hpp>
#include <weft/weft.hpp>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

using namespace weft;

// ---- presets: the host example's models, and GPT-2 small at sequence 1024 for the benchmark ----
// example-begin cuda-presets
using tiny_model = gpt<gpt_config<vocab<256>, context<64>, width<64>, heads<4>, depth<2>>>;
using small_model = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>>;
using gpt2_124m = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
using llama_small_model = llama<llama_config<vocab<256>, context<128>, width<192>, heads<6>, kv_heads<2>, depth<4>>>;

using tiny_plan = plan<tiny_model, batch<micro<8>, seq<64>>>;
using small_plan = plan<small_model, batch<micro<16>, seq<64>>>;
using gpt2_plan = plan<gpt2_124m, batch<micro<4>, seq<1024>>>;
using llama_small_plan = plan<llama_small_model, batch<micro<8>, seq<128>>>;
#ifdef WEFT_LARGE_PRESETS
// A GPT-3 XL-shaped model of 1.3B parameters (24 layers of width 2048, 16 heads of 128) at
// sequence 1024, for benchmarks/gpu/run.sh (which defines WEFT_LARGE_PRESETS); bf16 only.
using gpt_1_3b = gpt<gpt_config<vocab<50257>, context<1024>, width<2048>, heads<16>, depth<24>>>;
using gpt_1_3b_plan = plan<gpt_1_3b, batch<micro<8>, seq<1024>>, precision<bf16, f32>, flash_attention>;
#endif
// --precision bf16: bf16 parameters, activations and gradients; f32 master weights and moments;
// attention keeps row statistics, not (B, H, S, S) probabilities, and runs the tensor-core flash
// kernels (flash_attention). f32 keeps the probabilities (cuBLASLt attention).
template <class Plan>
using bf16_of = plan<typename Plan::model_type, batch<micro<Plan::B>, seq<Plan::S>>, precision<bf16, f32>, flash_attention>;
// --precision f16: f16 storage, f32 master weights and moments, dynamic loss scaling (an
// overflow skips the step and halves the scale; train/loss_scaler.hpp); flash attention as bf16.
template <class Plan>
using f16_of = plan<typename Plan::model_type, batch<micro<Plan::B>, seq<Plan::S>>, precision<f16, f32>, flash_attention>;
// example-end cuda-presets

struct options {
  std::string preset = "small";
  std::string precision = "f32";  // f32 | bf16 | f16
  std::string data;  // as 01_train_gpt: text file, directory, token file (.bin); default fortune(6)
  std::size_t steps = 200;
  float lr = 3e-3f;
  std::size_t warmup = 20;
  std::size_t log_every = 10;
  std::uint64_t seed = 1337;
  double peak_tflops = 0;  // for MFU; 0: from the device's name where known
  double expect_loss = 0;  // > 0: exit 3 unless the last step's loss is at most this
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: train_gpt_cuda [options]\n"
      "  --preset NAME      tiny | small | llama-small | gpt2-124m (sequence 1024)   (default small)\n"
#ifdef WEFT_LARGE_PRESETS
      "                     | gpt-1.3b (24 x 2048, sequence 1024, micro-batch 8; bf16 only)\n"
#endif
      "  --precision P      f32 | bf16 | f16 (16-bit storage, f32 master weights and moments; f16 with\n"
      "                     dynamic loss scaling)  (default f32)\n"
      "  --data PATH        text file, directory of text files, or token file (.bin); default fortune(6)\n"
      "  --steps N          optimizer steps (default 200)\n"
      "  --lr X             peak learning rate (default 3e-3)\n"
      "  --log-every N      progress line every N steps (default 10)\n"
      "  --seed N           initialisation and data order (default 1337)\n"
      "  --peak-tflops X    the device's dense peak in the chosen precision, for MFU (default: by device name)\n"
      "  --expect-loss X    (testing) exit 3 unless the last step's loss is at most X\n");
  std::exit(code);
}

// Dense peak of the device in TFLOP/s: f32 without TF32 (the f32 plans' products accumulate in
// f32 on CUDA cores), or bf16 on tensor cores. SXM datasheet values; 0 where unknown.
double peak_tflops(const std::string& name, bool bf16) {
  if (name.find("H200") != std::string::npos || name.find("H100") != std::string::npos) return bf16 ? 989.0 : 67.0;
  if (name.find("A100") != std::string::npos) return bf16 ? 312.0 : 19.5;
  return 0;
}

template <class Plan>
int train_on_device(const options& o, corpus& data, double peak_tflops) {
  constexpr std::size_t B = Plan::B, S = Plan::S;
  cuda::cuda_resources res;
  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.schedule = {o.warmup, o.steps, 0.1f};
  topt.seed = o.seed;
  double last = 0;
  // example-begin cuda-step
  training_step<Plan, cuda::cuda_context> step(topt, res.context());  // the arena is device memory
  batch_sampler<B, S> sampler(data.all(), o.seed);
  std::printf("%s: %zu parameters, arena %.1f MiB on the device\n", o.preset.c_str(), Plan::param_count,
              static_cast<double>(Plan::bytes_per_rank) / (1 << 20));
  for (std::size_t s = 1; s <= o.steps; ++s) {
    const step_metrics m = step.step([&](auto tokens, auto targets) { sampler.next(tokens, targets); });
    // example-end cuda-step
    last = m.loss;
    if (s % o.log_every == 0 || s == 1 || s == o.steps) {
      const double achieved = static_cast<double>(Plan::flops_per_token) * m.tokens_per_second;
      std::printf("step %zu/%zu  loss %.4f  grad norm %.3f  %.0f tok/s  %.2f TFLOP/s", s, o.steps, m.loss, m.grad_norm,
                  m.tokens_per_second, achieved * 1e-12);
      if (peak_tflops > 0) std::printf("  MFU %.1f%%", 100.0 * achieved / (peak_tflops * 1e12));
      if constexpr (std::is_same_v<typename Plan::value_type, f16>) std::printf("  loss scale %.0f", m.loss_scale);
      if (m.skipped) std::printf("  (skipped: %s)", m.nonfinite ? "f16 overflow, loss scale halved" : "not finite");
      std::printf("\n");
    }
  }
  if (o.expect_loss > 0) {
    const bool met = last <= o.expect_loss;
    std::printf("loss goal: %.4f <= %.4f (%s)\n", last, o.expect_loss, met ? "met" : "missed");
    if (!met) return 3;
  }
  return 0;
}

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_gpt_cuda: %s needs a value (see --help)\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") usage(0);
    else if (a == "--preset") o.preset = value();
    else if (a == "--data") o.data = value();
    else if (a == "--precision") o.precision = value();
    else if (a == "--steps") o.steps = std::stoul(value());
    else if (a == "--lr") o.lr = std::stof(value());
    else if (a == "--log-every") o.log_every = std::max<std::size_t>(1, std::stoul(value()));
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--peak-tflops") o.peak_tflops = std::stod(value());
    else if (a == "--expect-loss") o.expect_loss = std::stod(value());
    else {
      std::fprintf(stderr, "train_gpt_cuda: unknown option %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  bool large = false;
#ifdef WEFT_LARGE_PRESETS
  large = o.preset == "gpt-1.3b";
#endif
  if (!large && o.preset != "tiny" && o.preset != "small" && o.preset != "llama-small" && o.preset != "gpt2-124m") {
    std::fprintf(stderr, "train_gpt_cuda: unknown preset '%s'. Use tiny, small, llama-small or gpt2-124m.\n",
                 o.preset.c_str());
    return 2;
  }
  if (o.precision != "f32" && o.precision != "bf16" && o.precision != "f16") {
    std::fprintf(stderr, "train_gpt_cuda: unknown precision '%s'. Use f32, bf16 or f16.\n", o.precision.c_str());
    return 2;
  }
  if (!cuda::device_available()) {
    std::printf("train_gpt_cuda: no CUDA device here (skipped)\n");
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    cuda::check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const bool bf = o.precision == "bf16";
    const double peak = o.peak_tflops > 0 ? o.peak_tflops : peak_tflops(prop.name, o.precision != "f32");
    std::printf("device: %s, %.1f GiB\n", prop.name, static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    // Every token id checked against the preset's vocabulary at open (one line naming file, offset, id).
    const std::size_t vocab = o.preset == "tiny" ? tiny_plan::vocab_size
                            : o.preset == "small" ? small_plan::vocab_size
                            : o.preset == "llama-small" ? llama_small_plan::vocab_size
                                                        : gpt2_plan::vocab_size;
    corpus data = corpus::open(o.data, "train_gpt_cuda", 0, vocab);
    if (o.precision == "f16") {
      if (o.preset == "tiny") return train_on_device<f16_of<tiny_plan>>(o, data, peak);
      if (o.preset == "small") return train_on_device<f16_of<small_plan>>(o, data, peak);
      if (o.preset == "llama-small") return train_on_device<f16_of<llama_small_plan>>(o, data, peak);
      if (o.preset == "gpt2-124m") return train_on_device<f16_of<gpt2_plan>>(o, data, peak);
      throw std::invalid_argument("the " + o.preset + " preset has no f16 form: use --precision bf16");
    }
    if (o.preset == "tiny") return bf ? train_on_device<bf16_of<tiny_plan>>(o, data, peak) : train_on_device<tiny_plan>(o, data, peak);
    if (o.preset == "small") return bf ? train_on_device<bf16_of<small_plan>>(o, data, peak) : train_on_device<small_plan>(o, data, peak);
    if (o.preset == "llama-small")
      return bf ? train_on_device<bf16_of<llama_small_plan>>(o, data, peak) : train_on_device<llama_small_plan>(o, data, peak);
#ifdef WEFT_LARGE_PRESETS
    if (large) {
      if (!bf) throw std::invalid_argument("the gpt-1.3b preset trains in bf16 only: add --precision bf16");
      return train_on_device<gpt_1_3b_plan>(o, data, peak);
    }
#endif
    return bf ? train_on_device<bf16_of<gpt2_plan>>(o, data, peak) : train_on_device<gpt2_plan>(o, data, peak);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gpt_cuda: %s\n", e.what());
    return 1;
  }
}
