#pragma once
// weft safetensors reader: maps a file read-only and validates all of it on open; the header is
// parsed by nlohmann-json under the format's stricter rules (io/json.hpp); the file layout is
// in io/safetensors_format.hpp.

#include "weft/data/detail/mapped_file.hpp"  // mapped_file (POSIX mmap, shared with token_file)
#include "weft/io/checkpoint_error.hpp"      // checkpoint_error
#include "weft/io/json.hpp"                  // parse_json, json_error, json_kind_name
#include "weft/io/safetensors_format.hpp"    // dtypes, safetensors_element, messages

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft {

namespace io::detail {

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

}  // namespace io::detail

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
  ~safetensors_file() = default;

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
        some += (i ? ", " : "") + io::detail::st_quote(names_[i]);
      fail("no tensor named " + io::detail::st_quote(name) + " (the file has " +
           std::to_string(names_.size()) + " tensors" + (names_.empty() ? "" : ", e.g. " + some) + ")");
    }
    return infos_[it->second];
  }

  /// The `__metadata__` map (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// Size of the header N and of the whole file, in bytes.
  std::uint64_t header_length() const { return header_length_; }
  std::uint64_t file_size() const { return file_.size(); }

  /// Copies tensor `name` into `dest` (dest.size() must equal its element count),
  /// converting: a floating-point T (double, float, bf16, f16) reads F64, F32, F16 and BF16,
  /// rounding to nearest even where T is narrower; an integer T reads the integer dtypes
  /// and BOOL, and every value must fit in T.
  template <safetensors_element T>
  void read_as(std::string_view name, std::span<T> dest) const {
    namespace d = io::detail;
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
    file_.swap(o.file_);
    std::swap(header_length_, o.header_length_);
    std::swap(names_, o.names_);
    std::swap(infos_, o.infos_);
    std::swap(index_, o.index_);
    std::swap(metadata_, o.metadata_);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw checkpoint_error("weft::safetensors_file: " + io::detail::st_quote(path_) + ": " + problem + ".");
  }

  template <class T, class Source>
  static void copy_floats(const std::byte* p, std::span<T> dest) {
    if constexpr (std::same_as<T, Source>) {
      if (!dest.empty()) std::memcpy(dest.data(), p, dest.size_bytes());  // same dtype: plain copy
    } else {
      for (std::size_t i = 0; i < dest.size(); ++i)
        dest[i] = io::detail::convert_float<T>(io::detail::load_le<Source>(p + sizeof(Source) * i));
    }
  }

  template <class T, class Source>
  void copy_integers(const std::string& what, const std::byte* p, std::span<T> dest) const {
    for (std::size_t i = 0; i < dest.size(); ++i) {
      const Source v = io::detail::load_le<Source>(p + sizeof(Source) * i);
      if (!std::in_range<T>(v))
        fail(what + ": element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit in " +
             std::string(io::detail::element_type_name<T>()));
      dest[i] = static_cast<T>(v);
    }
  }

  void map_file() {
    const auto failure = file_.map(path_, 8);
    if (!failure) return;
    const std::string why = io::detail::errno_string(failure->err);
    switch (failure->step) {
      case weft::detail::map_step::open: fail("cannot open: " + why);
      case weft::detail::map_step::stat: fail("cannot stat: " + why);
      case weft::detail::map_step::not_regular: fail("not a regular file");
      case weft::detail::map_step::too_small:
        fail("file is " + std::to_string(failure->size) +
             " bytes, shorter than the 8-byte header length that starts a safetensors file (truncated file?)");
      case weft::detail::map_step::mmap: fail("cannot mmap: " + why);
    }
  }

  void parse() {
    namespace d = io::detail;
    const auto* base = static_cast<const std::byte*>(file_.data());
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(std::to_integer<unsigned char>(base[i])) << (8 * i);
    if (n > d::max_header_bytes)
      fail("header length " + std::to_string(n) + " exceeds the " + std::to_string(d::max_header_bytes) +
           "-byte limit (not a safetensors file?)");
    if (n > file_.size() - 8)
      fail("header length " + std::to_string(n) + " runs past the end of the " + std::to_string(file_.size()) +
           "-byte file (truncated file?)");
    header_length_ = n;
    const std::string_view text(reinterpret_cast<const char*>(base + 8), static_cast<std::size_t>(n));
    const std::byte* data = base + 8 + n;
    const std::uint64_t data_size = file_.size() - 8 - n;

    d::json root;
    try {
      root = d::parse_json(text, d::header_json_rules);
    } catch (const d::json_error& e) {
      fail("header is not valid JSON: " + e.what +
           (e.offset == d::json_error::npos ? std::string() : " at header byte " + std::to_string(e.offset)));
    }
    if (!root.is_object())
      fail("header is " + std::string(d::json_kind_name(root)) + ", expected a JSON object");

    for (const auto& [name, v] : root.items()) {
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

  void read_metadata(const io::detail::json& v) {
    namespace d = io::detail;
    if (!v.is_object())
      fail("__metadata__ is " + std::string(d::json_kind_name(v)) + ", expected an object of strings");
    for (const auto& [key, value] : v.items()) {
      if (!value.is_string())
        fail("__metadata__ value for " + d::st_quote(key) + " is " + std::string(d::json_kind_name(value)) +
             ", expected a string");
      metadata_.emplace(key, value.get_ref<const std::string&>());
    }
  }

  safetensors_tensor_info read_tensor(const std::string& name, const io::detail::json& v,
                                      const std::byte* data, std::uint64_t data_size) const {
    namespace d = io::detail;
    const std::string what = "tensor " + d::st_quote(name);
    if (!v.is_object())
      fail(what + " is " + std::string(d::json_kind_name(v)) + ", expected an object with dtype, shape and data_offsets");
    const auto field = [&](const char* key) -> const d::json& {
      const auto it = v.find(key);
      if (it == v.end()) fail(what + ": missing \"" + key + "\"");
      return *it;
    };
    const d::json& dtype = field("dtype");
    const d::json& shape = field("shape");
    const d::json& offsets = field("data_offsets");
    if (!dtype.is_string()) fail(what + ": dtype is " + std::string(d::json_kind_name(dtype)) + ", expected a string");
    const std::string& dtype_name = dtype.get_ref<const std::string&>();
    const d::st_dtype_entry* dt = d::find_st_dtype(dtype_name);
    if (dt == nullptr) fail(what + ": unknown dtype " + d::st_quote(dtype_name));

    safetensors_tensor_info t;
    t.dtype = dtype_name;
    if (!shape.is_array()) fail(what + ": shape is " + std::string(d::json_kind_name(shape)) + ", expected an array");
    for (const d::json& x : shape) {  // a non-negative integer is number_unsigned
      if (!x.is_number_unsigned() || x.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(what + ": shape entries must be non-negative integers");
      t.shape.push_back(static_cast<std::int64_t>(x.get<std::uint64_t>()));
    }
    if (!offsets.is_array() || offsets.size() != 2)
      fail(what + ": data_offsets must be an array of two integers [begin, end]");
    for (const d::json& x : offsets)
      if (!x.is_number_unsigned()) fail(what + ": data_offsets must be non-negative integers");
    t.data_begin = offsets[0].get<std::uint64_t>();
    t.data_end = offsets[1].get<std::uint64_t>();
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
  weft::detail::mapped_file file_;
  std::uint64_t header_length_ = 0;
  std::vector<std::string> names_;
  std::vector<safetensors_tensor_info> infos_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace weft
