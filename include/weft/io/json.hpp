#pragma once
// weft's JSON: nlohmann-json (Debian nlohmann-json3-dev) parses and writes; this header adds the
// rules weft's files follow on top of its grammar, and messages in weft's words.
//
// nlohmann accepts what RFC 8259 accepts and keeps the last of two equal keys. The files weft
// reads (safetensors headers, checkpoint manifests) are stricter, as the reference readers are:
//   * a duplicate key is an error (serde_json, which the safetensors reference uses, rejects it);
//   * nesting is bounded (a real header nests 3 deep);
//   * optionally only integers: a fraction or an exponent is an error, and so is an integer
//     outside u64 / i64 (nlohmann would silently turn it into a double);
//   * a NUL byte is an error (nlohmann stops at it as if the text ended there).
// The document is built by a SAX handler, so objects keep their keys in file order
// (nlohmann::ordered_json) and a duplicate is seen before it replaces anything.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace weft::io::detail {

/// A JSON document whose objects keep their keys in file order.
using json = nlohmann::ordered_json;

// ---- errors ----

struct json_error {
  std::string what;
  std::size_t offset = npos;  // byte offset in the text, npos when the rule is not positional
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
};

struct json_rules {
  int max_depth = 64;          // containers nested deeper than this are an error
  bool integers_only = false;  // reject fractions, exponents and integers beyond 64 bits
};

inline std::string_view json_kind_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "binary data";
  }
}

// 'text' quoted, control characters escaped, so every message stays on one line.
inline std::string json_quote(std::string_view s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

// Appends `key: value` to `object`, whose keys do not include `key` (the caller knows): without
// the linear search of ordered_json's operator[], so building an object of n members is O(n).
inline json& append_member(json& object, std::string key, json value) {
  auto& items = static_cast<json::object_t::Container&>(object.get_ref<json::object_t&>());
  items.emplace_back(std::move(key), std::move(value));
  return items.back().second;
}

// ---- the document builder ----

// nlohmann's SAX interface: called for every token in order; returning false stops the parse.
class json_builder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  json_builder(std::string_view text, json_rules rules) : text_(text), rules_(rules) {}

  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(number_integer_t x) { return put(x); }
  bool number_unsigned(number_unsigned_t x) {
    put(x);
    last_was_zero_ = x == 0;
    return true;
  }
  bool number_float(number_float_t x, const string_t& token) {
    if (!rules_.integers_only) return put(x);
    const bool fraction = token.find_first_of(".eE") != string_t::npos;
    return fail(fraction ? "non-integer number (this file holds only integers)" : "integer too large");
  }
  bool string(string_t& s) { return put(std::move(s)); }
  bool binary(binary_t&) { return fail("binary value"); }  // not produced by the JSON parser

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    if (!keys_.back().insert(k).second) return fail("duplicate key " + json_quote(k));
    key_ = std::move(k);
    return true;
  }

  // A syntax error found by nlohmann: its message, said the way weft says it.
  bool parse_error(std::size_t position, const std::string& last_token, const json::exception& e) {
    const std::string_view m = e.what();
    const auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
    const std::size_t at = position > 0 ? position - 1 : 0;  // nlohmann counts from 1
    std::string what;
    if (done_) what = "unexpected text after the top-level value";
    else if (has("unexpected end of input")) what = "unexpected end of the text";
    else if (has("forbidden character after backslash")) what = "unknown escape in a string";
    else if (has("must be followed by U+DC00..U+DFFF")) what = "unpaired high surrogate in a \\u escape";
    else if (has("must follow U+D800..U+DBFF")) what = "unpaired low surrogate in a \\u escape";
    else if (has("must be followed by 4 hex digits")) what = "bad hex digit in a \\u escape";
    else if (has("control character")) what = "raw control character in a string";
    else if (has("missing closing quote")) what = "unterminated string";
    else if (has("ill-formed UTF-8")) what = "a string is not valid UTF-8";
    else if (has("unexpected number literal") && last_was_zero_ && leading_zero(at, last_token.size()))
      what = "number with a leading zero";
    else what = std::string(after_prefix(m));
    error_ = json_error{std::move(what), at};
    return false;
  }

  json take() { return std::move(root_); }
  json_error error() const { return error_; }

 private:
  // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." -> "syntax error ..."
  static std::string_view after_prefix(std::string_view m) {
    const std::size_t colon = m.find(": ");
    return colon == std::string_view::npos ? m : m.substr(colon + 2);
  }

  // The number token that failed starts right after a "0" token: "02".
  bool leading_zero(std::size_t last, std::size_t token_length) const {
    const std::size_t start = last + 1 >= token_length ? last + 1 - token_length : 0;
    return start > 0 && start <= text_.size() && text_[start - 1] == '0';
  }

  bool fail(std::string what) {
    error_ = json_error{std::move(what), json_error::npos};
    return false;
  }

  // Places a value in the container being built (or as the document), returns where it went.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &append_member(top, std::move(key_), std::move(v));  // key() has checked it is new
  }

  template <class V>
  bool put(V&& v) {
    last_was_zero_ = false;
    place(json(std::forward<V>(v)));
    if (stack_.empty()) done_ = true;
    return true;
  }

  bool open(json&& empty) {
    last_was_zero_ = false;
    if (static_cast<int>(stack_.size()) > rules_.max_depth)
      return fail("nesting deeper than " + std::to_string(rules_.max_depth));
    const bool object = empty.is_object();
    stack_.push_back(place(std::move(empty)));  // children never move their parent: pointers stay valid
    if (object) keys_.emplace_back();
    return true;
  }

  bool close() {
    last_was_zero_ = false;
    if (stack_.back()->is_object()) keys_.pop_back();
    stack_.pop_back();
    if (stack_.empty()) done_ = true;
    return true;
  }

  std::string_view text_;
  json_rules rules_;
  json root_;
  std::vector<json*> stack_;                         // open containers, outermost first
  std::vector<std::unordered_set<std::string>> keys_;  // keys seen, one set per open object
  std::string key_;
  bool done_ = false;           // the top-level value is complete
  bool last_was_zero_ = false;  // the previous token was the number 0
  json_error error_;
};

// ---- entry points ----

/// Parses one JSON document (surrounding whitespace allowed) under `rules`; json_error otherwise.
inline json parse_json(std::string_view text, json_rules rules = {}) {
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw json_error{"NUL byte", nul};
  json_builder b(text, rules);
  if (!json::sax_parse(text.data(), text.data() + text.size(), &b, json::input_format_t::json, true))
    throw b.error();
  return b.take();
}

// True when `s` is valid UTF-8, so nlohmann can write it (dump() throws on anything else). Its
// string literals are what serde_json writes: quotes, backslash and control characters escaped,
// everything else verbatim.
inline bool valid_utf8(std::string_view s) {
  try {
    (void)json(std::string(s)).dump();
  } catch (const json::type_error&) {
    return false;
  }
  return true;
}

}  // namespace weft::io::detail
