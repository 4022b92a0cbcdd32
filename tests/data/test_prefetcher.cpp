// Tests of prefetcher: the same batches in the same order as the source read directly; the
// checkpoint position is that of the batches handed out; the source's exceptions reach the
// consumer after the batches before them; destruction stops a thread that is waiting.
#include "weft/data/prefetcher.hpp"
#include "weft/data/sharded_sampler.hpp"
#include "weft/data/batch_source.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace weft;
using weft_test::put_le;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

constexpr std::size_t B = 4, S = 16;

struct corpus {
  temp_dir dir;
  token_shards shards;
  corpus() {
    for (int k = 0; k < 3; ++k) {
      std::string b;
      for (int i = 0; i < 1000 + 37 * k; ++i) put_le(b, static_cast<std::uint64_t>((i * 131 + k * 7) % 50000), 2);
      write_bytes(dir / ("p_" + std::to_string(k) + ".bin"), b);
    }
    shards = token_shards::open(dir.path());
  }
};

// A source that counts its calls and throws on call number `fail_at` (never if 0).
struct counting_source {
  static constexpr std::size_t tokens_per_batch = 3;
  std::uint64_t calls = 0, fail_at = 0;
  void next(std::span<std::int32_t, 3> tok, std::span<std::int32_t, 3> tgt) {
    if (++calls == fail_at) throw std::runtime_error("disk on fire at batch " + std::to_string(calls));
    for (auto& t : tok) t = static_cast<std::int32_t>(calls);
    for (auto& t : tgt) t = -static_cast<std::int32_t>(calls);
  }
};

}  // namespace

TEST_CASE("prefetcher: a batch source itself", "[data][prefetcher]") {
  STATIC_REQUIRE(batch_source<prefetcher<sharded_sampler<B, S>>, B * S>);
  STATIC_REQUIRE(std::is_same_v<prefetcher<sharded_sampler<B, S>>::state_type, stream_state>);
}

TEST_CASE("prefetcher: the same batches as the sampler read directly", "[data][prefetcher]") {
  corpus c;
  for (const std::size_t depth : {1, 2, 5}) {
    for (const std::size_t rank : {0, 2}) {
      sharded_sampler<B, S> direct(c.shards, 11, data_shard{rank, 3});
      sharded_sampler<B, S> behind(c.shards, 11, data_shard{rank, 3});
      prefetcher pf(behind, depth);
      std::array<std::int32_t, B * S> a_in{}, a_tg{}, b_in{}, b_tg{};
      for (int k = 0; k < 200; ++k) {  // several epochs
        direct.next(a_in, a_tg);
        pf.next(b_in, b_tg);
        REQUIRE(a_in == b_in);
        REQUIRE(a_tg == b_tg);
        REQUIRE(pf.state() == direct.state());  // the position of what was handed out
      }
      REQUIRE(pf.delivered() == 200);
    }
  }
}

TEST_CASE("prefetcher: save and restore the position while reading ahead", "[data][prefetcher]") {
  corpus c;
  sharded_sampler<B, S> reference(c.shards, 3);
  std::vector<std::array<std::int32_t, B * S>> expected(30);
  std::array<std::int32_t, B * S> in{}, tg{};
  for (auto& e : expected) reference.next(e, tg);

  sharded_sampler<B, S> s(c.shards, 3);
  stream_state saved{};
  {
    prefetcher pf(s, 4);
    for (int k = 0; k < 10; ++k) pf.next(in, tg);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it read ahead
    saved = pf.state();
    REQUIRE(saved.samples == 10 * B);  // not the batches read ahead
    // Rewind the running prefetcher to batch 4.
    pf.set_state({3, 4 * B});
    for (int k = 4; k < 8; ++k) {
      pf.next(in, tg);
      REQUIRE(in == expected[static_cast<std::size_t>(k)]);
    }
  }
  // A new sampler and prefetcher resume from the saved position.
  sharded_sampler<B, S> resumed(c.shards, 0);
  resumed.set_state(saved);
  prefetcher pf(resumed, 3);
  for (int k = 10; k < 30; ++k) {
    pf.next(in, tg);
    REQUIRE(in == expected[static_cast<std::size_t>(k)]);
  }
}

TEST_CASE("prefetcher: the source's exception reaches next(), after the batches before it", "[data][prefetcher]") {
  counting_source src;
  src.fail_at = 6;
  prefetcher pf(src, 8);
  std::array<std::int32_t, 3> tok{}, tgt{};
  for (int k = 1; k <= 5; ++k) {
    pf.next(tok, tgt);
    REQUIRE(tok[0] == k);
    REQUIRE(tgt[2] == -k);
  }
  REQUIRE_THROWS_WITH(pf.next(tok, tgt), "disk on fire at batch 6");
  REQUIRE_THROWS_WITH(pf.next(tok, tgt), "disk on fire at batch 6");  // and stays failed
  REQUIRE(src.calls == 6);                                            // no call after the failure
}

TEST_CASE("prefetcher: destruction stops a thread waiting for a free slot", "[data][prefetcher]") {
  counting_source src;
  const auto t0 = std::chrono::steady_clock::now();
  {
    prefetcher pf(src, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the ring fills, the thread waits
    std::array<std::int32_t, 3> tok{}, tgt{};
    pf.next(tok, tgt);
    REQUIRE(tok[0] == 1);
  }
  REQUIRE(src.calls <= 3);  // read at most `depth` ahead of the one batch taken
  REQUIRE(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // And a prefetcher destroyed before its first batch.
  counting_source idle;
  { prefetcher pf(idle, 1); }
  REQUIRE(idle.calls <= 1);
}

TEST_CASE("data pipeline: the loop of docs/data_pipeline.md", "[data][prefetcher]") {
  temp_dir dir;
  for (int k = 0; k < 2; ++k) {
    std::string b;
    for (int i = 0; i < 3000; ++i) put_le(b, static_cast<std::uint64_t>(k * 5000 + i), 4);
    write_bytes(dir / ("fineweb_train_00000" + std::to_string(k) + ".u32.bin"), b);
  }
  write_bytes(dir / "fineweb_val_000000.bin", std::string(64, '\0'));
  const std::size_t rank = 1, world = 2;
  // example-begin data-pipeline
  // Every *.bin of the directory with "train" in its name, memory-mapped, of any width.
  const auto shards = weft::token_shards::open(dir.path(), {}, "train");
  // Rank `rank` of `world` reads its slice of each global batch of world * B windows.
  constexpr std::size_t B = 4, S = 16;
  weft::sharded_sampler<B, S> sampler(shards, /*seed=*/1337, weft::data_shard{rank, world});
  weft::prefetcher loader(sampler, /*depth=*/4);        // a thread reads ahead
  std::array<std::int32_t, B * S> tokens{}, targets{};  // (batch, seq); a step passes its own
  for (int step = 0; step < 10; ++step) {
    loader.next(tokens, targets);  // or: training_step.step(weft::fill_from(loader))
  }
  const weft::stream_state saved = loader.state();  // {seed, samples}: save it in the checkpoint

  // Resume at another data-parallel size: the next samples are those the saved run reads next.
  weft::sharded_sampler<2 * B, S> resumed(shards, /*seed=*/0, weft::data_shard{0, world / 2});
  resumed.set_state(saved);
  // example-end data-pipeline
  REQUIRE(shards.shard_count() == 2);
  REQUIRE(saved == stream_state{1337, 10 * B * world});
  // Rank 0's rows of the next global batch come first in the resumed batch of 2B rows.
  sharded_sampler<B, S> rank0(shards, 1337, data_shard{0, world});
  rank0.set_state(saved);
  std::array<std::int32_t, B * S> r0{}, t0{};
  rank0.next(r0, t0);
  std::array<std::int32_t, 2 * B * S> both{}, tboth{};
  resumed.next(both, tboth);
  REQUIRE(std::equal(r0.begin(), r0.end(), both.begin()));
  loader.next(tokens, targets);  // rank 1's rows: the second half
  REQUIRE(std::equal(tokens.begin(), tokens.end(), both.begin() + B * S));
}
