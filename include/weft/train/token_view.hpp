#pragma once
// ---- token_view: a non-owning window onto any token_source ----
// Samplers and splits work on views, so that one non-template `batch_sampler<B, S>` reads
// memory-mapped uint16 files and in-memory int32 buffers alike. The element width is a
// run-time tag; the copy loops branch on it once per window, not once per token.
#include "weft/train/token_source.hpp"  // token_source

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft {

/// A contiguous range of tokens stored as uint16 or int32, read as int32.
/// Does not own the tokens: the source (file mapping, buffer) must outlive the view.
class token_view {
 public:
  token_view() = default;
  token_view(std::span<const std::uint16_t> tokens) noexcept  // NOLINT(implicit)
      : narrow_(tokens.data()), size_(tokens.size()) {}
  token_view(std::span<const std::int32_t> tokens) noexcept  // NOLINT(implicit)
      : wide_(tokens.data()), size_(tokens.size()) {}
  /// The whole of `source` (an lvalue: a view of a temporary would dangle).
  template <token_source Source>
  token_view(const Source& source) noexcept : token_view(source.tokens()) {}  // NOLINT(implicit)
  template <token_source Source>
  token_view(const Source&&) = delete;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// True when the tokens are stored as uint16 (token files), false for int32.
  bool is_narrow() const noexcept { return narrow_ != nullptr; }

  std::int32_t operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return narrow_ ? static_cast<std::int32_t>(narrow_[i]) : wide_[i];
  }

  /// The `count` tokens from `offset` on (clamped to the view).
  token_view subview(std::size_t offset, std::size_t count) const noexcept {
    offset = std::min(offset, size_);
    count = std::min(count, size_ - offset);
    token_view v;
    if (narrow_) v.narrow_ = narrow_ + offset;
    if (wide_) v.wide_ = wide_ + offset;
    v.size_ = count;
    return v;
  }

  /// Copies `out.size()` tokens starting at `offset` into `out`, widened to int32.
  /// Precondition: offset + out.size() <= size().
  void copy_to(std::size_t offset, std::span<std::int32_t> out) const noexcept {
    assert(offset + out.size() <= size_);
    if (narrow_)
      std::copy_n(narrow_ + offset, out.size(), out.data());  // uint16 -> int32
    else
      std::copy_n(wide_ + offset, out.size(), out.data());
  }

 private:
  const std::uint16_t* narrow_ = nullptr;  // exactly one of narrow_/wide_ is set, unless empty
  const std::int32_t* wide_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace weft
