#pragma once
// ---- vocabulary_check: every token id of a corpus inside the model's vocabulary ----
// A token id at or above the vocabulary size indexes past the embedding table: a model trains
// silently on the wrong rows, or reads memory that is not its own. The readers (token_file,
// token_shards, text_corpus, corpus) check the whole corpus once, when asked at open, with the
// scan below: the maximum of each block of 16 Ki tokens (a loop the compiler vectorises), and
// only in a block whose maximum is out of range, the first offending token. A memory-mapped file
// is read once from start to end (its pages enter the page cache the training then uses).
// Signed ids (int32 buffers) are compared as unsigned, so a negative id is out of range too.
#include "weft/data/token_view.hpp"  // token_view

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

namespace weft {

/// A token outside the vocabulary: where it is (a token index, not a byte offset) and its id.
struct token_outside {
  std::size_t offset = 0;  ///< index of the token in the range scanned
  std::int64_t id = 0;     ///< the id as stored (uint16 and uint32 stay non-negative)
};

namespace detail {
inline constexpr std::size_t vocab_scan_block = std::size_t{1} << 14;

// The largest of p[0..n) as unsigned; the loop has no early exit, so it vectorises.
template <class U>
U block_max(const U* p, std::size_t n) noexcept {
  U m = 0;
  for (std::size_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
  return m;
}

template <class T>
std::optional<token_outside> find_outside(std::span<const T> tokens, std::size_t vocab_size) noexcept {
  using U = std::make_unsigned_t<T>;  // int32 -> uint32 (may alias), uint16/uint32 unchanged
  const U* p = reinterpret_cast<const U*>(tokens.data());
  const std::size_t n = tokens.size();
  for (std::size_t at = 0; at < n; at += vocab_scan_block) {
    const std::size_t len = std::min(vocab_scan_block, n - at);
    if (static_cast<std::uint64_t>(block_max(p + at, len)) < vocab_size) continue;
    for (std::size_t i = at; i < at + len; ++i)
      if (static_cast<std::uint64_t>(p[i]) >= vocab_size) return token_outside{i, static_cast<std::int64_t>(tokens[i])};
  }
  return std::nullopt;
}
}  // namespace detail

/// The first token of `tokens` whose id is not in [0, vocab_size), or none.
inline std::optional<token_outside> find_outside_vocabulary(std::span<const std::uint16_t> tokens,
                                                            std::size_t vocab_size) noexcept {
  return detail::find_outside(tokens, vocab_size);
}
inline std::optional<token_outside> find_outside_vocabulary(std::span<const std::uint32_t> tokens,
                                                            std::size_t vocab_size) noexcept {
  return detail::find_outside(tokens, vocab_size);
}
inline std::optional<token_outside> find_outside_vocabulary(std::span<const std::int32_t> tokens,
                                                            std::size_t vocab_size) noexcept {
  return detail::find_outside(tokens, vocab_size);
}

/// The message of a token outside the vocabulary, one line:
///   "<who>: '<file>': token 70123 at offset 81920 is outside the vocabulary (256 tokens: ids 0..255)."
/// `offset` counts tokens from the first token of the file (after any header).
inline std::string outside_vocabulary_message(const std::string& who, const std::string& file, token_outside t,
                                              std::size_t vocab_size) {
  return who + ": '" + file + "': token " + std::to_string(t.id) + " at offset " + std::to_string(t.offset) +
         " is outside the vocabulary (" + std::to_string(vocab_size) + " tokens: ids 0.." +
         std::to_string(vocab_size == 0 ? 0 : vocab_size - 1) + ").";
}

}  // namespace weft
