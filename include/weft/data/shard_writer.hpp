#pragma once
// ---- shard_writer: writes a token stream as numbered shard files ----
// The writing side of token_shards: tokens are appended and cut into files of `shard_tokens`
// tokens (the last one may be shorter), named `<prefix>_000000.bin`, `<prefix>_000001.bin`, ...
// (llm.c's naming), or `<prefix>_000000.u32.bin` for raw nanoGPT files of uint32 tokens (weft's
// convention, which `token_file` detects). llm.c files get their 1024-byte header with the token
// count, patched when the shard is closed. Every file is written whole before it gets its name
// (`<name>.tmp`, then renamed), so a reader never maps a half-written shard; a writer destroyed
// by an exception deletes its unfinished shard.
#include "weft/data/data_error.hpp"  // data_error
#include "weft/data/token_file.hpp"  // token_format, token_dtype, llmc_header, nanogpt_u32_suffix

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace weft {

/// What `shard_writer` writes.
struct shard_writer_options {
  token_format format = token_format::llmc;  ///< nanogpt or llmc (detect is not a way to write)
  token_dtype dtype = token_dtype::u16;      ///< u16 or u32
  std::size_t shard_tokens = 100'000'000;    ///< tokens per file (llm.c's fineweb default: 1e8)
  std::string prefix = "shard";              ///< file names: <prefix>_NNNNNN.bin
};

/// Appends tokens, cutting them into shard files; `close()` (or the destructor) ends the last.
class shard_writer {
 public:
  /// Creates `dir` if needed. Throws `data_error` for options it cannot write.
  shard_writer(std::filesystem::path dir, shard_writer_options options) : dir_(std::move(dir)), opt_(std::move(options)) {
    if (opt_.format == token_format::detect)
      throw data_error("weft::shard_writer: choose token_format::nanogpt or token_format::llmc to write.");
    if (opt_.dtype == token_dtype::detect)
      throw data_error("weft::shard_writer: choose token_dtype::u16 or token_dtype::u32 to write.");
    if (opt_.shard_tokens == 0) throw data_error("weft::shard_writer: shard_tokens is 0. Use at least 1.");
    if (opt_.format == token_format::llmc && opt_.shard_tokens > 0x7fffffffu)
      throw data_error("weft::shard_writer: an llm.c shard holds at most 2^31-1 tokens (int32 count); lower shard_tokens.");
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw data_error("weft::shard_writer: '" + dir_.string() + "': cannot create directory (" + ec.message() + ").");
    buffer_.reserve(1 << 16);
  }
  shard_writer(const shard_writer&) = delete;
  shard_writer& operator=(const shard_writer&) = delete;
  /// Ends the last shard, unless an exception is unwinding the stack: then the unfinished shard
  /// is deleted (its .tmp file), so a failed run leaves only complete shards of its own.
  ~shard_writer() {
    if (std::uncaught_exceptions() > uncaught_at_start_) {
      if (file_) {
        std::fclose(file_);
        std::error_code ec;
        std::filesystem::remove(temp_, ec);
      }
      return;
    }
    try {
      close();
    } catch (...) {  // a destructor must not throw: call close() to see errors
    }
  }

  /// Appends tokens. Throws `data_error` for a token that does not fit the width (or is
  /// negative), or a write error.
  void write(std::span<const std::int32_t> tokens) {
    for (const std::int32_t t : tokens) {
      if (t < 0 || (opt_.dtype == token_dtype::u16 && t > 0xFFFF))
        throw data_error("weft::shard_writer: token " + std::to_string(t) + " does not fit " +
                         std::string(to_string(opt_.dtype)) + " (use token_dtype::u32 for a vocabulary over 65536).");
      if (!file_) open_next();
      put(static_cast<std::uint32_t>(t));
      if (++in_shard_ == opt_.shard_tokens) finish_shard();
    }
  }

  /// Ends the last shard. Idempotent.
  void close() {
    if (file_) finish_shard();
  }

  /// The files written so far (complete ones).
  const std::vector<std::filesystem::path>& files() const noexcept { return files_; }
  /// Tokens written so far.
  std::uint64_t tokens() const noexcept { return total_; }
  /// Name of shard number `index` for these options.
  std::string shard_name(std::size_t index) const {
    char num[16];
    std::snprintf(num, sizeof num, "_%06zu", index);
    const bool u32_raw = opt_.format == token_format::nanogpt && opt_.dtype == token_dtype::u32;
    return opt_.prefix + num + (u32_raw ? std::string(nanogpt_u32_suffix) : std::string(".bin"));
  }

 private:
  [[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) const {
    throw data_error("weft::shard_writer: '" + p.string() + "': " + what + " (" + std::strerror(errno) + ").");
  }

  void open_next() {
    final_ = dir_ / shard_name(files_.size());
    temp_ = final_;
    temp_ += ".tmp";
    file_ = std::fopen(temp_.c_str(), "wb");
    if (!file_) fail(temp_, "cannot create file");
    in_shard_ = 0;
    if (opt_.format == token_format::llmc) {
      const std::array<std::int32_t, llmc_header::ints> header{};  // count patched in finish_shard
      if (std::fwrite(header.data(), sizeof(std::int32_t), header.size(), file_) != header.size())
        fail(temp_, "write error");
    }
  }

  void put(std::uint32_t t) {
    if (opt_.dtype == token_dtype::u16) {
      buffer_.push_back(static_cast<unsigned char>(t & 0xFF));
      buffer_.push_back(static_cast<unsigned char>(t >> 8));
    } else {
      for (int k = 0; k < 4; ++k) buffer_.push_back(static_cast<unsigned char>(t >> (8 * k)));
    }
    ++total_;
    if (buffer_.size() >= (1 << 16)) flush();
  }

  void flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      fail(temp_, "write error");
    buffer_.clear();
  }

  void finish_shard() {
    flush();
    if (opt_.format == token_format::llmc) {
      const bool wide = opt_.dtype == token_dtype::u32;
      const std::int32_t head[3] = {wide ? llmc_header::magic_u32 : llmc_header::magic,
                                    wide ? llmc_header::version_u32 : llmc_header::version,
                                    static_cast<std::int32_t>(in_shard_)};
      if (std::fseek(file_, 0, SEEK_SET) != 0 || std::fwrite(head, sizeof(std::int32_t), 3, file_) != 3)
        fail(temp_, "write error");
    }
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) fail(temp_, "write error on close");
    std::error_code ec;
    std::filesystem::rename(temp_, final_, ec);
    if (ec) throw data_error("weft::shard_writer: '" + final_.string() + "': cannot rename (" + ec.message() + ").");
    files_.push_back(final_);
  }

  std::filesystem::path dir_;
  shard_writer_options opt_;
  std::FILE* file_ = nullptr;
  std::filesystem::path temp_, final_;
  std::uint64_t in_shard_ = 0, total_ = 0;
  std::vector<unsigned char> buffer_;  // little-endian token bytes not yet written
  std::vector<std::filesystem::path> files_;
  int uncaught_at_start_ = std::uncaught_exceptions();
};

}  // namespace weft
