/*
 * bench_host_step — the host training step's speed next to the machine's sgemm rate.
 *
 * Prints ms/step, tokens/s and achieved GFLOP/s (PaLM's count: 6·N + 12·L·H·Q·T FLOPs per
 * token) for
 *   (a) the GPT-2 124M shape at batch 4 x 64 tokens
 *   (b) L=4, width 256, 4 heads, vocab 256 at batch 8 x 128
 * and, in the same run, single-precision matrix products through the same BLAS, so the ratio
 * (step FLOP/s / sgemm FLOP/s) is measured under the same machine load. Target: >= 0.60 for (a).
 * Then both steps again on 1 thread and on 2 (OpenMP, which the OpenMP build of OpenBLAS shares),
 * interleaved, so the speed-up of 2 threads over 1 is measured under the same load.
 * Target: (a) >= 1.6x on 2 threads (llm.c's CPU trainer: 1.7x).
 * Then precision<bf16, f32> against f32 for both shapes, and PyTorch CPU's step on the same
 * shapes (benchmarks/peer_torch_host_step.py: eager, f32 and bf16 autocast, denormals flushed,
 * fused AdamW, same thread count) when python3 imports torch, all alternated round by round
 * (best of `prec_rounds` each) so the ratios see the same machine load. It ends with two lines
 * a script can read:
 *   bf16 over f32 (a): N.NNx
 *   bf16 over PyTorch bf16 (a): N.NNx        (or "bf16 over PyTorch bf16 (a): skipped (why)")
 * Targets (a): bf16 >= 2x weft's f32; >= 1.5x PyTorch bf16 autocast.
 * WEFT_BENCH_PYTHON names the interpreter (default python3); WEFT_BENCH_NO_PEER=1 skips the peer.
 *
 *   build/benchmarks/bench_host_step [steps_a=3] [steps_b=8] [rounds=2] [prec_rounds=2]
 */
#include <weft/weft.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if defined(WEFT_HAS_CBLAS)
#include <cblas.h>
#endif

using namespace weft;
using clock_type = std::chrono::steady_clock;

// ---- the machine's sgemm rate on the products a step does ----
static double sgemm_gflops(int m, int n, int k, int reps) {
  std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f), b(static_cast<std::size_t>(k) * n, 0.25f),
      c(static_cast<std::size_t>(m) * n);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
#if defined(WEFT_HAS_CBLAS)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
#else
    ops::matmul_forward<1, 1, 1>(weft::host_context{}, c.data(), a.data(), b.data(), nullptr);  // no BLAS: not meaningful
#endif
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    best = std::max(best, 2.0 * m * n * k / s * 1e-9);
  }
  return best;
}

struct result {
  double ms, tokens_per_s, gflops;
};

template <class Plan>
result bench(const char* name, std::size_t steps, bool quiet = false) {
  training_step<Plan> st;
  std::uint64_t s = 1;
  auto fill = [&](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      tok[i] = static_cast<std::int32_t>((s >> 33) % Plan::vocab_size);
      tgt[i] = static_cast<std::int32_t>((s >> 13) % Plan::vocab_size);
    }
  };
  st.step(fill);  // warm-up: first touch of BLAS buffers
  double total = 0;
  for (std::size_t i = 0; i < steps; ++i) total += st.step(fill).seconds;
  const double sec = total / static_cast<double>(steps);
  result r{sec * 1e3, static_cast<double>(Plan::rows) / sec,
           static_cast<double>(Plan::flops_per_token) * static_cast<double>(Plan::rows) / sec * 1e-9};
  if (!quiet)
    std::printf("%-34s %10.1f %12.0f %10.2f   (%zu params, %.1f MiB planned)\n", name, r.ms, r.tokens_per_s, r.gflops,
                Plan::param_count, static_cast<double>(Plan::bytes_per_rank) / (1 << 20));
  return r;
}

using gpt2_124m = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
using plan_a = plan<gpt2_124m, batch<micro<4>, seq<64>>>;
using small_256 = gpt<gpt_config<vocab<256>, context<128>, width<256>, heads<4>, depth<4>>>;
using plan_b = plan<small_256, batch<micro<8>, seq<128>>>;
using plan_a16 = plan<gpt2_124m, batch<micro<4>, seq<64>>, precision<bf16, f32>>;
using plan_b16 = plan<small_256, batch<micro<8>, seq<128>>, precision<bf16, f32>>;

// ---- PyTorch CPU on the same shape: ms/step for f32 and bf16 autocast, or why not ----
struct peer_result {
  double f32_ms = 0, bf16_ms = 0;
  std::string why;  // empty when both were measured
};

static peer_result peer_torch(const char* shape_args, std::size_t steps, int threads) {
  peer_result r;
  if (const char* no = std::getenv("WEFT_BENCH_NO_PEER"); no != nullptr && *no != '\0' && *no != '0') {
    r.why = "WEFT_BENCH_NO_PEER is set";
    return r;
  }
  const char* py = std::getenv("WEFT_BENCH_PYTHON");
  const std::string cmd = std::string(py != nullptr ? py : "python3") + " " WEFT_SOURCE_DIR
                          "/benchmarks/peer_torch_host_step.py " + shape_args + " --steps " + std::to_string(steps) +
                          " --threads " + std::to_string(threads) + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    r.why = "could not start python";
    return r;
  }
  char line[512];
  std::string last;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    double ms = 0;
    if (std::sscanf(line, "peer torch f32 ms %lf", &ms) == 1) r.f32_ms = ms;
    else if (std::sscanf(line, "peer torch bf16 ms %lf", &ms) == 1) r.bf16_ms = ms;
    else last = line;
  }
  const int rc = pclose(f);
  if (r.f32_ms <= 0 || r.bf16_ms <= 0) {
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    r.why = rc != 0 && !last.empty() ? last : "no timings from " WEFT_SOURCE_DIR "/benchmarks/peer_torch_host_step.py";
  }
  return r;
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when the output is a file or a pipe
  const std::size_t steps_a = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 3;
  const std::size_t steps_b = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 8;
  const char* env_threads = std::getenv("OPENBLAS_NUM_THREADS");
  const char* env_core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("bench_host_step: OPENBLAS_NUM_THREADS=%s OPENBLAS_CORETYPE=%s\n", env_threads ? env_threads : "(unset)",
              env_core ? env_core : "(unset)");

  // sgemm at the step's own shapes: (a) 256 tokens x 768 -> 3072 and -> 50257; (b) 1024 x 256 -> 1024.
  const double g_a = std::max(sgemm_gflops(256, 3072, 768, 5), sgemm_gflops(256, 50257, 768, 2));
  const double g_b = sgemm_gflops(1024, 1024, 256, 8);
  std::printf("sgemm rate: %.2f GFLOP/s at (a)'s shapes, %.2f GFLOP/s at (b)'s shapes\n\n", g_a, g_b);

  std::printf("%-34s %10s %12s %10s\n", "configuration", "ms/step", "tokens/s", "GFLOP/s");
  const result a = bench<plan_a>("(a) GPT-2 124M, 4 x 64", steps_a);
  const result b = bench<plan_b>("(b) L4 W256 H4 V256, 8 x 128", steps_b);

  // Re-measure sgemm after the steps: the ratio uses the mean of before and after.
  const double g_a2 = std::max(sgemm_gflops(256, 3072, 768, 5), sgemm_gflops(256, 50257, 768, 2));
  const double g_b2 = sgemm_gflops(1024, 1024, 256, 8);
  const double ra = a.gflops / (0.5 * (g_a + g_a2)), rb = b.gflops / (0.5 * (g_b + g_b2));
  std::printf("\nratio step/sgemm: (a) %.2f   (b) %.2f\n", ra, rb);
  std::printf("target (a) >= 0.60: %s\n", ra >= 0.60 ? "met" : "NOT met");

  // ---- threads: 1 against 2, alternated (best of `rounds` each), same process, same load ----
  const std::size_t rounds = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 2;
  const int threads0 = host_threads();
  double a1 = 1e300, a2 = 1e300, b1 = 1e300, b2 = 1e300;
  for (std::size_t r = 0; r < rounds; ++r) {
    set_host_threads(1);
    a1 = std::min(a1, bench<plan_a>("", steps_a, true).ms);
    b1 = std::min(b1, bench<plan_b>("", steps_b, true).ms);
    set_host_threads(2);
    a2 = std::min(a2, bench<plan_a>("", steps_a, true).ms);
    b2 = std::min(b2, bench<plan_b>("", steps_b, true).ms);
  }
  set_host_threads(threads0);
  std::printf("\nthreads (%s; %u hardware threads):\n", host_backend_summary().c_str(),
              std::thread::hardware_concurrency());
  std::printf("%-34s %12s %12s %10s\n", "configuration", "1 thread ms", "2 threads ms", "speed-up");
  std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(a) GPT-2 124M, 4 x 64", a1, a2, a1 / a2);
  std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(b) L4 W256 H4 V256, 8 x 128", b1, b2, b1 / b2);
  std::printf("target (a) >= 1.6x on 2 threads: %s\n", a1 / a2 >= 1.6 ? "met" : "NOT met");

  // ---- precision: f32 and bf16, weft and PyTorch, alternated round by round (best of each) ----
  const std::size_t prec_rounds = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 2;
  const char* shape_a = "--vocab 50257 --context 1024 --width 768 --heads 12 --depth 12 --batch 4 --seq 64";
  const char* shape_b = "--vocab 256 --context 128 --width 256 --heads 4 --depth 4 --batch 8 --seq 128";
  double wa32 = 1e300, wa16 = 1e300, wb32 = 1e300, wb16 = 1e300;
  double pa32 = 1e300, pa16 = 1e300, pb32 = 1e300, pb16 = 1e300;
  std::string peer_why;
  for (std::size_t r = 0; r < std::max<std::size_t>(prec_rounds, 1); ++r) {
    wa32 = std::min(wa32, bench<plan_a>("", steps_a, true).ms);
    wa16 = std::min(wa16, bench<plan_a16>("", steps_a, true).ms);
    wb32 = std::min(wb32, bench<plan_b>("", steps_b, true).ms);
    wb16 = std::min(wb16, bench<plan_b16>("", steps_b, true).ms);
    if (peer_why.empty()) {
      const peer_result pa = peer_torch(shape_a, steps_a, host_threads());
      const peer_result pb = pa.why.empty() ? peer_torch(shape_b, steps_b, host_threads()) : pa;
      peer_why = !pa.why.empty() ? pa.why : pb.why;
      if (peer_why.empty()) {
        pa32 = std::min(pa32, pa.f32_ms), pa16 = std::min(pa16, pa.bf16_ms);
        pb32 = std::min(pb32, pb.f32_ms), pb16 = std::min(pb16, pb.bf16_ms);
      }
    }
  }
  std::printf("\nprecision (%s; bf16 products: %s; best of %zu rounds, alternated):\n", host_backend_summary().c_str(),
              host_bf16_product_summary().c_str(), std::max<std::size_t>(prec_rounds, 1));
  std::printf("%-34s %12s %12s %10s\n", "configuration", "f32 ms", "bf16 ms", "bf16/f32");
  std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(a) weft, GPT-2 124M, 4 x 64", wa32, wa16, wa32 / wa16);
  std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(b) weft, L4 W256 H4 V256, 8 x 128", wb32, wb16, wb32 / wb16);
  if (peer_why.empty()) {
    std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(a) PyTorch CPU eager", pa32, pa16, pa32 / pa16);
    std::printf("%-34s %12.1f %12.1f %9.2fx\n", "(b) PyTorch CPU eager", pb32, pb16, pb32 / pb16);
    std::printf("weft over PyTorch: (a) f32 %.2fx, bf16 %.2fx; (b) f32 %.2fx, bf16 %.2fx\n", pa32 / wa32, pa16 / wa16,
                pb32 / wb32, pb16 / wb16);
    std::printf("targets (a): bf16 >= 2x weft f32: %s; bf16 >= 1.5x PyTorch bf16: %s; f32 >= 1.3x PyTorch f32: %s\n",
                wa32 / wa16 >= 2.0 ? "met" : "NOT met", pa16 / wa16 >= 1.5 ? "met" : "NOT met",
                pa32 / wa32 >= 1.3 ? "met" : "NOT met");
  } else {
    std::printf("PyTorch CPU peer: skipped (%s)\n", peer_why.c_str());
    std::printf("target (a): bf16 >= 2x weft f32: %s\n", wa32 / wa16 >= 2.0 ? "met" : "NOT met");
  }
  std::printf("bf16 over f32 (a): %.2fx\n", wa32 / wa16);
  if (peer_why.empty())
    std::printf("bf16 over PyTorch bf16 (a): %.2fx\n", pa16 / wa16);
  else
    std::printf("bf16 over PyTorch bf16 (a): skipped (%s)\n", peer_why.c_str());
  return 0;
}
