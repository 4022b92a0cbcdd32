#pragma once
// ---- byte_tokenizer: one token per byte (vocabulary 256) ----
// The simplest tokenizer that round-trips any text: token = byte value 0..255 of the
// UTF-8 (or any other) encoding. Multi-byte UTF-8 characters become several tokens.
// Encoding allocates (it runs while loading data, not inside a training step).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

/// Byte-level tokenizer: `encode` maps each byte to a token in 0..255; `decode` maps back.
struct byte_tokenizer {
  /// Number of distinct tokens.
  static constexpr std::int32_t vocab_size = 256;
  /// What `decode` writes for a token outside 0..255: U+FFFD REPLACEMENT CHARACTER in UTF-8.
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";

  /// Token of one byte.
  static constexpr std::int32_t encode(char byte) noexcept {
    return static_cast<std::int32_t>(static_cast<unsigned char>(byte));
  }

  /// Appends the tokens of `text` to `out` (no allocation beyond `out`'s growth).
  static void encode_into(std::string_view text, std::vector<std::int32_t>& out) {
    out.reserve(out.size() + text.size());
    for (char ch : text) out.push_back(encode(ch));
  }

  /// Tokens of `text`, one per byte.
  static std::vector<std::int32_t> encode(std::string_view text) {
    std::vector<std::int32_t> out;
    encode_into(text, out);
    return out;
  }

  /// True for tokens this tokenizer can produce.
  static constexpr bool is_valid(std::int32_t token) noexcept { return token >= 0 && token < vocab_size; }

  /// Appends the bytes of `tokens` to `out`. A token outside 0..255 (e.g. sampled from a
  /// model with a padded vocabulary) is written as U+FFFD, so the mistake stays visible.
  /// Valid tokens are copied byte for byte: a cut-off multi-byte character stays as it is.
  static void decode_into(std::span<const std::int32_t> tokens, std::string& out) {
    out.reserve(out.size() + tokens.size());
    for (std::int32_t t : tokens) {
      if (is_valid(t))
        out.push_back(static_cast<char>(static_cast<unsigned char>(t)));
      else
        out.append(replacement);
    }
  }

  /// Text of `tokens` (see `decode_into` for tokens outside 0..255).
  static std::string decode(std::span<const std::int32_t> tokens) {
    std::string out;
    decode_into(tokens, out);
    return out;
  }
};

}  // namespace weft
