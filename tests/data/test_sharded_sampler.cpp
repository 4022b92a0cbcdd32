// Tests of sharded_sampler: the stream of windows is a function of (seed, global sample index)
// only, so data-parallel slices are disjoint and complete, the stream is the same at every
// data-parallel size, and a saved position resumes exactly, also at another size.
// Every token of the test corpus encodes its own position (shard * 10000 + offset), so a window
// tells where it was read from without trusting the sampler's own bookkeeping.
#include "weft/data/shard_writer.hpp"
#include "weft/data/sharded_sampler.hpp"
#include "weft/data/batch_source.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <array>
#include <cstdint>
#include <set>
#include <vector>

using namespace weft;
using weft_test::put_le;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

constexpr std::size_t S = 8;

// Shards of lengths 50 (6 windows), 9 (one), 5 (none), 101 (12 windows + 4 tokens left over), 33 (4):
// 23 windows in all.
const std::vector<std::size_t> lengths{50, 9, 5, 101, 33};

struct corpus {
  temp_dir dir;
  token_shards shards;
  corpus() {
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      std::string b;
      for (std::size_t i = 0; i < lengths[k]; ++i) put_le(b, k * 10000 + i, k % 2 ? 4 : 2);
      // Alternate raw uint16 and raw uint32 (named .u32.bin).
      write_bytes(dir / ("c_" + std::to_string(k) + (k % 2 ? ".u32.bin" : ".bin")), b);
    }
    shards = token_shards::open(dir.path());
  }
};

std::size_t expected_windows() {
  std::size_t w = 0;
  for (auto n : lengths) w += n > S ? (n - 1) / S : 0;
  return w;
}

// The (shard, offset) a window's first input token names; checks the window is consecutive
// tokens of one shard and that the targets are the inputs shifted by one.
std::pair<std::size_t, std::size_t> where(std::span<const std::int32_t> in, std::span<const std::int32_t> tg) {
  const std::size_t shard = static_cast<std::size_t>(in[0]) / 10000, off = static_cast<std::size_t>(in[0]) % 10000;
  for (std::size_t i = 0; i < S; ++i) {
    REQUIRE(in[i] == in[0] + static_cast<std::int32_t>(i));
    REQUIRE(tg[i] == in[0] + static_cast<std::int32_t>(i) + 1);
  }
  REQUIRE(off % S == 0);                  // windows sit at stride S
  REQUIRE(off + S + 1 <= lengths[shard]);  // and never cross the end of their shard
  return {shard, off};
}

// The windows (first token of each row) that ranks 0..world-1 read in `steps` steps, in global order.
template <std::size_t B>
std::vector<std::int32_t> stream(const token_shards& shards, std::uint64_t seed, std::size_t world, std::size_t steps,
                                 stream_state start = {}) {
  std::vector<std::vector<std::int32_t>> per_rank(world);
  for (std::size_t r = 0; r < world; ++r) {
    sharded_sampler<B, S> s(shards, seed, data_shard{r, world});
    if (start != stream_state{}) s.set_state(start);
    std::array<std::int32_t, B * S> in{}, tg{};
    for (std::size_t k = 0; k < steps; ++k) {
      s.next(in, tg);
      for (std::size_t b = 0; b < B; ++b) {
        where(std::span<const std::int32_t>(in).subspan(b * S, S), std::span<const std::int32_t>(tg).subspan(b * S, S));
        per_rank[r].push_back(in[b * S]);
      }
    }
  }
  // Interleave: global batch k = rank 0's rows, rank 1's rows, ...
  std::vector<std::int32_t> out;
  for (std::size_t k = 0; k < steps; ++k)
    for (std::size_t r = 0; r < world; ++r)
      for (std::size_t b = 0; b < B; ++b) out.push_back(per_rank[r][k * B + b]);
  return out;
}

}  // namespace

TEST_CASE("sharded_sampler: a batch source of (batch, seq) spans", "[data][sharded_sampler]") {
  STATIC_REQUIRE(batch_source<sharded_sampler<4, 64>, 4 * 64>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<stream_state>);
}

TEST_CASE("sharded_sampler: each epoch visits every window exactly once", "[data][sharded_sampler]") {
  corpus c;
  sharded_sampler<1, S> s(c.shards, 7);
  REQUIRE(s.windows() == expected_windows());
  const std::size_t w = s.windows();
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<std::pair<std::size_t, std::size_t>> seen;
    std::vector<std::int32_t> order;
    std::array<std::int32_t, S> in{}, tg{};
    for (std::size_t i = 0; i < w; ++i) {
      REQUIRE(s.epoch() == epoch);
      s.next(in, tg);
      seen.insert(where(in, tg));
      order.push_back(in[0]);
    }
    REQUIRE(seen.size() == w);  // a permutation: all distinct, all windows
    // Shuffled: not in shard order (the chance of the identity for 23 windows is 1/23!).
    REQUIRE_FALSE(std::is_sorted(order.begin(), order.end()));
  }
}

TEST_CASE("sharded_sampler: epochs and seeds give different orders", "[data][sharded_sampler]") {
  corpus c;
  const auto w = expected_windows();
  const auto a = stream<1>(c.shards, 1, 1, 2 * w);
  const auto b = stream<1>(c.shards, 2, 1, w);
  REQUIRE(std::vector<std::int32_t>(a.begin(), a.begin() + static_cast<long>(w)) != std::vector<std::int32_t>(a.begin() + static_cast<long>(w), a.end()));
  REQUIRE(std::vector<std::int32_t>(a.begin(), a.begin() + static_cast<long>(w)) != b);
}

TEST_CASE("sharded_sampler: the stream is the same at dp = 1, 2, 4; slices are disjoint and complete",
          "[data][sharded_sampler]") {
  corpus c;
  constexpr std::size_t steps = 12;
  // Global batch 8 = 1 x 8 = 2 x 4 = 4 x 2: the concatenated slices must be equal.
  const auto dp1 = stream<8>(c.shards, 42, 1, steps);
  const auto dp2 = stream<4>(c.shards, 42, 2, steps);
  const auto dp4 = stream<2>(c.shards, 42, 4, steps);
  REQUIRE(dp1.size() == 8 * steps);
  REQUIRE(dp2 == dp1);
  REQUIRE(dp4 == dp1);
  // Within one epoch (the first 23 samples) the ranks' rows are disjoint
  // and together every window.
  const std::set<std::int32_t> first_epoch(dp4.begin(), dp4.begin() + static_cast<long>(expected_windows()));
  REQUIRE(first_epoch.size() == expected_windows());
  // Each rank's rows are exactly its contiguous slice of the global batch.
  sharded_sampler<2, S> r3(c.shards, 42, data_shard{3, 4});
  std::array<std::int32_t, 2 * S> in{}, tg{};
  r3.next(in, tg);
  REQUIRE(in[0] == dp1[6]);
  REQUIRE(in[S] == dp1[7]);
  REQUIRE(r3.state().samples == 8);  // the position counts global samples
}

TEST_CASE("sharded_sampler: save at dp = 4, resume at dp = 2 and dp = 1", "[data][sharded_sampler]") {
  corpus c;
  // Run at dp = 4 (B = 2) for 5 steps and save every rank's state: all the same.
  std::vector<stream_state> saved;
  for (std::size_t r = 0; r < 4; ++r) {
    sharded_sampler<2, S> s(c.shards, 99, data_shard{r, 4});
    std::array<std::int32_t, 2 * S> in{}, tg{};
    for (int k = 0; k < 5; ++k) s.next(in, tg);
    saved.push_back(s.state());
  }
  for (const auto& st : saved) REQUIRE(st == saved[0]);
  REQUIRE(saved[0] == stream_state{99, 40});

  // The uninterrupted run at dp = 1 with global batch 8.
  const auto whole = stream<8>(c.shards, 99, 1, 9);
  // Resume at dp = 2 (B = 4, same global batch): steps 5.. of the whole run.
  const auto resumed2 = stream<4>(c.shards, 0, 2, 4, saved[0]);
  REQUIRE(resumed2 == std::vector<std::int32_t>(whole.begin() + 40, whole.end()));
  // Resume at dp = 1 with another global batch (B = 3): the same samples, grouped by three.
  const auto resumed1 = stream<3>(c.shards, 0, 1, 11, saved[0]);
  REQUIRE(std::vector<std::int32_t>(resumed1.begin(), resumed1.begin() + 32) ==
          std::vector<std::int32_t>(whole.begin() + 40, whole.end()));

  // set_state restores the seed too (the sampler above was built with seed 0).
  sharded_sampler<1, S> s(c.shards, 0);
  s.set_state(saved[0]);
  REQUIRE(s.seed() == 99);
  std::array<std::int32_t, S> in{}, tg{};
  s.next(in, tg);
  REQUIRE(in[0] == whole[40]);
}

TEST_CASE("sharded_sampler: sequential order reads the shards in order", "[data][sharded_sampler]") {
  corpus c;
  sharded_sampler<1, S> s(c.shards, 5, {}, stream_order::sequential);
  std::array<std::int32_t, S> in{}, tg{};
  std::vector<std::pair<std::size_t, std::size_t>> got;
  for (std::size_t i = 0; i < s.windows(); ++i) {
    s.next(in, tg);
    got.push_back(where(in, tg));
  }
  REQUIRE(std::is_sorted(got.begin(), got.end()));
  REQUIRE(got.front() == std::pair<std::size_t, std::size_t>{0, 0});
  REQUIRE(got.back() == std::pair<std::size_t, std::size_t>{4, 24});  // shard 4: 33 tokens, windows at 0, 8, 16, 24
}

TEST_CASE("sharded_sampler: errors", "[data][sharded_sampler]") {
  temp_dir dir;
  std::string b;
  for (int i = 0; i < 8; ++i) put_le(b, static_cast<std::uint64_t>(i), 2);
  write_bytes(dir / "tiny.bin", b);
  const auto shards = token_shards::open(dir / "tiny.bin");
  REQUIRE_THROWS_WITH((sharded_sampler<1, 8>(shards, 1)),
                      "weft::sharded_sampler: no shard holds one window of S+1 = 9 tokens (1 shards, 8 tokens). "
                      "Use more data or a shorter sequence.");
  REQUIRE_NOTHROW((sharded_sampler<1, 7>(shards, 1)));
  REQUIRE_THROWS_AS((sharded_sampler<1, 7>(shards, 1, data_shard{2, 2})), std::invalid_argument);
}

TEST_CASE("feistel_permutation: a bijection of [0, n) for awkward n", "[data][sharded_sampler]") {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 5ull, 64ull, 65ull, 1000ull, 4097ull}) {
    const detail::feistel_permutation p(n, n * 31);
    std::vector<bool> hit(n, false);
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto y = p(i);
      REQUIRE(y < n);
      REQUIRE_FALSE(hit[y]);
      hit[y] = true;
    }
  }
}
