#pragma once
// weft safetensors, the part reader and writer share: the file layout, the dtype table, the
// element types weft converts to and from, and the pieces of their messages.
//
// File layout (all integers little-endian):
//   [0, 8)        N: u64, length of the JSON header
//   [8, 8+N)      JSON header, padded with spaces so that 8+N is a multiple of 8:
//                 {"__metadata__":{"key":"value",...},
//                  "name":{"dtype":"F32","shape":[768,2304],"data_offsets":[begin,end]}, ...}
//   [8+N, EOF)    data section; each tensor's bytes are [begin, end) relative to its start,
//                 row-major (C order). Tensors cover the data section exactly, without gaps.
// Reference implementation: github.com/huggingface/safetensors (safetensors/src/tensor.rs).
// The writer is io/safetensors_writer.hpp, the reader io/safetensors_reader.hpp.

#include "weft/core/dtype.hpp"           // bf16, f16, half_float
#include "weft/io/checkpoint_error.hpp"  // checkpoint_error
#include "weft/io/json.hpp"              // json_quote, json_rules

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

namespace io::detail {

// The format stores little-endian bytes; we copy them to and from memory unchanged.
inline constexpr bool host_is_little_endian = std::endian::native == std::endian::little;
static_assert(host_is_little_endian,
              "weft::safetensors: this host is big-endian, but safetensors files are little-endian "
              "and weft copies their bytes unchanged. Build on a little-endian host.");

// Largest header the reference implementation accepts (MAX_HEADER_SIZE in tensor.rs).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

// What a header may hold beyond JSON's grammar: integers only, and a real header nests
// 3 deep ({ name: { shape: [ ] } }), so 64 levels are plenty.
inline constexpr json_rules header_json_rules{.max_depth = 64, .integers_only = true};

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
inline std::string st_quote(std::string_view s) { return json_quote(s); }

inline std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline std::string range_string(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

inline std::string errno_string(int err) { return std::string(std::strerror(err)); }

}  // namespace io::detail

// ---- element types ----

/// Element types that safetensors_writer::add stores directly and safetensors_file::read_as
/// converts to: the floating-point types (with weft's bf16 and f16) and integers (not bool).
template <class T>
concept safetensors_element =
    std::floating_point<T> || half_float<T> || (std::integral<T> && !std::same_as<T, bool>);

/// The floating-point members of safetensors_element.
template <class T>
concept safetensors_float = std::floating_point<T> || half_float<T>;

namespace io::detail {

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

}  // namespace io::detail

}  // namespace weft
