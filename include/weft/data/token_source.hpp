#pragma once
// ---- token_source: what the loader reads tokens from ----
// A token source owns (or maps) a contiguous array of tokens: `token_file` (memory-mapped
// uint16 tokens), `token_buffer` (int32 tokens in memory), `text_corpus` (a token_buffer
// filled from text). Samplers read a source through a `token_view`.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft {

namespace detail {
template <class T>
concept token_span = std::same_as<T, std::span<const std::uint16_t>> || std::same_as<T, std::span<const std::int32_t>>;
}  // namespace detail

/// A contiguous array of tokens: `size()`, `s[i]` as int32 and `tokens()`, a span of the
/// stored element type (`const uint16_t` for files, `const int32_t` in memory).
template <class T>
concept token_source = requires(const T& s, std::size_t i) {
  { s.size() } -> std::same_as<std::size_t>;
  { s[i] } -> std::same_as<std::int32_t>;
  { s.tokens() } -> detail::token_span;
};

}  // namespace weft
