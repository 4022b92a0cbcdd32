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
 *
 *   build/benchmarks/bench_host_step [steps_a=3] [steps_b=8] [rounds=2]
 */
#include <weft/weft.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

int main(int argc, char** argv) {
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
  return 0;
}
