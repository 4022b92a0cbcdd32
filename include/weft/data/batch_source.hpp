#pragma once
// ---- batch_source: what a step reads its micro-batches from ----
// A batch source writes one micro-batch's token ids and next-token targets, each (batch · seq),
// when asked: `src.next(tokens, targets)`. batch_sampler and eval_batches are batch sources; a
// step takes one directly (`step(sampler)`), or any callable `fill(tokens, targets)`.

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft {

/// Something with `next(tokens, targets)` over spans of `Rows` token ids (batch · seq); a
/// source taking dynamic spans serves every size.
template <class S, std::size_t Rows = std::dynamic_extent>
concept batch_source =
    requires(S& s, std::span<std::int32_t, Rows> tokens, std::span<std::int32_t, Rows> targets) {
      s.next(tokens, targets);
    };

/// A `fill(tokens, targets)` callable over a batch source (what the executors call).
template <class Source>
auto fill_from(Source& source) {
  return [&source](auto tokens, auto targets) { source.next(tokens, targets); };
}

}  // namespace weft
