#pragma once
// weft safetensors: write and read checkpoints in the Hugging Face safetensors format.
//
// File layout (all integers little-endian):
//   [0, 8)        N: u64, length of the JSON header
//   [8, 8+N)      JSON header, padded with spaces so that 8+N is a multiple of 8:
//                 {"__metadata__":{"key":"value",...},
//                  "name":{"dtype":"F32","shape":[768,2304],"data_offsets":[begin,end]}, ...}
//   [8+N, EOF)    data section; each tensor's bytes are [begin, end) relative to its start,
//                 row-major (C order). Tensors cover the data section exactly, without gaps.
// Reference implementation: github.com/huggingface/safetensors (safetensors/src/tensor.rs).

#include "weft/core/dtype.hpp"              // bf16, f16, half_float
#include "weft/train/checkpoint_error.hpp"  // checkpoint_error

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft {

namespace train::detail {

// The format stores little-endian bytes; we copy them to and from memory unchanged.
inline constexpr bool host_is_little_endian = std::endian::native == std::endian::little;
static_assert(host_is_little_endian,
              "weft::safetensors: this host is big-endian, but safetensors files are little-endian "
              "and weft copies their bytes unchanged. Build on a little-endian host.");

// Largest header the reference implementation accepts (MAX_HEADER_SIZE in tensor.rs).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

// Deepest JSON nesting accepted; a real header nests 3 deep ({ name: { shape: [ ] } }).
inline constexpr int max_json_depth = 64;

// ---- dtypes ----

enum class st_dtype : std::uint8_t {
  boolean, f4, f6_e2m3, f6_e3m2, u8, i8, f8_e5m2, f8_e4m3, f8_e8m0, f8_e4m3fnuz, f8_e5m2fnuz,
  i16, u16, f16, bf16, i32, u32, f32, c64, f64, i64, u64
};

struct st_dtype_entry {
  std::string_view name;  // spelling in the header
  st_dtype code;
  std::uint32_t bits;     // per element; F4 and F6 are packed below one byte
};

// Every dtype the reference implementation (0.8) knows.
inline constexpr std::array<st_dtype_entry, 22> st_dtypes{{
    {"BOOL", st_dtype::boolean, 8},       {"F4", st_dtype::f4, 4},
    {"F6_E2M3", st_dtype::f6_e2m3, 6},    {"F6_E3M2", st_dtype::f6_e3m2, 6},
    {"U8", st_dtype::u8, 8},              {"I8", st_dtype::i8, 8},
    {"F8_E5M2", st_dtype::f8_e5m2, 8},    {"F8_E4M3", st_dtype::f8_e4m3, 8},
    {"F8_E8M0", st_dtype::f8_e8m0, 8},    {"F8_E4M3FNUZ", st_dtype::f8_e4m3fnuz, 8},
    {"F8_E5M2FNUZ", st_dtype::f8_e5m2fnuz, 8},
    {"I16", st_dtype::i16, 16},           {"U16", st_dtype::u16, 16},
    {"F16", st_dtype::f16, 16},           {"BF16", st_dtype::bf16, 16},
    {"I32", st_dtype::i32, 32},           {"U32", st_dtype::u32, 32},
    {"F32", st_dtype::f32, 32},           {"C64", st_dtype::c64, 64},
    {"F64", st_dtype::f64, 64},           {"I64", st_dtype::i64, 64},
    {"U64", st_dtype::u64, 64},
}};

inline const st_dtype_entry* find_st_dtype(std::string_view name) {
  for (const auto& e : st_dtypes)
    if (e.name == name) return &e;
  return nullptr;
}

// Byte length of `shape` elements of `dtype`; false on overflow or a negative extent,
// or when packed sub-byte elements do not end on a byte boundary.
inline bool st_byte_length(const st_dtype_entry& dtype, std::span<const std::int64_t> shape,
                           std::uint64_t& bytes, std::uint64_t& elements) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
      return false;
    n *= static_cast<std::uint64_t>(d);
  }
  if (n > std::numeric_limits<std::uint64_t>::max() / dtype.bits) return false;
  const std::uint64_t bits = n * dtype.bits;
  if (bits % 8 != 0) return false;
  elements = n;
  bytes = bits / 8;
  return true;
}

// ---- messages ----

// 'name' with control characters escaped, so every message stays on one line.
inline std::string st_quote(std::string_view s) {
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

inline std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline std::string range_string(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

inline std::string errno_string(int err) { return std::string(std::strerror(err)); }

// ---- JSON ----
// Just enough JSON for safetensors headers: objects, arrays, strings with all escapes,
// integers, true/false/null. Fractions and exponents are rejected (a header has none).

struct json_error {
  std::string what;
  std::size_t offset;  // byte offset inside the header
};

struct json_value {
  enum class kind : std::uint8_t { null, boolean, integer, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  bool negative = false;        // integer: sign
  std::uint64_t magnitude = 0;  // integer: absolute value
  std::string string;
  std::vector<json_value> items;   // array elements, or object values
  std::vector<std::string> keys;   // object keys, parallel to items, in file order

  const json_value* find(std::string_view key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &items[i];
    return nullptr;
  }
};

inline std::string_view json_kind_name(json_value::kind k) {
  switch (k) {
    case json_value::kind::null: return "null";
    case json_value::kind::boolean: return "a boolean";
    case json_value::kind::integer: return "a number";
    case json_value::kind::string: return "a string";
    case json_value::kind::array: return "an array";
    case json_value::kind::object: return "an object";
  }
  return "?";
}

class json_parser {
 public:
  explicit json_parser(std::string_view text) : text_(text) {}

  // One value, then only whitespace (the spaces that pad the header) to the end.
  json_value parse_document() {
    json_value v = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the top-level value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string what) const { throw json_error{std::move(what), pos_}; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void expect(char c) {
    if (pos_ >= text_.size()) fail(std::string("unexpected end, expected '") + c + "'");
    if (text_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  json_value parse_value(int depth) {
    if (depth > max_json_depth) fail("nesting deeper than " + std::to_string(max_json_depth));
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of the header");
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    json_value v;
    if (c == '"') {
      v.type = json_value::kind::string;
      v.string = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      parse_integer(v);
    } else if (literal("true")) {
      v.type = json_value::kind::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = json_value::kind::boolean;
    } else if (literal("null")) {
      v.type = json_value::kind::null;
    } else {
      fail("unexpected character");
    }
    return v;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  json_value parse_object(int depth) {
    json_value v;
    v.type = json_value::kind::object;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    std::unordered_set<std::string> seen;
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      const std::size_t key_pos = pos_;
      std::string key = parse_string();
      if (!seen.insert(key).second) {
        pos_ = key_pos;
        fail("duplicate key " + st_quote(key));
      }
      skip_space();
      expect(':');
      v.items.push_back(parse_value(depth + 1));
      v.keys.push_back(std::move(key));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return v;
    }
  }

  json_value parse_array(int depth) {
    json_value v;
    v.type = json_value::kind::array;
    expect('[');
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return v;
    }
  }

  void parse_integer(json_value& v) {
    v.type = json_value::kind::integer;
    if (peek() == '-') {
      v.negative = true;
      ++pos_;
    }
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit");
    if (peek() == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
      fail("number with a leading zero");
    std::uint64_t m = 0;
    while (peek() >= '0' && peek() <= '9') {
      const auto d = static_cast<std::uint64_t>(peek() - '0');
      if (m > (std::numeric_limits<std::uint64_t>::max() - d) / 10) fail("integer too large");
      m = m * 10 + d;
      ++pos_;
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E')
      fail("non-integer number (a safetensors header holds only integers)");
    v.magnitude = m;
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("unexpected end inside a \\u escape");
    unsigned x = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      x <<= 4;
      if (c >= '0' && c <= '9') x |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') x |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') x |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return x;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;  // UTF-8 bytes pass through unchanged
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("unpaired low surrogate in a \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {  // high surrogate: a low one must follow
            if (!literal("\\u")) fail("unpaired high surrogate in a \\u escape");
            const std::uint32_t lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("unpaired high surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; fail("unknown escape in a string");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// JSON string literal as serde_json writes it: quotes, backslash and control characters
// escaped, everything else (including UTF-8) verbatim.
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// ---- file output ----

// Buffered writes to a file descriptor; every failure is a checkpoint_error naming the file.
class fd_output {
 public:
  fd_output(int fd, std::string entity, std::string path)
      : fd_(fd), entity_(std::move(entity)), path_(std::move(path)) {
    buffer_.reserve(buffer_bytes);
  }

  void write(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    if (n >= buffer_bytes) {  // large block: skip the copy
      flush();
      write_all(p, n);
      return;
    }
    if (buffer_.size() + n > buffer_bytes) flush();
    buffer_.insert(buffer_.end(), p, p + n);
  }

  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw checkpoint_error(entity_ + ": " + st_quote(path_) + ": " + problem + ".");
  }

 private:
  static constexpr std::size_t buffer_bytes = std::size_t{1} << 22;

  void write_all(const char* p, std::size_t n) {
    while (n > 0) {
      const ::ssize_t w = ::write(fd_, p, std::min<std::size_t>(n, std::size_t{1} << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("cannot write: " + errno_string(errno));
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  int fd_;
  std::string entity_;
  std::string path_;
  std::vector<char> buffer_;
};

}  // namespace train::detail

// ---- element types ----

/// Element types that safetensors_writer::add stores directly and safetensors_file::read_as
/// converts to: the floating-point types (with weft's bf16 and f16) and integers (not bool).
template <class T>
concept safetensors_element =
    std::floating_point<T> || half_float<T> || (std::integral<T> && !std::same_as<T, bool>);

/// The floating-point members of safetensors_element.
template <class T>
concept safetensors_float = std::floating_point<T> || half_float<T>;

namespace train::detail {

// dtype spelling of a C++ element type stored as-is.
template <safetensors_element T>
constexpr std::string_view st_dtype_of() {
  if constexpr (std::same_as<T, double>) return "F64";
  else if constexpr (std::same_as<T, float>) return "F32";
  else if constexpr (std::same_as<T, bf16>) return "BF16";
  else if constexpr (std::same_as<T, f16>) return "F16";
  else if constexpr (std::floating_point<T>) return "";  // long double: no safetensors dtype
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1 ? "I8" : sizeof(T) == 2 ? "I16" : sizeof(T) == 4 ? "I32" : "I64";
  else
    return sizeof(T) == 1 ? "U8" : sizeof(T) == 2 ? "U16" : sizeof(T) == 4 ? "U32" : "U64";
}

template <safetensors_element T>
constexpr std::string_view element_type_name() {
  if constexpr (std::same_as<T, float>) return "float";
  else if constexpr (std::same_as<T, double>) return "double";
  else if constexpr (std::same_as<T, bf16>) return "bf16";
  else if constexpr (std::same_as<T, f16>) return "f16";
  else if constexpr (std::same_as<T, long double>) return "long double";
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1 ? "int8" : sizeof(T) == 2 ? "int16" : sizeof(T) == 4 ? "int32" : "int64";
  else
    return sizeof(T) == 1 ? "uint8" : sizeof(T) == 2 ? "uint16" : sizeof(T) == 4 ? "uint32" : "uint64";
}

template <class T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // the data section need not be aligned for T
  return v;
}

// One floating-point element of dtype Source converted to T, rounding once.
template <safetensors_float T, class Source>
T convert_float(Source x) {
  if constexpr (std::same_as<T, Source>) return x;
  else if constexpr (half_float<Source>) return static_cast<T>(static_cast<float>(x));  // exact widening first
  else return static_cast<T>(x);                                                      // bf16(double) rounds once
}

}  // namespace train::detail

// ---- writer ----

/// Destination of a safetensors_writer fill callback: the callback writes exactly the
/// tensor's byte length, in row-major order of the shape it was declared with.
class safetensors_sink {
 public:
  /// Appends `n` raw bytes.
  void write_bytes(const void* data, std::size_t n) {
    if (n > remaining_)
      out_->fail("tensor " + train::detail::st_quote(name_) + ": the fill callback wrote more than the " +
                 std::to_string(declared_) + " bytes its shape and dtype declare");
    out_->write(data, n);
    remaining_ -= n;
  }

  /// Appends the elements of a contiguous range (a span, vector or array: e.g. one
  /// transposed row).
  template <std::ranges::contiguous_range R>
    requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>>
  void write(R&& values) {
    write_bytes(std::ranges::data(values), std::ranges::size(values) * sizeof(std::ranges::range_value_t<R>));
  }

  /// Appends the bytes of one value (e.g. a weft::bf16). Ranges take the overload above,
  /// so a span is never written as its pointer and size.
  template <class T>
    requires std::is_trivially_copyable_v<T> && (!std::ranges::range<T>)
  void write(const T& value) {
    write_bytes(&value, sizeof(T));
  }

  /// Bytes still owed by the callback.
  std::uint64_t remaining() const { return remaining_; }

 private:
  friend class safetensors_writer;
  safetensors_sink(train::detail::fd_output& out, std::string_view name, std::uint64_t bytes)
      : out_(&out), name_(name), declared_(bytes), remaining_(bytes) {}

  train::detail::fd_output* out_;
  std::string_view name_;
  std::uint64_t declared_;
  std::uint64_t remaining_;
};

/// Collects named tensors and string metadata, then writes one safetensors file atomically
/// (to `path + ".tmp"`, fsync, rename). Data is referenced, not copied: pointers and
/// callbacks given to add() must stay valid until write() returns.
///
///   safetensors_writer w;
///   w.set_metadata("format", "pt");
///   w.add("wte.weight", {50257, 768}, wte);                   // F32 from a std::vector<float>
///   w.add("h.0.attn.c_attn.weight", "BF16", {768, 2304},      // converted/transposed on the fly
///         [&](safetensors_sink& out) { ... out.write(bits) ... });
///   w.write("model.safetensors");
class safetensors_writer {
 public:
  using fill_function = std::function<void(safetensors_sink&)>;

  /// Adds a tensor whose `bytes` bytes at `data` are already in file layout.
  safetensors_writer& add(std::string name, std::string_view dtype, std::vector<std::int64_t> shape,
                          const void* data, std::size_t bytes) {
    entry e = make_entry(std::move(name), dtype, std::move(shape));
    if (bytes != e.bytes)
      fail_tensor(e.name, "shape " + train::detail::shape_string(e.shape) + " of " + std::string(dtype) +
                              " needs " + std::to_string(e.bytes) + " bytes but " +
                              std::to_string(bytes) + " were given");
    if (data == nullptr && bytes != 0) fail_tensor(e.name, "data pointer is null");
    e.data = data;
    entries_.push_back(std::move(e));  // only once every check has passed
    return *this;
  }

  /// Adds a tensor stored as the element type of `data` (double -> F64, float -> F32,
  /// int64_t -> I64, ...). `data` must outlive write(); temporaries are rejected.
  template <std::ranges::contiguous_range R>
    requires std::ranges::borrowed_range<R> && safetensors_element<std::ranges::range_value_t<R>>
  safetensors_writer& add(std::string name, std::vector<std::int64_t> shape, R&& data) {
    using value_type = std::ranges::range_value_t<R>;
    constexpr std::string_view dtype = train::detail::st_dtype_of<value_type>();
    static_assert(!dtype.empty(),
                  "weft::safetensors_writer::add: long double has no safetensors dtype. Convert to double.");
    const auto count = static_cast<std::size_t>(std::ranges::size(data));
    return add(std::move(name), dtype, std::move(shape), std::ranges::data(data), count * sizeof(value_type));
  }

  // A temporary owning range (e.g. `std::vector<float>{...}`) would be destroyed before
  // write() reads it: reject it with a message instead of a dangling pointer.
  template <std::ranges::contiguous_range R>
    requires(!std::ranges::borrowed_range<R>) && safetensors_element<std::ranges::range_value_t<R>>
  safetensors_writer& add(std::string, std::vector<std::int64_t>, R&&) {
    static_assert(std::ranges::borrowed_range<R>,
                  "weft::safetensors_writer::add: the data is a temporary that would be destroyed before "
                  "write() reads it. Keep it in a variable that outlives write().");
    return *this;
  }

  /// Adds a tensor whose bytes `fill` produces at write time (to convert or transpose
  /// on the fly); it must write exactly shape-product * dtype-size bytes.
  safetensors_writer& add(std::string name, std::string_view dtype, std::vector<std::int64_t> shape,
                          fill_function fill) {
    if (!fill) fail_tensor(name, "fill callback is empty");
    entry e = make_entry(std::move(name), dtype, std::move(shape));
    e.fill = std::move(fill);
    entries_.push_back(std::move(e));
    return *this;
  }

  /// Sets one `__metadata__` entry (replacing an earlier value for `key`).
  safetensors_writer& set_metadata(std::string key, std::string value) {
    metadata_[std::move(key)] = std::move(value);
    return *this;
  }

  /// Number of tensors added.
  std::size_t size() const { return entries_.size(); }

  /// The file write() would produce, without its data: `head` is its first bytes (the 8-byte
  /// header length and the JSON header), `tensors` maps each name to its [begin, end) byte
  /// range in the file, `size` is the file's length. Processes that each hold part of the
  /// tensors can size the file and write their parts at these places (distributed_checkpoint.hpp).
  struct file_layout {
    std::string head;
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>, std::less<>> tensors;
    std::uint64_t size = 0;
  };
  file_layout layout() const {
    const std::vector<const entry*> order = data_order();
    const std::string header = make_header(order);
    file_layout l;
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) l.head.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    l.head += header;
    std::uint64_t at = l.head.size();
    for (const entry* e : order) {
      l.tensors[e->name] = {at, at + e->bytes};
      at += e->bytes;
    }
    l.size = at;
    return l;
  }

  /// Writes the file: `path + ".tmp"` first, fsync, then rename over `path`, so `path`
  /// holds either its old content or the complete new file, never a partial one.
  void write(const std::filesystem::path& path) const {
    namespace d = train::detail;
    const std::string path_str = path.string();
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    const std::string tmp_str = tmp.string();

    const std::vector<const entry*> order = data_order();
    const std::string header = make_header(order);
    if (header.size() > d::max_header_bytes)
      throw checkpoint_error("weft::safetensors_writer: " + d::st_quote(path_str) + ": header of " +
                             std::to_string(header.size()) + " bytes exceeds the " +
                             std::to_string(d::max_header_bytes) + "-byte limit of the format.");

    // The temporary file is removed on every failure, including a throwing callback.
    const int fd = ::open(tmp_str.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw checkpoint_error("weft::safetensors_writer: " + d::st_quote(tmp_str) +
                             ": cannot create: " + d::errno_string(errno) + ".");
    struct tmp_guard {
      int fd;
      std::string path;
      bool done = false;
      ~tmp_guard() {
        if (fd >= 0) ::close(fd);
        if (!done) ::unlink(path.c_str());
      }
    } guard{fd, tmp_str};

    d::fd_output out(fd, "weft::safetensors_writer", tmp_str);
    const std::uint64_t n = header.size();
    std::array<unsigned char, 8> n_le{};
    for (int i = 0; i < 8; ++i) n_le[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(n_le.data(), n_le.size());
    out.write(header.data(), header.size());
    for (const entry* e : order) {
      if (e->fill) {
        safetensors_sink sink(out, e->name, e->bytes);
        e->fill(sink);
        if (sink.remaining() != 0)
          out.fail("tensor " + d::st_quote(e->name) + ": the fill callback wrote " +
                   std::to_string(e->bytes - sink.remaining()) + " of the " + std::to_string(e->bytes) +
                   " bytes its shape and dtype declare");
      } else {
        out.write(e->data, static_cast<std::size_t>(e->bytes));
      }
    }
    out.flush();
    if (::fsync(fd) != 0) out.fail("cannot fsync: " + d::errno_string(errno));
    guard.fd = -1;
    if (::close(fd) != 0) out.fail("cannot close: " + d::errno_string(errno));
    if (::rename(tmp_str.c_str(), path_str.c_str()) != 0)
      out.fail("cannot rename to " + d::st_quote(path_str) + ": " + d::errno_string(errno));
    guard.done = true;
    sync_directory(path);
  }

 private:
  struct entry {
    std::string name;
    const train::detail::st_dtype_entry* dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t bytes;
    const void* data = nullptr;
    fill_function fill;
  };

  [[noreturn]] static void fail_tensor(std::string_view name, const std::string& problem) {
    throw checkpoint_error("weft::safetensors_writer: tensor " + train::detail::st_quote(name) + ": " +
                           problem + ".");
  }

  // Data order as in the reference: larger elements first, then by name; the data section
  // starts 8-aligned, so every tensor starts aligned to its element size.
  std::vector<const entry*> data_order() const {
    std::vector<const entry*> order;
    order.reserve(entries_.size());
    for (const entry& e : entries_) order.push_back(&e);
    std::ranges::sort(order, [](const entry* a, const entry* b) {
      const std::uint32_t aa = std::max<std::uint32_t>(a->dtype->bits, 8);
      const std::uint32_t ba = std::max<std::uint32_t>(b->dtype->bits, 8);
      if (aa != ba) return aa > ba;
      return a->name < b->name;
    });
    return order;
  }

  // A checked entry, not yet added.
  entry make_entry(std::string name, std::string_view dtype, std::vector<std::int64_t> shape) {
    namespace d = train::detail;
    if (name.empty()) fail_tensor(name, "empty tensor name");
    if (name == "__metadata__") fail_tensor(name, "the name __metadata__ is reserved by the format");
    for (const entry& e : entries_)
      if (e.name == name) fail_tensor(name, "added twice");
    const d::st_dtype_entry* dt = d::find_st_dtype(dtype);
    if (dt == nullptr) fail_tensor(name, "unknown dtype " + d::st_quote(dtype) + " (use F64, F32, BF16, F16, I64, I32, U8, ...)");
    std::uint64_t bytes = 0, elements = 0;
    if (!d::st_byte_length(*dt, shape, bytes, elements))
      fail_tensor(name, "shape " + d::shape_string(shape) + " of " + std::string(dtype) +
                            " is invalid (negative extent, overflow, or packed elements not filling whole bytes)");
    return entry{std::move(name), dt, std::move(shape), bytes, nullptr, {}};
  }

  // Compact JSON like serde_json: __metadata__ first (sorted keys), tensors in data order,
  // then spaces up to a multiple of 8 bytes.
  std::string make_header(const std::vector<const entry*>& order) const {
    namespace d = train::detail;
    std::string h = "{";
    bool first = true;
    if (!metadata_.empty()) {
      h += "\"__metadata__\":{";
      bool first_key = true;
      for (const auto& [k, v] : metadata_) {
        if (!first_key) h += ',';
        first_key = false;
        d::append_json_string(h, k);
        h += ':';
        d::append_json_string(h, v);
      }
      h += '}';
      first = false;
    }
    std::uint64_t offset = 0;
    for (const entry* e : order) {
      if (!first) h += ',';
      first = false;
      d::append_json_string(h, e->name);
      h += ":{\"dtype\":\"";
      h += e->dtype->name;
      h += "\",\"shape\":[";
      for (std::size_t i = 0; i < e->shape.size(); ++i) {
        if (i) h += ',';
        h += std::to_string(e->shape[i]);
      }
      h += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(offset + e->bytes) + "]}";
      offset += e->bytes;
    }
    h += '}';
    h.append((8 - h.size() % 8) % 8, ' ');
    return h;
  }

  // Makes the rename itself durable. Best effort: some file systems refuse to fsync a directory.
  static void sync_directory(const std::filesystem::path& path) {
    std::filesystem::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
  }

  std::vector<entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// ---- reader ----

/// One tensor of a safetensors_file.
struct safetensors_tensor_info {
  std::string dtype;                  ///< as in the header: "F32", "BF16", "I64", ...
  std::vector<std::int64_t> shape;    ///< row-major extents, outermost first; {} for a scalar
  std::span<const std::byte> bytes;   ///< the tensor's data inside the mapped file
  std::uint64_t data_begin = 0;       ///< data_offsets relative to the data section
  std::uint64_t data_end = 0;
  std::uint64_t element_count = 0;
};

/// A safetensors file, memory-mapped read-only and fully validated on open: header length,
/// JSON syntax, known dtypes, shape * dtype size == byte length, offsets inside the data
/// section, no overlaps, no gaps, no trailing bytes. Move-only; spans from info() live as
/// long as the object. Every problem is a checkpoint_error naming the file.
class safetensors_file {
 public:
  /// Maps and validates `path`.
  static safetensors_file open(const std::filesystem::path& path) {
    safetensors_file f;
    f.path_ = path.string();
    f.map_file();
    f.parse();
    return f;
  }

  safetensors_file(safetensors_file&& o) noexcept { swap(o); }
  safetensors_file& operator=(safetensors_file&& o) noexcept {
    safetensors_file tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;
  ~safetensors_file() {
    if (map_ != nullptr) ::munmap(map_, map_size_);
  }

  /// The path given to open().
  const std::string& path() const { return path_; }

  /// Tensor names in data order (ascending data_offsets).
  const std::vector<std::string>& names() const { return names_; }

  /// Number of tensors.
  std::size_t size() const { return names_.size(); }

  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }

  /// dtype, shape and bytes of `name`; checkpoint_error when the file has no such tensor.
  const safetensors_tensor_info& info(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) {
      std::string some;
      for (std::size_t i = 0; i < names_.size() && i < 3; ++i)
        some += (i ? ", " : "") + train::detail::st_quote(names_[i]);
      fail("no tensor named " + train::detail::st_quote(name) + " (the file has " +
           std::to_string(names_.size()) + " tensors" + (names_.empty() ? "" : ", e.g. " + some) + ")");
    }
    return infos_[it->second];
  }

  /// The `__metadata__` map (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// Size of the header N and of the whole file, in bytes.
  std::uint64_t header_length() const { return header_length_; }
  std::uint64_t file_size() const { return map_size_; }

  /// Copies tensor `name` into `dest` (dest.size() must equal its element count),
  /// converting: a floating-point T (double, float, bf16, f16) reads F64, F32, F16 and BF16,
  /// rounding to nearest even where T is narrower; an integer T reads the integer dtypes
  /// and BOOL, and every value must fit in T.
  template <safetensors_element T>
  void read_as(std::string_view name, std::span<T> dest) const {
    namespace d = train::detail;
    const safetensors_tensor_info& t = info(name);
    const std::string what = "tensor " + d::st_quote(name);
    if (dest.size() != t.element_count)
      fail(what + " has " + std::to_string(t.element_count) + " elements (shape " +
           d::shape_string(t.shape) + ") but the destination holds " + std::to_string(dest.size()));
    const std::byte* p = t.bytes.data();
    const d::st_dtype code = d::find_st_dtype(t.dtype)->code;
    if constexpr (safetensors_float<T>) {
      switch (code) {
        case d::st_dtype::f64: copy_floats<T, double>(p, dest); return;
        case d::st_dtype::f32: copy_floats<T, float>(p, dest); return;
        case d::st_dtype::f16: copy_floats<T, f16>(p, dest); return;
        case d::st_dtype::bf16: copy_floats<T, bf16>(p, dest); return;
        default:
          fail(what + " is " + t.dtype + "; read_as<" + std::string(d::element_type_name<T>()) +
               "> converts only from F64, F32, F16 and BF16");
      }
    } else {
      switch (code) {
        case d::st_dtype::boolean: copy_integers<T, std::uint8_t>(what, p, dest); return;
        case d::st_dtype::u8: copy_integers<T, std::uint8_t>(what, p, dest); return;
        case d::st_dtype::i8: copy_integers<T, std::int8_t>(what, p, dest); return;
        case d::st_dtype::u16: copy_integers<T, std::uint16_t>(what, p, dest); return;
        case d::st_dtype::i16: copy_integers<T, std::int16_t>(what, p, dest); return;
        case d::st_dtype::u32: copy_integers<T, std::uint32_t>(what, p, dest); return;
        case d::st_dtype::i32: copy_integers<T, std::int32_t>(what, p, dest); return;
        case d::st_dtype::u64: copy_integers<T, std::uint64_t>(what, p, dest); return;
        case d::st_dtype::i64: copy_integers<T, std::int64_t>(what, p, dest); return;
        default:
          fail(what + " is " + t.dtype + "; read_as<" + std::string(d::element_type_name<T>()) +
               "> converts only from integer dtypes and BOOL");
      }
    }
  }

  /// Same, into a new vector.
  template <safetensors_element T>
  std::vector<T> read_as(std::string_view name) const {
    std::vector<T> out(static_cast<std::size_t>(info(name).element_count));
    read_as<T>(name, std::span<T>(out));
    return out;
  }

 private:
  safetensors_file() = default;

  void swap(safetensors_file& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(map_, o.map_);
    std::swap(map_size_, o.map_size_);
    std::swap(header_length_, o.header_length_);
    std::swap(names_, o.names_);
    std::swap(infos_, o.infos_);
    std::swap(index_, o.index_);
    std::swap(metadata_, o.metadata_);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw checkpoint_error("weft::safetensors_file: " + train::detail::st_quote(path_) + ": " + problem + ".");
  }

  template <class T, class Source>
  static void copy_floats(const std::byte* p, std::span<T> dest) {
    if constexpr (std::same_as<T, Source>) {
      if (!dest.empty()) std::memcpy(dest.data(), p, dest.size_bytes());  // same dtype: plain copy
    } else {
      for (std::size_t i = 0; i < dest.size(); ++i)
        dest[i] = train::detail::convert_float<T>(train::detail::load_le<Source>(p + sizeof(Source) * i));
    }
  }

  template <class T, class Source>
  void copy_integers(const std::string& what, const std::byte* p, std::span<T> dest) const {
    for (std::size_t i = 0; i < dest.size(); ++i) {
      const Source v = train::detail::load_le<Source>(p + sizeof(Source) * i);
      if (!std::in_range<T>(v))
        fail(what + ": element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit in " +
             std::string(train::detail::element_type_name<T>()));
      dest[i] = static_cast<T>(v);
    }
  }

  void map_file() {
    namespace d = train::detail;
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open: " + d::errno_string(errno));
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      fail("cannot stat: " + d::errno_string(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("not a regular file");
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < 8) {
      ::close(fd);
      fail("file is " + std::to_string(size) +
           " bytes, shorter than the 8-byte header length that starts a safetensors file (truncated file?)");
    }
    void* m = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (m == MAP_FAILED) fail("cannot mmap: " + d::errno_string(err));
    map_ = m;
    map_size_ = static_cast<std::size_t>(size);
  }

  void parse() {
    namespace d = train::detail;
    const auto* base = static_cast<const std::byte*>(map_);
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(std::to_integer<unsigned char>(base[i])) << (8 * i);
    if (n > d::max_header_bytes)
      fail("header length " + std::to_string(n) + " exceeds the " + std::to_string(d::max_header_bytes) +
           "-byte limit (not a safetensors file?)");
    if (n > map_size_ - 8)
      fail("header length " + std::to_string(n) + " runs past the end of the " + std::to_string(map_size_) +
           "-byte file (truncated file?)");
    header_length_ = n;
    const std::string_view text(reinterpret_cast<const char*>(base + 8), static_cast<std::size_t>(n));
    const std::byte* data = base + 8 + n;
    const std::uint64_t data_size = map_size_ - 8 - n;

    d::json_value root;
    try {
      root = d::json_parser(text).parse_document();
    } catch (const d::json_error& e) {
      fail("header is not valid JSON: " + e.what + " at header byte " + std::to_string(e.offset));
    }
    if (root.type != d::json_value::kind::object)
      fail("header is " + std::string(d::json_kind_name(root.type)) + ", expected a JSON object");

    for (std::size_t k = 0; k < root.keys.size(); ++k) {
      const std::string& name = root.keys[k];
      const d::json_value& v = root.items[k];
      if (name == "__metadata__") {
        read_metadata(v);
        continue;
      }
      infos_.push_back(read_tensor(name, v, data, data_size));
      names_.push_back(name);
    }

    // Coverage: sorted by offsets, each tensor must start where the previous one ended,
    // and the last must end at the end of the file.
    std::vector<std::size_t> order(infos_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
      return std::pair(infos_[a].data_begin, infos_[a].data_end) < std::pair(infos_[b].data_begin, infos_[b].data_end);
    });
    std::uint64_t covered = 0;
    const std::string* prev = nullptr;
    for (std::size_t i : order) {
      const safetensors_tensor_info& t = infos_[i];
      if (t.data_begin < covered)
        fail("tensors " + d::st_quote(*prev) + " and " + d::st_quote(names_[i]) + " " +
             d::range_string(t.data_begin, t.data_end) + " overlap in the data section");
      if (t.data_begin > covered)
        fail("data section bytes [" + std::to_string(covered) + ", " + std::to_string(t.data_begin) +
             ") belong to no tensor (gap before " + d::st_quote(names_[i]) + ")");
      covered = t.data_end;
      prev = &names_[i];
    }
    if (covered != data_size)
      fail("data section is " + std::to_string(data_size) + " bytes but the tensors cover only " +
           std::to_string(covered) + " (trailing bytes after the last tensor)");

    // Keep names and infos in data order.
    std::vector<std::string> names;
    std::vector<safetensors_tensor_info> infos;
    names.reserve(order.size());
    infos.reserve(order.size());
    for (std::size_t i : order) {
      names.push_back(std::move(names_[i]));
      infos.push_back(std::move(infos_[i]));
    }
    names_ = std::move(names);
    infos_ = std::move(infos);
    for (std::size_t i = 0; i < names_.size(); ++i) index_.emplace(names_[i], i);
  }

  void read_metadata(const train::detail::json_value& v) {
    namespace d = train::detail;
    if (v.type != d::json_value::kind::object)
      fail("__metadata__ is " + std::string(d::json_kind_name(v.type)) + ", expected an object of strings");
    for (std::size_t i = 0; i < v.keys.size(); ++i) {
      if (v.items[i].type != d::json_value::kind::string)
        fail("__metadata__ value for " + d::st_quote(v.keys[i]) + " is " +
             std::string(d::json_kind_name(v.items[i].type)) + ", expected a string");
      metadata_.emplace(v.keys[i], v.items[i].string);
    }
  }

  safetensors_tensor_info read_tensor(const std::string& name, const train::detail::json_value& v,
                                      const std::byte* data, std::uint64_t data_size) const {
    namespace d = train::detail;
    using kind = d::json_value::kind;
    const std::string what = "tensor " + d::st_quote(name);
    if (v.type != kind::object)
      fail(what + " is " + std::string(d::json_kind_name(v.type)) + ", expected an object with dtype, shape and data_offsets");
    const d::json_value* dtype = v.find("dtype");
    const d::json_value* shape = v.find("shape");
    const d::json_value* offsets = v.find("data_offsets");
    if (dtype == nullptr) fail(what + ": missing \"dtype\"");
    if (shape == nullptr) fail(what + ": missing \"shape\"");
    if (offsets == nullptr) fail(what + ": missing \"data_offsets\"");
    if (dtype->type != kind::string) fail(what + ": dtype is " + std::string(d::json_kind_name(dtype->type)) + ", expected a string");
    const d::st_dtype_entry* dt = d::find_st_dtype(dtype->string);
    if (dt == nullptr) fail(what + ": unknown dtype " + d::st_quote(dtype->string));

    safetensors_tensor_info t;
    t.dtype = dtype->string;
    if (shape->type != kind::array) fail(what + ": shape is " + std::string(d::json_kind_name(shape->type)) + ", expected an array");
    for (const d::json_value& x : shape->items) {
      if (x.type != kind::integer || x.negative || x.magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(what + ": shape entries must be non-negative integers");
      t.shape.push_back(static_cast<std::int64_t>(x.magnitude));
    }
    if (offsets->type != kind::array || offsets->items.size() != 2)
      fail(what + ": data_offsets must be an array of two integers [begin, end]");
    for (const d::json_value& x : offsets->items)
      if (x.type != kind::integer || x.negative) fail(what + ": data_offsets must be non-negative integers");
    t.data_begin = offsets->items[0].magnitude;
    t.data_end = offsets->items[1].magnitude;
    const std::string range = d::range_string(t.data_begin, t.data_end);
    if (t.data_end < t.data_begin) fail(what + ": data_offsets " + range + " end before they begin");
    if (t.data_end > data_size)
      fail(what + ": data_offsets " + range + " end past the " + std::to_string(data_size) +
           "-byte data section (truncated file?)");
    std::uint64_t bytes = 0;
    if (!d::st_byte_length(*dt, t.shape, bytes, t.element_count))
      fail(what + ": shape " + d::shape_string(t.shape) + " of " + t.dtype +
           " overflows or does not fill whole bytes");
    if (bytes != t.data_end - t.data_begin)
      fail(what + ": shape " + d::shape_string(t.shape) + " of " + t.dtype + " needs " + std::to_string(bytes) +
           " bytes but data_offsets " + range + " hold " + std::to_string(t.data_end - t.data_begin));
    t.bytes = std::span<const std::byte>(data + t.data_begin, static_cast<std::size_t>(bytes));
    return t;
  }

  std::string path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::uint64_t header_length_ = 0;
  std::vector<std::string> names_;
  std::vector<safetensors_tensor_info> infos_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace weft
