#pragma once
// ---- token_file: a read-only memory-mapped file of uint16 tokens ----
// Two on-disk formats, both little-endian uint16 tokens:
//   nanogpt  the `train.bin`/`val.bin` of nanoGPT: a flat array of uint16, no header;
//   llmc     an llm.c shard: 256 x int32 header (magic 20240520, version 1, token count),
//            then the tokens.
// The file is mapped with POSIX mmap (PROT_READ, MAP_SHARED), so a many-GB corpus costs
// no load time and the page cache is shared by all ranks on a node. All checks happen in
// `open`; reading afterwards never throws.
#include "weft/train/data_error.hpp"    // data_error
#include "weft/train/token_source.hpp"  // token_source

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft {

/// Which layout `token_file::open` expects.
enum class token_format {
  detect,   ///< llm.c if the first int32 is the llm.c magic, nanoGPT raw otherwise
  nanogpt,  ///< flat little-endian uint16 tokens, no header
  llmc,     ///< llm.c shard: 256 x int32 header, then uint16 tokens
};

/// Name of a format as used in messages and docs.
constexpr std::string_view to_string(token_format f) noexcept {
  switch (f) {
    case token_format::detect: return "detect";
    case token_format::nanogpt: return "nanogpt";
    case token_format::llmc: return "llmc";
  }
  return "?";
}

/// Constants of the llm.c shard header (llm.c `dev/data/data_common.py`).
struct llmc_header {
  static constexpr std::size_t ints = 256;                       ///< header length in int32
  static constexpr std::size_t bytes = ints * sizeof(std::int32_t);  ///< 1024
  static constexpr std::int32_t magic = 20240520;
  static constexpr std::int32_t version = 1;                     ///< uint16 (GPT-2) tokens
};

/// A token file mapped into memory; move-only. Models `token_source`.
class token_file {
  static_assert(std::endian::native == std::endian::little,
                "weft::token_file: token files are little-endian and are mapped without conversion. "
                "Use a little-endian host (x86-64, AArch64).");

 public:
  token_file() = default;
  token_file(const token_file&) = delete;
  token_file& operator=(const token_file&) = delete;
  token_file(token_file&& o) noexcept { swap(o); }
  token_file& operator=(token_file&& o) noexcept {
    token_file tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~token_file() { unmap(); }

  /// Maps `path` and checks it against `format`. Throws `data_error` (one line naming the
  /// file) for: a missing/unreadable file, an empty file, a raw file of odd size, an
  /// llm.c file with bad magic (format forced to llmc), an unsupported version, a token
  /// count that disagrees with the file size (truncated or trailing bytes).
  static token_file open(const std::filesystem::path& path, token_format format = token_format::detect) {
    token_file f;
    f.path_ = path;
    f.map();  // throws on missing / not regular / empty

    const auto* bytes = static_cast<const unsigned char*>(f.map_);
    if (format == token_format::detect) {
      format = token_format::nanogpt;
      if (f.map_size_ >= sizeof(std::int32_t) && read_i32(bytes) == llmc_header::magic) format = token_format::llmc;
    }
    f.format_ = format;

    if (format == token_format::nanogpt) {
      if (f.map_size_ % sizeof(std::uint16_t) != 0)
        f.fail("odd size " + std::to_string(f.map_size_) +
               " bytes for a raw uint16 token file (nanogpt format needs a multiple of 2)");
      f.data_ = reinterpret_cast<const std::uint16_t*>(bytes);
      f.size_ = f.map_size_ / sizeof(std::uint16_t);
      return f;
    }

    // ---- llm.c shard ----
    if (f.map_size_ < sizeof(std::int32_t) || read_i32(bytes) != llmc_header::magic) {
      const std::string got = f.map_size_ < sizeof(std::int32_t) ? std::string("none (file too short)")
                                                                 : std::to_string(read_i32(bytes));
      f.fail("bad magic " + got + " (expected llm.c magic " + std::to_string(llmc_header::magic) +
             "; is this a raw nanogpt .bin? open it with token_format::nanogpt)");
    }
    if (f.map_size_ < llmc_header::bytes)
      f.fail("truncated: " + std::to_string(f.map_size_) + " bytes, smaller than the " +
             std::to_string(llmc_header::bytes) + "-byte llm.c header");
    const std::int32_t version = read_i32(bytes + 1 * sizeof(std::int32_t));
    if (version != llmc_header::version)
      f.fail("unsupported llm.c version " + std::to_string(version) + " (only version " +
             std::to_string(llmc_header::version) + ", uint16 tokens, is supported)");
    const std::int32_t ntok = read_i32(bytes + 2 * sizeof(std::int32_t));
    if (ntok <= 0)
      f.fail("llm.c header says " + std::to_string(ntok) + " tokens (expected at least 1)");
    const std::size_t expected = llmc_header::bytes + static_cast<std::size_t>(ntok) * sizeof(std::uint16_t);
    if (f.map_size_ < expected)
      f.fail("truncated: header says " + std::to_string(ntok) + " tokens (" + std::to_string(expected) +
             " bytes with header) but the file has " + std::to_string(f.map_size_) + " bytes");
    if (f.map_size_ > expected)
      f.fail("size mismatch: header says " + std::to_string(ntok) + " tokens (" + std::to_string(expected) +
             " bytes with header) but the file has " + std::to_string(f.map_size_) + " bytes");
    f.data_ = reinterpret_cast<const std::uint16_t*>(bytes + llmc_header::bytes);
    f.size_ = static_cast<std::size_t>(ntok);
    return f;
  }

  // ---- reading (token_source) ----
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::int32_t operator[](std::size_t i) const noexcept { return static_cast<std::int32_t>(data_[i]); }
  /// The tokens as stored, without the header.
  std::span<const std::uint16_t> tokens() const noexcept { return {data_, size_}; }

  const std::filesystem::path& path() const noexcept { return path_; }
  /// The format found (never `detect` once opened).
  token_format format() const noexcept { return format_; }
  /// Size of the whole file in bytes, header included.
  std::size_t file_bytes() const noexcept { return map_size_; }

  void swap(token_file& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(map_, o.map_);
    std::swap(map_size_, o.map_size_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(format_, o.format_);
  }

 private:
  static std::int32_t read_i32(const unsigned char* p) noexcept {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);  // little-endian host (static_assert above)
    return v;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw data_error("weft::token_file: '" + path_.string() + "': " + problem + ".");
  }

  // Maps the whole file read-only; the descriptor is closed right after mmap.
  void map() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(std::string("cannot open file (") + std::strerror(errno) + ")");
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      fail(std::string("cannot stat file (") + std::strerror(err) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("not a regular file");
    }
    if (st.st_size == 0) {
      ::close(fd);
      fail("file is empty");
    }
    const auto n = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) fail(std::string("cannot mmap file (") + std::strerror(err) + ")");
    map_ = p;
    map_size_ = n;
  }

  void unmap() noexcept {
    if (map_) ::munmap(map_, map_size_);
    map_ = nullptr;
    map_size_ = 0;
  }

  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  const std::uint16_t* data_ = nullptr;  // (tokens) inside the mapping, after any header
  std::size_t size_ = 0;
  token_format format_ = token_format::detect;
};

static_assert(token_source<token_file>);

}  // namespace weft
