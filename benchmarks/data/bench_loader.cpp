/*
 * bench_loader — the data loader's tokens/s next to the training step's, measured in one run.
 *
 * Writes llm.c shards of random tokens (default 4 x 4M tokens, 32 MB) to a temporary directory,
 * then for the demo's "small" preset (examples/01_train_gpt: GPT L4 W128 H4 V256, micro-batch
 * 16 x 64) measures
 *   (a) sharded_sampler::next alone (shuffled windows from the memory-mapped shards),
 *   (b) prefetcher::next: what the consumer waits for when a background thread reads ahead,
 *   (c) the training step fed by synthetic batches, and (d) the same step fed by the prefetcher,
 * and prints loader tokens/s over step tokens/s. Target: >= 20x for (a), so the loader is never
 * the bottleneck; (d) must run at the speed of (c).
 *
 *   build/benchmarks/bench_loader [shard_tokens=4000000] [steps=20]
 */
#include <weft/data.hpp>
#include <weft/weft.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <unistd.h>

using namespace weft;
using clock_type = std::chrono::steady_clock;

// The demo's "small" preset (examples/01_train_gpt/train_gpt.cpp).
using small_model = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>>;
using small_plan = plan<small_model, batch<micro<16>, seq<64>>>;
constexpr std::size_t B = small_plan::B, S = small_plan::S;

static double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Calls `batch()` until `min_seconds` have passed (at least `min_calls`); returns tokens/s.
template <class F>
static double rate(F&& batch, double min_seconds, std::size_t min_calls = 10) {
  std::size_t calls = 0;
  const auto t0 = clock_type::now();
  while (calls < min_calls || seconds_since(t0) < min_seconds) {
    batch();
    ++calls;
  }
  return static_cast<double>(calls * B * S) / seconds_since(t0);
}

int main(int argc, char** argv) {
  const std::size_t shard_tokens = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4'000'000;
  const std::size_t steps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20;

  // ---- shards of random tokens in a temporary directory ----
  std::string tmpl = (std::filesystem::temp_directory_path() / "weft_bench_loader_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "bench_loader: cannot create a temporary directory\n");
    return 1;
  }
  const std::filesystem::path dir = tmpl;
  {
    shard_writer w(dir, {.format = token_format::llmc, .dtype = token_dtype::u16, .shard_tokens = shard_tokens});
    std::mt19937 rng(1);
    std::vector<std::int32_t> chunk(1 << 16);
    for (std::size_t done = 0; done < 4 * shard_tokens; done += chunk.size()) {
      for (auto& t : chunk) t = static_cast<std::int32_t>(rng() % small_plan::vocab_size);
      w.write(std::span<const std::int32_t>(chunk).first(std::min(chunk.size(), 4 * shard_tokens - done)));
    }
  }
  const auto shards = token_shards::open(dir);
  std::printf("bench_loader: %zu shards, %.1f M tokens, %.1f MB; batch %zu x %zu (the demo's small preset)\n",
              shards.shard_count(), static_cast<double>(shards.size()) / 1e6,
              static_cast<double>(shards.file_bytes()) / 1e6, B, S);

  std::array<std::int32_t, B * S> in{}, tg{};
  std::int64_t sink = 0;  // every batch is read, so no copy can be optimised away
  auto use = [&] { sink += in[sink & (B * S - 1)] + tg[(sink >> 3) & (B * S - 1)]; };

  // (a) the sampler alone
  sharded_sampler<B, S> direct(shards, 1337);
  rate([&] { direct.next(in, tg); use(); }, 0.1);  // warm the page cache
  const double loader = rate([&] { direct.next(in, tg); use(); }, 0.5);

  // (b) the consumer's side of the prefetcher (the thread reads ahead meanwhile)
  sharded_sampler<B, S> behind(shards, 1337);
  double prefetched = 0;
  {
    prefetcher pf(behind, 4);
    prefetched = rate([&] { pf.next(in, tg); use(); }, 0.5);
  }

  // (c) the training step on synthetic batches, (d) the step fed by the prefetcher
  training_step<small_plan> st;
  std::uint64_t x = 1;
  auto synthetic = [&](auto tok, auto tgt) {
    for (std::size_t i = 0; i < tok.size(); ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      tok[i] = static_cast<std::int32_t>((x >> 33) % small_plan::vocab_size);
      tgt[i] = static_cast<std::int32_t>((x >> 13) % small_plan::vocab_size);
    }
  };
  st.step(synthetic);  // warm-up
  double step_c = 0, step_d = 0;
  {
    sharded_sampler<B, S> fed(shards, 7);
    prefetcher pf(fed, 4);
    // Alternate (c) and (d) so both see the same machine load.
    double tc = 0, td = 0;
    for (std::size_t i = 0; i < steps; ++i) {
      tc += st.step(synthetic).seconds;
      td += st.step(fill_from(pf)).seconds;
    }
    step_c = static_cast<double>(steps * B * S) / tc;
    step_d = static_cast<double>(steps * B * S) / td;
  }

  std::printf("\n%-52s %14s\n", "", "tokens/s");
  std::printf("%-52s %14.0f\n", "(a) sharded_sampler::next (mmap, shuffled windows)", loader);
  std::printf("%-52s %14.0f\n", "(b) prefetcher::next (consumer side, depth 4)", prefetched);
  std::printf("%-52s %14.0f\n", "(c) training step, synthetic batches", step_c);
  std::printf("%-52s %14.0f\n", "(d) training step fed by the prefetcher", step_d);
  const double ratio = loader / step_c, ratio_pf = prefetched / step_c;
  std::printf("\nratio loader/step: (a) %.0fx   (b) %.0fx;   step (d)/(c): %.2f\n", ratio, ratio_pf, step_d / step_c);
  std::printf("target loader >= 20x the step: %s   (checksum %lld)\n", std::min(ratio, ratio_pf) >= 20.0 ? "met" : "NOT met",
              static_cast<long long>(sink));

  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
