#pragma once
// ---- sharded_sampler: a shuffled, data-parallel-size-independent stream of windows ----
// The corpus (all shards) is cut into windows of S+1 tokens at stride S, never across a shard
// boundary: shard i of n_i tokens has (n_i - 1) / S windows, W in all. The *global sample*
// g = 0, 1, 2, ... is window perm_e(g mod W) of epoch e = g / W, where perm_e is a pseudo-
// random permutation of [0, W) keyed on (seed, e) and evaluated pointwise (a Feistel network
// with cycle walking), so nothing is stored and any sample is computed in O(1).
//
// Global batch k of size G = world * B is samples [first, first + G), first = samples consumed;
// data-parallel rank r takes the contiguous slice [first + r*B, first + r*B + B). The stream of
// samples is therefore one sequence whatever the data-parallel size, and the whole position is
// `stream_state{seed, samples}`: a checkpoint taken at dp = 4 resumes exactly at dp = 2.
// Each epoch visits every window once. `next` fills caller-owned buffers: no allocation, no
// exceptions, no I/O but page faults on the mapped shards.
#include "weft/core/diagnostics.hpp"     // diag::at_least
#include "weft/data/token_shards.hpp"    // token_shards
#include "weft/data/data_error.hpp"     // data_error
#include "weft/data/data_shard.hpp"     // data_shard
#include "weft/data/splitmix64.hpp"     // splitmix64
#include "weft/data/token_view.hpp"     // token_view

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// The position of a `sharded_sampler` in its stream: everything a checkpoint needs.
/// Independent of the data-parallel size and the batch size. Save it as two little-endian uint64.
struct stream_state {
  std::uint64_t seed = 0;
  std::uint64_t samples = 0;  ///< global samples (windows) consumed by all ranks together

  friend constexpr bool operator==(const stream_state&, const stream_state&) = default;
};

/// Order of the windows within each epoch.
enum class stream_order {
  shuffled,    ///< a permutation per epoch keyed on (seed, epoch): training
  sequential,  ///< shard by shard, window by window: evaluation
};

namespace detail {

// A keyed pseudo-random permutation of [0, n): a 4-round balanced Feistel network on the
// smallest even number of bits covering n, with cycle walking (re-apply until the value falls
// below n; a bijection of [0, 2^bits) restricted this way is a bijection of [0, n), and since
// 2^bits < 4n it takes fewer than 4 rounds of walking on average).
class feistel_permutation {
 public:
  feistel_permutation() = default;
  feistel_permutation(std::uint64_t n, std::uint64_t key) noexcept : n_(n) {
    int bits = n <= 1 ? 2 : static_cast<int>(std::bit_width(n - 1));
    bits += bits & 1;
    half_ = bits / 2;
    mask_ = (std::uint64_t{1} << half_) - 1;
    for (int r = 0; r < rounds; ++r) keys_[r] = splitmix64::mix64(key + static_cast<std::uint64_t>(r) * splitmix64::increment);
  }

  std::uint64_t operator()(std::uint64_t x) const noexcept {
    do x = once(x);
    while (x >= n_);
    return x;
  }

 private:
  static constexpr int rounds = 4;

  std::uint64_t once(std::uint64_t x) const noexcept {
    std::uint64_t l = x >> half_, r = x & mask_;
    for (int i = 0; i < rounds; ++i) {
      const std::uint64_t f = splitmix64::mix64(keys_[i] ^ r) & mask_;
      const std::uint64_t t = l ^ f;
      l = r;
      r = t;
    }
    return (l << half_) | r;
  }

  std::uint64_t n_ = 1;
  int half_ = 1;
  std::uint64_t mask_ = 1;
  std::uint64_t keys_[rounds]{};
};

}  // namespace detail

/// Windows of S+1 tokens from `token_shards`, B rows per rank per step; see the top of the file.
template <std::size_t B, std::size_t S>
class sharded_sampler {
  static constexpr bool batch_is_positive = diag::at_least<B, 1>;
  static constexpr bool seq_is_positive = diag::at_least<S, 1>;
  static_assert(batch_is_positive, "weft::sharded_sampler: the batch size B is 0. Use B >= 1.");
  static_assert(seq_is_positive, "weft::sharded_sampler: the sequence length S is 0. Use S >= 1.");

 public:
  static constexpr std::size_t batch = B;
  static constexpr std::size_t seq = S;
  static constexpr std::size_t tokens_per_batch = B * S;
  /// A caller-owned buffer of one batch, (batch, seq) row-major.
  using batch_span = std::span<std::int32_t, B * S>;

  /// Samples from `shards` (which must outlive the sampler). Throws `data_error` if no shard
  /// holds one window of S+1 tokens, std::invalid_argument for a bad `data_shard`.
  sharded_sampler(const token_shards& shards, std::uint64_t seed, data_shard shard = {},
                  stream_order order = stream_order::shuffled)
      : shards_(&shards), shard_(shard), order_(order), state_{seed, 0} {
    detail::check_shard(shard, "weft::sharded_sampler");
    window_begin_.reserve(shards.shard_count() + 1);
    window_begin_.push_back(0);
    for (std::size_t i = 0; i < shards.shard_count(); ++i) {
      const std::size_t n = shards.shard(i).size();
      window_begin_.push_back(window_begin_.back() + (n > S ? (n - 1) / S : 0));
    }
    if (windows() == 0)
      throw data_error("weft::sharded_sampler: no shard holds one window of S+1 = " + std::to_string(S + 1) +
                       " tokens (" + std::to_string(shards.shard_count()) + " shards, " +
                       std::to_string(shards.size()) + " tokens). Use more data or a shorter sequence.");
  }
  sharded_sampler(const token_shards&& shards, std::uint64_t, data_shard = {}, stream_order = {}) = delete;

  /// Fills this rank's rows of the current global batch and advances by one global batch.
  void next(batch_span inputs, batch_span targets) noexcept {
    fill(state_.samples, inputs, targets);
    state_.samples += global_batch();
  }

  /// Fills this rank's rows of the global batch that starts at global sample `first`.
  void fill(std::uint64_t first, batch_span inputs, batch_span targets) const noexcept {
    const std::uint64_t mine = first + static_cast<std::uint64_t>(shard_.rank) * B;
    for (std::size_t b = 0; b < B; ++b)
      fill_sample(mine + b, std::span<std::int32_t, S>(inputs.data() + b * S, S),
                  std::span<std::int32_t, S>(targets.data() + b * S, S));
  }

  /// Inputs (window tokens 0..S-1) and targets (tokens 1..S) of global sample `g`.
  void fill_sample(std::uint64_t g, std::span<std::int32_t, S> inputs, std::span<std::int32_t, S> targets) const noexcept {
    const auto [i, start] = locate(window_of(g));
    const token_view v = shards_->view(i);
    v.copy_to(start, inputs);       // (seq) tokens start .. start+S-1
    v.copy_to(start + 1, targets);  // (seq) tokens start+1 .. start+S
  }

  /// The window (0 .. windows()-1, in shard order) that global sample `g` reads.
  std::uint64_t window_of(std::uint64_t g) const noexcept {
    const std::uint64_t w = windows();
    const std::uint64_t epoch = g / w, k = g % w;
    if (order_ == stream_order::sequential) return k;
    return make_permutation(epoch)(k);  // keying costs four hashes: not worth caching
  }

  /// Shard and first token of window `w` (the shard: the last i with window_begin_[i] <= w).
  std::pair<std::size_t, std::size_t> locate(std::uint64_t w) const noexcept {
    const auto it = std::upper_bound(window_begin_.begin(), window_begin_.end(), w);
    const std::size_t i = static_cast<std::size_t>(it - window_begin_.begin()) - 1;
    return {i, static_cast<std::size_t>(w - window_begin_[i]) * S};
  }

  /// Windows per epoch (all shards).
  std::uint64_t windows() const noexcept { return window_begin_.back(); }
  /// Samples per global batch: world * B.
  std::uint64_t global_batch() const noexcept { return static_cast<std::uint64_t>(shard_.world) * B; }
  /// Epoch of the next sample (0 for the first pass over the data).
  std::uint64_t epoch() const noexcept { return state_.samples / windows(); }

  stream_state state() const noexcept { return state_; }
  /// Resumes at a saved position, whatever data-parallel size saved it: the next samples are
  /// those the saved stream would have produced next.
  void set_state(stream_state s) noexcept { state_ = s; }
  /// Restarts at sample 0 with a new seed.
  void reset(std::uint64_t seed) noexcept { set_state({seed, 0}); }

  std::uint64_t seed() const noexcept { return state_.seed; }
  std::uint64_t samples() const noexcept { return state_.samples; }
  const data_shard& shard() const noexcept { return shard_; }
  stream_order order() const noexcept { return order_; }
  const token_shards& shards() const noexcept { return *shards_; }

 private:
  detail::feistel_permutation make_permutation(std::uint64_t epoch) const noexcept {
    std::uint64_t key = splitmix64::mix64(state_.seed);
    key = splitmix64::mix64(key + epoch);
    return detail::feistel_permutation(windows(), key);
  }

  const token_shards* shards_;
  data_shard shard_;
  stream_order order_;
  stream_state state_;
  std::vector<std::uint64_t> window_begin_;  // (shards + 1) prefix sums of windows per shard
};

}  // namespace weft
