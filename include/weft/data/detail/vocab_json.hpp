#pragma once
// ---- vocab_json: the one JSON shape a BPE vocabulary uses, read without a JSON library ----
// vocab.json (Hugging Face) / encoder.json (OpenAI) is a single flat object of string keys and
// non-negative integer values: {"!": 0, "\"": 1, ..., "<|endoftext|>": 50256}. This reader
// accepts exactly that (with any JSON whitespace and string escapes, \uXXXX surrogate pairs
// included) and reports anything else as one line with the byte offset.
#include "weft/data/data_error.hpp"  // data_error

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::detail {

class vocab_json_reader {
 public:
  vocab_json_reader(std::string_view text, std::string origin) : s_(text), origin_(std::move(origin)) {}

  /// The (key, value) pairs in file order. Throws data_error.
  std::vector<std::pair<std::string, std::int64_t>> read() {
    std::vector<std::pair<std::string, std::int64_t>> out;
    skip_ws();
    expect('{');
    skip_ws();
    if (peek() == '}') {
      ++i_;
    } else {
      for (;;) {
        skip_ws();
        std::string key = string();
        skip_ws();
        expect(':');
        skip_ws();
        const std::int64_t value = integer();
        out.emplace_back(std::move(key), value);
        skip_ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        break;
      }
    }
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the closing '}'");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw data_error("weft::bpe_tokenizer: '" + origin_ + "': invalid vocabulary JSON at byte " + std::to_string(i_) +
                     ": " + what + " (expected one object of \"token\": id pairs).");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    if (i_ >= s_.size()) fail(std::string("the text ends where '") + c + "' was expected");
    if (s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }

  std::int64_t integer() {
    const std::size_t start = i_;
    std::int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + (s_[i_] - '0');
      if (v > (std::int64_t{1} << 40)) fail("token id too large");
      ++i_;
    }
    if (i_ == start) fail("expected a non-negative integer token id");
    return v;
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // high surrogate: a low one must follow
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') fail("lone high surrogate");
            i_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
  }

  std::string_view s_;
  std::string origin_;
  std::size_t i_ = 0;
};

}  // namespace weft::detail
