#pragma once
// ---- gpt2_pretokenizer: GPT-2's split of text into words before BPE, written by hand ----
// GPT-2 (and tiktoken's "gpt2"/r50k encodings, and Hugging Face's ByteLevel pre-tokenizer) cut
// the text with the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// and run BPE inside each piece. This is that pattern as a scanner over UTF-8, without a regex
// engine (std::regex knows no \p{L} and is slow). At each position the first alternative that
// matches wins, exactly as in the regex:
//   1. an apostrophe contraction: 's 't 'm 'd 're 've 'll (lower case only, as in GPT-2);
//   2. an optional ' ' then a run of letters; 3. of numbers; 4. of "other" (not space, letter
//      or number) characters;
//   5. a whitespace run not followed by a non-space: the whole run at the end of the text,
//      otherwise the run minus its last character (which then prefixes the next word);
//   6. a single whitespace character.
// Classes are Unicode's \p{L}, \p{N} and White_Space (detail/unicode_classes.hpp). Bytes that
// are not valid UTF-8 count as one "other" character each, so any input is split, and the
// pieces always concatenate back to the input.
#include "weft/data/detail/unicode_classes.hpp"  // letter_ranges, number_ranges, white_space_ranges

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace weft {

namespace detail {

enum class char_class : std::uint8_t { letter, number, space, other };

inline bool in_ranges(std::span<const code_point_range> ranges, std::uint32_t cp) noexcept {
  std::size_t lo = 0, hi = ranges.size();
  while (lo < hi) {  // first range with last >= cp
    const std::size_t mid = (lo + hi) / 2;
    if (ranges[mid].last < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < ranges.size() && ranges[lo].first <= cp;
}

// ASCII classes, computed once; everything else by binary search in the Unicode tables.
struct ascii_classes {
  char_class c[128];
  constexpr ascii_classes() : c() {
    for (int i = 0; i < 128; ++i) {
      const bool letter = (i >= 'a' && i <= 'z') || (i >= 'A' && i <= 'Z');
      const bool number = i >= '0' && i <= '9';
      const bool space = (i >= 0x09 && i <= 0x0D) || i == ' ';
      c[i] = letter ? char_class::letter : number ? char_class::number : space ? char_class::space : char_class::other;
    }
  }
};
inline constexpr ascii_classes ascii_class_table{};

inline char_class classify(std::uint32_t cp) noexcept {
  if (cp < 128) return ascii_class_table.c[cp];
  if (in_ranges(letter_ranges, cp)) return char_class::letter;
  if (in_ranges(number_ranges, cp)) return char_class::number;
  if (in_ranges(white_space_ranges, cp)) return char_class::space;
  return char_class::other;
}

// One decoded character: its class and its length in bytes (1 for an invalid byte).
struct utf8_char {
  char_class cls;
  std::uint8_t len;
};

// Decodes the character at s[i] (i < s.size()). Overlong forms, surrogates and values above
// U+10FFFF are invalid, as in a strict UTF-8 decoder.
inline utf8_char decode_at(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {ascii_class_table.c[b0], 1};
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto bits = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  std::uint32_t cp = 0;
  std::uint8_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    cp = (static_cast<std::uint32_t>(b0 & 0x1F) << 6) | bits(1);
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    cp = (static_cast<std::uint32_t>(b0 & 0x0F) << 12) | (bits(1) << 6) | bits(2);
    len = 3;
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) len = 0;
  } else if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    cp = (static_cast<std::uint32_t>(b0 & 0x07) << 18) | (bits(1) << 12) | (bits(2) << 6) | bits(3);
    len = 4;
    if (cp < 0x10000 || cp > 0x10FFFF) len = 0;
  }
  if (len == 0) return {char_class::other, 1};
  return {classify(cp), len};
}

// Length of the contraction ('s 't 'm 'd 're 've 'll) at s[i] == '\'', or 0.
inline std::size_t contraction_at(std::string_view s, std::size_t i) noexcept {
  if (i + 1 >= s.size()) return 0;
  const char a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char b = s[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace detail

/// GPT-2's pre-tokenization; see the top of the file.
struct gpt2_pretokenizer {
  /// Length in bytes of the piece that starts at `s[i]` (i < s.size()).
  static std::size_t piece_at(std::string_view s, std::size_t i) noexcept {
    using detail::char_class;
    const std::size_t n = s.size();
    // 1. contractions
    if (s[i] == '\'')
      if (const std::size_t c = detail::contraction_at(s, i)) return c;
    // 2-4. an optional ' ' then a run of one class
    std::size_t j = i;
    detail::utf8_char ch = detail::decode_at(s, j);
    if (s[i] == ' ' && i + 1 < n) {
      const detail::utf8_char after = detail::decode_at(s, i + 1);
      if (after.cls != char_class::space) {
        j = i + 1;
        ch = after;
      }
    }
    if (ch.cls != char_class::space) {
      const char_class run = ch.cls;
      j += ch.len;
      while (j < n) {
        const detail::utf8_char next = detail::decode_at(s, j);
        if (next.cls != run) break;
        j += next.len;
      }
      return j - i;
    }
    // 5-6. whitespace: the run, less its last character when a non-space follows
    std::size_t last = i;  // start of the run's last character
    j = i;
    while (j < n) {
      const detail::utf8_char next = detail::decode_at(s, j);
      if (next.cls != char_class::space) break;
      last = j;
      j += next.len;
    }
    if (j == n || last == i) return j - i;  // at the end; or a single space before a non-space
    return last - i;
  }

  /// Bytes a piece's extent can depend on beyond its end (the next character, a contraction,
  /// the character after a whitespace run's last one): 16 is more than enough.
  static constexpr std::size_t lookahead = 16;

  /// For text read in chunks: the length of the longest prefix of `chunk` made of pieces that
  /// are certainly complete (each ends at least `lookahead` bytes before the end of `chunk`).
  /// Pieces do not depend on text before them, so encoding `chunk[0, n)` alone gives exactly the
  /// tokens that text has inside the whole; carry `chunk[n, end)` over to the next chunk.
  /// Returns 0 when no piece is complete yet (read more).
  static std::size_t complete_prefix(std::string_view chunk) noexcept {
    std::size_t done = 0;
    for (std::size_t i = 0; i < chunk.size();) {
      const std::size_t e = i + piece_at(chunk, i);
      if (e + lookahead > chunk.size()) break;
      done = i = e;
    }
    return done;
  }

  /// Calls `f(piece)` for each piece of `text`, in order.
  template <class F>
  static void split(std::string_view text, F&& f) {
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t len = piece_at(text, i);
      f(text.substr(i, len));
      i += len;
    }
  }
};

}  // namespace weft
