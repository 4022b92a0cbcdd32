#pragma once
// ---- vocab_json: the one JSON shape a BPE vocabulary uses, read with nlohmann-json ----
// vocab.json (Hugging Face) / encoder.json (OpenAI) is a single flat object of string keys and
// non-negative integer values: {"!": 0, "\"": 1, ..., "<|endoftext|>": 50256}. nlohmann-json
// (Debian nlohmann-json3-dev, as weft/io/ uses) does the grammar, escapes and UTF-8; a SAX
// handler takes the pairs in file order without building a document (GPT-2's has 50257) and
// stops at the first value of any other shape. Errors are one line; a syntax error gives the
// byte offset.
#include "weft/data/data_error.hpp"  // data_error

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::detail {

class vocab_json_reader {
 public:
  using entries = std::vector<std::pair<std::string, std::int64_t>>;

  vocab_json_reader(std::string_view text, std::string origin) : s_(text), origin_(std::move(origin)) {}

  /// The (key, value) pairs in file order. Throws data_error.
  entries read() {
    // nlohmann ends the text at a NUL byte as if it were the end; the file does not.
    if (const std::size_t nul = s_.find('\0'); nul != std::string_view::npos) fail("NUL byte", nul);
    handler h{*this};
    if (!nlohmann::json::sax_parse(s_.data(), s_.data() + s_.size(), &h, nlohmann::json::input_format_t::json, true))
      fail(h.what, h.offset);
    return std::move(out_);
  }

 private:
  static constexpr std::size_t no_offset = static_cast<std::size_t>(-1);

  [[noreturn]] void fail(const std::string& what, std::size_t offset = no_offset) const {
    const std::string at = offset == no_offset ? "" : " at byte " + std::to_string(offset);
    throw data_error("weft::bpe_tokenizer: '" + origin_ + "': invalid vocabulary JSON" + at + ": " + what +
                     " (expected one object of \"token\": id pairs).");
  }

  // Where the first value starts: after a UTF-8 byte order mark (nlohmann skips it) and whitespace.
  std::size_t first_value_offset() const {
    std::size_t i = s_.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\n' || s_[i] == '\r' || s_[i] == '\t')) ++i;
    return i;
  }

  // ---- nlohmann's SAX interface: one call per token; false stops the parse ----
  struct handler {
    using json = nlohmann::json;
    using number_integer_t = json::number_integer_t;
    using number_unsigned_t = json::number_unsigned_t;
    using number_float_t = json::number_float_t;
    using string_t = json::string_t;
    using binary_t = json::binary_t;

    explicit handler(vocab_json_reader& reader) : r(reader) {}

    vocab_json_reader& r;
    int depth = 0;      // 0 before the object, 1 inside it, -1 after it
    std::string name;   // the key whose value comes next
    std::string what;   // the error, when a call returned false
    std::size_t offset = no_offset;

    bool start_object(std::size_t) {
      if (depth != 0) return not_an_id("an object");
      depth = 1;
      return true;
    }
    bool end_object() {
      depth = -1;
      return true;
    }
    bool key(string_t& k) {
      name = std::move(k);
      return true;
    }
    bool number_unsigned(number_unsigned_t id) {
      if (depth != 1) return not_an_object();
      if (id > (std::uint64_t{1} << 31) - 1)
        return stop("token id " + std::to_string(id) + " of \"" + name + "\" does not fit in int32");
      r.out_.emplace_back(std::move(name), static_cast<std::int64_t>(id));
      return true;
    }
    bool number_integer(number_integer_t) { return not_an_id("a negative number"); }
    bool number_float(number_float_t, const string_t&) { return not_an_id("a number that is not an integer"); }
    bool null() { return not_an_id("null"); }
    bool boolean(bool) { return not_an_id("a boolean"); }
    bool string(string_t&) { return not_an_id("a string"); }
    bool binary(binary_t&) { return not_an_id("binary data"); }  // not produced by the JSON parser
    bool start_array(std::size_t) { return not_an_id("an array"); }
    bool end_array() { return true; }  // unreachable: start_array stops the parse

    // A syntax error found by nlohmann: its message without the "[json.exception...] parse
    // error at line 1, column 9: " prefix (the offset says where) and without the "; last
    // read: '...'" echo of the bad token (raw bytes that may not be UTF-8).
    bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
      offset = position > 0 ? position - 1 : 0;  // nlohmann counts from 1
      if (depth == -1) return stop("unexpected text after the closing '}'", offset);
      std::string_view m = e.what();
      if (const std::size_t colon = m.find(": "); colon != std::string_view::npos) m.remove_prefix(colon + 2);
      std::string w(m);
      if (const std::size_t echo = w.find("; last read: '"); echo != std::string::npos) {
        const std::size_t expected = w.rfind("; expected ");
        w.erase(echo, (expected != std::string::npos && expected > echo ? expected : w.size()) - echo);
      }
      return stop(std::move(w), offset);
    }

    bool stop(std::string w, std::size_t at = no_offset) {
      what = std::move(w);
      offset = at;
      return false;
    }
    bool not_an_object() { return stop("expected '{'", r.first_value_offset()); }
    bool not_an_id(const char* kind) {
      if (depth != 1) return not_an_object();
      return stop("expected a non-negative integer token id for \"" + name + "\", not " + kind);
    }
  };

  std::string_view s_;
  std::string origin_;
  entries out_;
};

}  // namespace weft::detail
