// Tests of byte_tokenizer: byte values, round trips, invalid tokens.
#include "weft/data/tokenizer.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using weft::byte_tokenizer;

TEST_CASE("byte_tokenizer: vocabulary is one token per byte value", "[train][tokenizer]") {
  STATIC_REQUIRE(byte_tokenizer::vocab_size == 256);
  STATIC_REQUIRE(byte_tokenizer::encode('A') == 65);
  STATIC_REQUIRE(byte_tokenizer::encode('\xff') == 255);  // not sign-extended to -1
}

TEST_CASE("byte_tokenizer: ASCII encodes to its code points", "[train][tokenizer]") {
  REQUIRE(byte_tokenizer::encode("hi!\n") == std::vector<std::int32_t>{104, 105, 33, 10});
  REQUIRE(byte_tokenizer::encode("").empty());
}

TEST_CASE("byte_tokenizer: UTF-8 characters become their bytes", "[train][tokenizer]") {
  // U+00E9 (e acute) is C3 A9, U+2713 (check mark) is E2 9C 93 in UTF-8.
  REQUIRE(byte_tokenizer::encode("\u00e9\u2713") == std::vector<std::int32_t>{0xC3, 0xA9, 0xE2, 0x9C, 0x93});
}

TEST_CASE("byte_tokenizer: decode inverts encode for every byte", "[train][tokenizer]") {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  all += "caf\u00e9 \u2014 \xF0\x9F\x98\x80";  // multi-byte characters too
  const auto tokens = byte_tokenizer::encode(all);
  REQUIRE(tokens.size() == all.size());
  for (auto t : tokens) REQUIRE(byte_tokenizer::is_valid(t));
  REQUIRE(byte_tokenizer::decode(tokens) == all);
}

TEST_CASE("byte_tokenizer: tokens outside 0..255 decode to U+FFFD", "[train][tokenizer]") {
  const std::vector<std::int32_t> tokens{'a', -1, 'b', 256, 50000};
  REQUIRE(byte_tokenizer::decode(tokens) == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");
  REQUIRE_FALSE(byte_tokenizer::is_valid(-1));
  REQUIRE_FALSE(byte_tokenizer::is_valid(256));
}

TEST_CASE("byte_tokenizer: encode_into and decode_into append", "[train][tokenizer]") {
  std::vector<std::int32_t> tokens{7};
  byte_tokenizer::encode_into("ab", tokens);
  REQUIRE(tokens == std::vector<std::int32_t>{7, 97, 98});
  std::string text = ">";
  byte_tokenizer::decode_into(std::vector<std::int32_t>{97, 98}, text);
  REQUIRE(text == ">ab");
}
