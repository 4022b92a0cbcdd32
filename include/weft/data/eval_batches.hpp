#pragma once
// ---- eval_batches: the validation range in order, in non-overlapping windows ----
// Window w covers inputs = tokens [w*S, w*S + S) and targets = [w*S + 1, w*S + S + 1):
// the inputs of consecutive windows tile the range, and each window's last target is
// the next window's first input. Global batch k holds windows k*world*B .. (k+1)*world*B - 1;
// rank r reads rows r*B .. r*B + B - 1 of it (see data_shard). Only full global batches are
// visited, so the tail of fewer than world*B windows (plus at most S tokens) is skipped.
#include "weft/core/diagnostics.hpp"  // diag::at_least
#include "weft/data/data_error.hpp"  // data_error
#include "weft/data/data_shard.hpp"  // data_shard
#include "weft/data/token_view.hpp"  // token_view

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace weft {

/// Sequential evaluation batches of B windows of S+1 tokens over a range.
template <std::size_t B, std::size_t S>
class eval_batches {
  static constexpr bool batch_is_positive = diag::at_least<B, 1>;
  static constexpr bool seq_is_positive = diag::at_least<S, 1>;
  static_assert(batch_is_positive, "weft::eval_batches: the batch size B is 0. Use B >= 1.");
  static_assert(seq_is_positive, "weft::eval_batches: the sequence length S is 0. Use S >= 1.");

 public:
  static constexpr std::size_t batch = B;
  static constexpr std::size_t seq = S;
  static constexpr std::size_t tokens_per_batch = B * S;
  /// A caller-owned buffer of one batch, (batch, seq) row-major.
  using batch_span = std::span<std::int32_t, B * S>;

  /// Throws `data_error` if the range holds less than one global batch, std::invalid_argument
  /// for a bad shard.
  explicit eval_batches(token_view range, data_shard shard = {}) : range_(range), shard_(shard) {
    detail::check_shard(shard, "weft::eval_batches");
    if (size() == 0)
      throw data_error("weft::eval_batches: the range holds " + std::to_string(range.size()) +
                       " tokens, fewer than one global batch of " + std::to_string(shard.world * B) +
                       " windows of S = " + std::to_string(S) + " tokens plus one" +
                       ". Use a larger validation fraction or a smaller batch.");
  }

  /// Number of windows of S+1 tokens in the range, stepping by S.
  std::size_t windows() const noexcept { return range_.size() < 1 ? 0 : (range_.size() - 1) / S; }
  /// Number of full batches (the same on every rank).
  std::size_t size() const noexcept { return windows() / (shard_.world * B); }

  /// Fills batch `k` (< size()).
  void fill(std::size_t k, batch_span inputs, batch_span targets) const noexcept {
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t start = window_offset(k, b);
      range_.copy_to(start, inputs.subspan(b * S, S));       // (seq)
      range_.copy_to(start + 1, targets.subspan(b * S, S));  // (seq)
    }
  }

  /// Offset (within the range) of local row `row` of batch `k`.
  std::size_t window_offset(std::size_t k, std::size_t row) const noexcept {
    return ((k * shard_.world + shard_.rank) * B + row) * S;
  }

  /// Fills the next batch and returns true, or returns false (buffers untouched) at the end.
  bool next(batch_span inputs, batch_span targets) noexcept {
    if (position_ >= size()) return false;
    fill(position_++, inputs, targets);
    return true;
  }

  /// Back to the first batch.
  void rewind() noexcept { position_ = 0; }
  /// Index of the batch `next` fills.
  std::size_t position() const noexcept { return position_; }

  const token_view& range() const noexcept { return range_; }
  const data_shard& shard() const noexcept { return shard_; }

 private:
  token_view range_;
  data_shard shard_;
  std::size_t position_ = 0;
};

}  // namespace weft
