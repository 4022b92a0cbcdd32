#pragma once
// ---- batch_sampler: deterministic random training windows ----
// Each step draws B windows of S+1 consecutive tokens from a range: inputs are the first
// S tokens of a window, targets the last S (inputs shifted by one). The start of window
// `row` at step `step` is a pure function of (seed, step, global row):
//   splitmix64{mix64(mix64(mix64(seed) + step) + row)}.below(size - S)
// so the whole sampler state is two integers, a checkpoint restores it exactly, and
// data-parallel ranks compute their rows of the global batch without drawing the others'.
// `next` fills caller-owned buffers: no allocation, no exceptions, no I/O but page faults.
#include "weft/core/diagnostics.hpp"    // diag::at_least
#include "weft/data/data_error.hpp"    // data_error
#include "weft/data/data_shard.hpp"    // data_shard
#include "weft/data/splitmix64.hpp"    // splitmix64
#include "weft/data/token_view.hpp"    // token_view

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace weft {

/// Everything a checkpoint needs to resume a `batch_sampler` bit-identically.
/// Trivially copyable: save it as two little-endian uint64.
struct sampler_state {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;  ///< number of batches drawn so far

  friend constexpr bool operator==(const sampler_state&, const sampler_state&) = default;
};

/// Samples B windows of S+1 tokens per step from a token range. B and S are compile-time:
/// the buffers it fills are `std::span<std::int32_t, B * S>`, laid out (batch, seq).
template <std::size_t B, std::size_t S>
class batch_sampler {
  static constexpr bool batch_is_positive = diag::at_least<B, 1>;
  static constexpr bool seq_is_positive = diag::at_least<S, 1>;
  static_assert(batch_is_positive, "weft::batch_sampler: the batch size B is 0. Use B >= 1.");
  static_assert(seq_is_positive, "weft::batch_sampler: the sequence length S is 0. Use S >= 1.");

 public:
  static constexpr std::size_t batch = B;
  static constexpr std::size_t seq = S;
  static constexpr std::size_t tokens_per_batch = B * S;
  /// A caller-owned buffer of one batch, (batch, seq) row-major.
  using batch_span = std::span<std::int32_t, B * S>;

  /// Samples from `range` (which must outlive the sampler). Throws `data_error` if the
  /// range is shorter than one window of S+1 tokens, std::invalid_argument for a bad shard.
  batch_sampler(token_view range, std::uint64_t seed, data_shard shard = {})
      : range_(range), shard_(shard), state_{seed, 0} {
    detail::check_shard(shard, "weft::batch_sampler");
    if (range.size() < S + 1)
      throw data_error("weft::batch_sampler: the range holds " + std::to_string(range.size()) +
                       " tokens, fewer than one window of S+1 = " + std::to_string(S + 1) +
                       ". Use more data, a smaller validation fraction or a shorter sequence.");
  }

  /// Fills the batch of the current step and advances to the next step.
  void next(batch_span inputs, batch_span targets) noexcept { fill(state_.step++, inputs, targets); }

  /// Fills the batch of any `step` (same seed) without changing the state.
  void fill(std::uint64_t step, batch_span inputs, batch_span targets) const noexcept {
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t start = window_offset(step, b);
      range_.copy_to(start, inputs.subspan(b * S, S));       // (seq) tokens start .. start+S-1
      range_.copy_to(start + 1, targets.subspan(b * S, S));  // (seq) tokens start+1 .. start+S
    }
  }

  /// Offset (within the range) of the window of local row `row` at `step`.
  std::size_t window_offset(std::uint64_t step, std::size_t row) const noexcept {
    const std::uint64_t global_row = static_cast<std::uint64_t>(shard_.rank) * B + row;
    std::uint64_t key = splitmix64::mix64(state_.seed);
    key = splitmix64::mix64(key + step);
    key = splitmix64::mix64(key + global_row);
    return static_cast<std::size_t>(splitmix64{key}.below(windows()));
  }

  /// Number of distinct window starts in the range: size - S.
  std::size_t windows() const noexcept { return range_.size() - S; }

  /// Restarts from step 0 with a new seed.
  void reset(std::uint64_t seed) noexcept { state_ = {seed, 0}; }
  sampler_state state() const noexcept { return state_; }
  /// Resumes at a saved state: the following batches equal those the saved sampler drew.
  void set_state(sampler_state s) noexcept { state_ = s; }

  std::uint64_t seed() const noexcept { return state_.seed; }
  std::uint64_t step() const noexcept { return state_.step; }
  const token_view& range() const noexcept { return range_; }
  const data_shard& shard() const noexcept { return shard_; }

 private:
  token_view range_;
  data_shard shard_;
  sampler_state state_;
};

}  // namespace weft
