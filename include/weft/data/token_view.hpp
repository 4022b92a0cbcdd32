#pragma once
// ---- token_view: a non-owning window onto any token_source ----
// Samplers and splits work on views, so that one non-template `batch_sampler<B, S>` reads
// memory-mapped uint16 files and in-memory int32 buffers alike. The element width is a
// run-time tag; the copy loops branch on it once per window, not once per token.
#include "weft/data/token_source.hpp"  // token_source

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
      : data_(tokens.data()), size_(tokens.size()), narrow_(true) {}
  token_view(std::span<const std::int32_t> tokens) noexcept  // NOLINT(implicit)
      : data_(tokens.data()), size_(tokens.size()), narrow_(false) {}
  /// The whole of `source` (an lvalue: a view of a temporary would dangle).
  template <token_source Source>
  token_view(const Source& source) noexcept : token_view(source.tokens()) {}  // NOLINT(implicit)
  template <token_source Source>
  token_view(const Source&&) = delete;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// True when the tokens are stored as uint16 (token files), false for int32.
  bool is_narrow() const noexcept { return narrow_; }

  std::int32_t operator[](std::size_t i) const noexcept {
    assert(i < size_);
    return narrow_ ? static_cast<std::int32_t>(narrow()[i]) : wide()[i];
  }

  /// The `count` tokens from `offset` on (clamped to the view).
  token_view subview(std::size_t offset, std::size_t count) const noexcept {
    offset = std::min(offset, size_);
    count = std::min(count, size_ - offset);
    token_view v = *this;
    if (data_) v.data_ = narrow_ ? static_cast<const void*>(narrow() + offset) : static_cast<const void*>(wide() + offset);
    v.size_ = count;
    return v;
  }

  /// Copies `out.size()` tokens starting at `offset` into `out`, widened to int32.
  /// Precondition: offset + out.size() <= size().
  void copy_to(std::size_t offset, std::span<std::int32_t> out) const noexcept {
    assert(offset + out.size() <= size_);
    if (narrow_)
      std::copy_n(narrow() + offset, out.size(), out.data());  // uint16 -> int32
    else
      std::copy_n(wide() + offset, out.size(), out.data());
  }

 private:
  const std::uint16_t* narrow() const noexcept { return static_cast<const std::uint16_t*>(data_); }
  const std::int32_t* wide() const noexcept { return static_cast<const std::int32_t*>(data_); }

  const void* data_ = nullptr;  // (tokens) as const uint16_t* if narrow_, else const int32_t*
  std::size_t size_ = 0;
  bool narrow_ = false;
};

}  // namespace weft
