#pragma once
// ---- token_buffer: tokens held in memory (the text path) ----
// The in-memory counterpart of `token_file`, with the same reading interface
// (`token_source`). Filled at load time; read-only during training.
#include "weft/data/token_source.hpp"  // token_source

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {

/// An owning, growable array of int32 tokens that models `token_source`.
class token_buffer {
 public:
  token_buffer() = default;
  explicit token_buffer(std::vector<std::int32_t> tokens) noexcept : tokens_(std::move(tokens)) {}

  // ---- reading (token_source) ----
  std::size_t size() const noexcept { return tokens_.size(); }
  bool empty() const noexcept { return tokens_.empty(); }
  std::int32_t operator[](std::size_t i) const noexcept { return tokens_[i]; }
  std::span<const std::int32_t> tokens() const noexcept { return tokens_; }

  // ---- filling (load time only) ----
  void reserve(std::size_t n) { tokens_.reserve(n); }
  void push_back(std::int32_t token) { tokens_.push_back(token); }
  void append(std::span<const std::int32_t> tokens) { tokens_.insert(tokens_.end(), tokens.begin(), tokens.end()); }
  void clear() noexcept { tokens_.clear(); }
  /// The underlying vector, e.g. for `byte_tokenizer::encode_into`.
  std::vector<std::int32_t>& storage() noexcept { return tokens_; }

 private:
  std::vector<std::int32_t> tokens_;
};

static_assert(token_source<token_buffer>);

}  // namespace weft
