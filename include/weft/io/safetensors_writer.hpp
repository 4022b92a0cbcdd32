#pragma once
// weft safetensors writer: collects named tensors and metadata, writes one file atomically.
// The header is compact JSON written by nlohmann-json, byte for byte what the reference
// (serde_json) writes; the file layout is in io/safetensors_format.hpp.

#include "weft/io/checkpoint_error.hpp"     // checkpoint_error
#include "weft/io/json.hpp"                 // json, valid_utf8
#include "weft/io/safetensors_format.hpp"   // dtypes, safetensors_element, messages

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace weft {

namespace io::detail {

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

}  // namespace io::detail

// ---- writer ----

/// Destination of a safetensors_writer fill callback: the callback writes exactly the
/// tensor's byte length, in row-major order of the shape it was declared with.
class safetensors_sink {
 public:
  /// Appends `n` raw bytes.
  void write_bytes(const void* data, std::size_t n) {
    if (n > remaining_)
      out_->fail("tensor " + io::detail::st_quote(name_) + ": the fill callback wrote more than the " +
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
  safetensors_sink(io::detail::fd_output& out, std::string_view name, std::uint64_t bytes)
      : out_(&out), name_(name), declared_(bytes), remaining_(bytes) {}

  io::detail::fd_output* out_;
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
      fail_tensor(e.name, "shape " + io::detail::shape_string(e.shape) + " of " + std::string(dtype) +
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
    constexpr std::string_view dtype = io::detail::st_dtype_of<value_type>();
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
    if (!io::detail::valid_utf8(key) || !io::detail::valid_utf8(value))
      throw checkpoint_error("weft::safetensors_writer: metadata " + io::detail::st_quote(key) +
                             ": key and value must be valid UTF-8 (the header is JSON).");
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
    namespace d = io::detail;
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
    const io::detail::st_dtype_entry* dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t bytes;
    const void* data = nullptr;
    fill_function fill;
  };

  [[noreturn]] static void fail_tensor(std::string_view name, const std::string& problem) {
    throw checkpoint_error("weft::safetensors_writer: tensor " + io::detail::st_quote(name) + ": " +
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
    namespace d = io::detail;
    if (name.empty()) fail_tensor(name, "empty tensor name");
    if (!d::valid_utf8(name)) fail_tensor(name, "the name is not valid UTF-8 (the header is JSON)");
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
  // then spaces up to a multiple of 8 bytes. ordered_json keeps that order.
  std::string make_header(const std::vector<const entry*>& order) const {
    io::detail::json h = io::detail::json::object();
    if (!metadata_.empty()) {
      io::detail::json& m = h["__metadata__"] = io::detail::json::object();
      for (const auto& [k, v] : metadata_) m[k] = v;
    }
    std::uint64_t offset = 0;
    for (const entry* e : order) {
      io::detail::append_member(h, e->name,  // names are unique (make_entry), none is __metadata__
                                {{"dtype", e->dtype->name},
                                 {"shape", e->shape},
                                 {"data_offsets", {offset, offset + e->bytes}}});
      offset += e->bytes;
    }
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
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

}  // namespace weft
