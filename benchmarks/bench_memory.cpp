/*
 * bench_memory — the static memory plan against the process's real peak memory.
 *
 * Constructs the training step of a plan (which allocates the plan's arena once), runs a few
 * steps, and compares the growth of the peak resident set size (getrusage) with
 * plan::bytes_per_rank. The step itself allocates nothing, so the two agree up to the
 * BLAS library's own buffers and the parameter table.
 *
 *   build/benchmarks/bench_memory
 */
#include <weft/weft.hpp>

#include <cstdio>
#include <sys/resource.h>

using namespace weft;

static double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

using model = gpt<gpt_config<vocab<50257>, context<1024>, width<768>, heads<12>, depth<12>>>;
using plan_t = plan<model, batch<micro<4>, seq<64>>>;

int main() {
  const double before = peak_rss_mib();
  {
    training_step<plan_t> st;
    std::uint64_t s = 7;
    for (int i = 0; i < 2; ++i)
      st.step([&](auto tok, auto tgt) {
        for (std::size_t j = 0; j < tok.size(); ++j) {
          s = s * 6364136223846793005ull + 1;
          tok[j] = static_cast<std::int32_t>((s >> 33) % 50257);
          tgt[j] = static_cast<std::int32_t>((s >> 17) % 50257);
        }
      });
  }
  const double after = peak_rss_mib();
  const double planned = static_cast<double>(plan_t::bytes_per_rank) / (1 << 20);
  plan_t::report();
  std::printf("\npeak RSS before %.1f MiB, after 2 steps %.1f MiB: growth %.1f MiB\n", before, after, after - before);
  std::printf("planned %.1f MiB; measured growth / plan = %.3f\n", planned, (after - before) / planned);
  return 0;
}
