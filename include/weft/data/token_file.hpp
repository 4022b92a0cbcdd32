#pragma once
// ---- token_file: a read-only memory-mapped file of uint16 or uint32 tokens ----
// Two on-disk formats, both little-endian:
//   nanogpt  the `train.bin`/`val.bin` of nanoGPT: a flat array of tokens, no header. uint16,
//            or uint32 when opened with token_dtype::u32 or, under token_dtype::detect, when the
//            file name ends in ".u32.bin" (weft's convention: the raw format cannot say);
//   llmc     an llm.c shard: 256 x int32 header (magic, version, token count), then the tokens:
//            magic 20240520 version 1 = uint16 (GPT-2), magic 20240801 version 7 = uint32
//            (llm.c's LLaMA-3 shards).
// The file is mapped with POSIX mmap (PROT_READ, MAP_SHARED), so a many-GB corpus costs
// no load time and the page cache is shared by all ranks on a node. All checks happen in
// `open`; reading afterwards never throws. Given a vocabulary size, `open` also checks every
// token id against it, in one pass over the file (weft/data/vocabulary_check.hpp). The default dtype is u16, as before uint32 support:
// a uint32 file opened that way is refused with a message saying how to open it.
#include "weft/data/data_error.hpp"          // data_error
#include "weft/data/detail/mapped_file.hpp"  // mapped_file (POSIX mmap)
#include "weft/data/token_source.hpp"        // token_source
#include "weft/data/token_view.hpp"          // token_view
#include "weft/data/vocabulary_check.hpp"    // find_outside_vocabulary

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace weft {

/// Which layout `token_file::open` expects.
enum class token_format {
  detect,   ///< llm.c if the first int32 is an llm.c magic, nanoGPT raw otherwise
  nanogpt,  ///< flat little-endian tokens, no header
  llmc,     ///< llm.c shard: 256 x int32 header, then the tokens
};

/// Width of the stored tokens.
enum class token_dtype {
  detect,  ///< llm.c: from the header; nanogpt: uint32 if the name ends in ".u32.bin", else uint16
  u16,     ///< little-endian uint16 (vocabularies up to 65536, e.g. GPT-2); the default of `open`
  u32,     ///< little-endian uint32 (e.g. LLaMA-3's 128256); read as int32
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

/// Name of a token width as used in messages, docs and the tokenize_shards tool.
constexpr std::string_view to_string(token_dtype d) noexcept {
  switch (d) {
    case token_dtype::detect: return "detect";
    case token_dtype::u16: return "u16";
    case token_dtype::u32: return "u32";
  }
  return "?";
}

/// Constants of the llm.c shard header (llm.c `dev/data/data_common.py`).
struct llmc_header {
  static constexpr std::size_t ints = 256;                       ///< header length in int32
  static constexpr std::size_t bytes = ints * sizeof(std::int32_t);  ///< 1024
  static constexpr std::int32_t magic = 20240520;                ///< uint16 (GPT-2) shards
  static constexpr std::int32_t version = 1;                     ///< uint16 (GPT-2) tokens
  static constexpr std::int32_t magic_u32 = 20240801;            ///< uint32 (LLaMA-3) shards
  static constexpr std::int32_t version_u32 = 7;                 ///< uint32 (LLaMA-3) tokens
};

/// The suffix that marks a raw nanoGPT file of uint32 tokens under `token_dtype::detect`.
inline constexpr std::string_view nanogpt_u32_suffix = ".u32.bin";

/// A token file mapped into memory; move-only. Models `token_source` (for uint16 files; a
/// uint32 file is read through `view()` or `operator[]`).
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
  ~token_file() = default;

  /// Maps `path` and checks it against `format` and `dtype`. Throws `data_error` (one line
  /// naming the file) for: a missing/unreadable file, an empty file, a raw file whose size is
  /// not a multiple of the token width, an llm.c file with bad magic (format forced to llmc),
  /// an unsupported version, a token count that disagrees with the file size (truncated or
  /// trailing bytes), a width that disagrees with the one asked for, and, when `vocab_size` is
  /// not 0, a token id at or above `vocab_size` (see check_vocabulary).
  static token_file open(const std::filesystem::path& path, token_format format = token_format::detect,
                         token_dtype dtype = token_dtype::u16, std::size_t vocab_size = 0) {
    token_file f = open_unchecked(path, format, dtype);
    if (vocab_size > 0) f.check_vocabulary(vocab_size);
    return f;
  }

  /// The first token whose id is not below `vocab_size`, or none: one pass over all tokens.
  std::optional<token_outside> find_outside_vocabulary(std::size_t vocab_size) const noexcept {
    return wide_ ? weft::find_outside_vocabulary(tokens_u32(), vocab_size)
                 : weft::find_outside_vocabulary(std::span<const std::uint16_t>(static_cast<const std::uint16_t*>(data_), size_),
                                                 vocab_size);
  }
  /// Throws `data_error` naming the file, the token's offset (in tokens, after any header) and
  /// its id if any token id is not below `vocab_size`, e.g.
  ///   weft::token_file: 'train.bin': token 70123 at offset 81920 is outside the vocabulary (256 tokens: ids 0..255).
  void check_vocabulary(std::size_t vocab_size) const {
    if (const auto bad = find_outside_vocabulary(vocab_size))
      throw data_error(outside_vocabulary_message("weft::token_file", path_.string(), *bad, vocab_size));
  }

 private:
  static token_file open_unchecked(const std::filesystem::path& path, token_format format, token_dtype dtype) {
    token_file f;
    f.path_ = path;
    f.map();  // throws on missing / not regular / empty

    const auto* bytes = static_cast<const unsigned char*>(f.file_.data());
    const bool has_magic_word = f.file_.size() >= sizeof(std::int32_t);
    const std::int32_t first = has_magic_word ? read_i32(bytes) : 0;
    if (format == token_format::detect) {
      format = token_format::nanogpt;
      if (has_magic_word && (first == llmc_header::magic || first == llmc_header::magic_u32)) format = token_format::llmc;
    }
    f.format_ = format;

    if (format == token_format::nanogpt) {
      const bool u32_name = path.filename().string().ends_with(nanogpt_u32_suffix);
      if (dtype == token_dtype::detect) dtype = u32_name ? token_dtype::u32 : token_dtype::u16;
      if (dtype == token_dtype::u16 && u32_name)
        f.fail("the name says uint32 tokens ('" + std::string(nanogpt_u32_suffix) +
               "') but uint16 was asked for; open it with token_dtype::u32 or token_dtype::detect");
      const std::size_t width = dtype == token_dtype::u32 ? 4 : 2;
      if (f.file_.size() % width != 0) {
        if (width == 2)
          f.fail("odd size " + std::to_string(f.file_.size()) +
                 " bytes for a raw uint16 token file (nanogpt format needs a multiple of 2)");
        f.fail("size " + std::to_string(f.file_.size()) +
               " bytes is not a multiple of 4 for a raw uint32 token file (nanogpt format)");
      }
      f.set_tokens(bytes, f.file_.size() / width, width == 4);
      return f;
    }

    // ---- llm.c shard ----
    const bool u32_magic = has_magic_word && first == llmc_header::magic_u32;
    if (!has_magic_word || (first != llmc_header::magic && !(u32_magic && dtype != token_dtype::u16))) {
      const std::string got = has_magic_word ? std::to_string(first) : std::string("none (file too short)");
      std::string hint = "; is this a raw nanogpt .bin? open it with token_format::nanogpt)";
      if (u32_magic)
        hint = " for uint16 tokens; " + std::to_string(llmc_header::magic_u32) +
               " is llm.c's uint32 shard: open it with token_dtype::u32 or token_dtype::detect)";
      f.fail("bad magic " + got + " (expected llm.c magic " + std::to_string(llmc_header::magic) + hint);
    }
    if (f.file_.size() < llmc_header::bytes)
      f.fail("truncated: " + std::to_string(f.file_.size()) + " bytes, smaller than the " +
             std::to_string(llmc_header::bytes) + "-byte llm.c header");
    const std::int32_t version = read_i32(bytes + 1 * sizeof(std::int32_t));
    if (!u32_magic && version != llmc_header::version)
      f.fail("unsupported llm.c version " + std::to_string(version) + " (only version " +
             std::to_string(llmc_header::version) + ", uint16 tokens, is supported)");
    if (u32_magic && version != llmc_header::version_u32)
      f.fail("unsupported llm.c version " + std::to_string(version) + " with magic " +
             std::to_string(llmc_header::magic_u32) + " (only version " + std::to_string(llmc_header::version_u32) +
             ", uint32 tokens, is supported)");
    if (!u32_magic && dtype == token_dtype::u32)
      f.fail("llm.c header says uint16 tokens (magic " + std::to_string(llmc_header::magic) +
             ") but uint32 was asked for; open it with token_dtype::u16 or token_dtype::detect");
    const std::size_t width = u32_magic ? 4 : 2;
    const std::int32_t ntok = read_i32(bytes + 2 * sizeof(std::int32_t));
    if (ntok <= 0)
      f.fail("llm.c header says " + std::to_string(ntok) + " tokens (expected at least 1)");
    const std::size_t expected = llmc_header::bytes + static_cast<std::size_t>(ntok) * width;
    if (f.file_.size() < expected)
      f.fail("truncated: header says " + std::to_string(ntok) + " tokens (" + std::to_string(expected) +
             " bytes with header) but the file has " + std::to_string(f.file_.size()) + " bytes");
    if (f.file_.size() > expected)
      f.fail("size mismatch: header says " + std::to_string(ntok) + " tokens (" + std::to_string(expected) +
             " bytes with header) but the file has " + std::to_string(f.file_.size()) + " bytes");
    f.set_tokens(bytes + llmc_header::bytes, static_cast<std::size_t>(ntok), width == 4);
    return f;
  }

 public:
  // ---- reading ----
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::int32_t operator[](std::size_t i) const noexcept {
    return wide_ ? static_cast<std::int32_t>(static_cast<const std::uint32_t*>(data_)[i])
                 : static_cast<std::int32_t>(static_cast<const std::uint16_t*>(data_)[i]);
  }
  /// The uint16 tokens as stored, without the header (token_source). Empty for a uint32 file:
  /// read those through `view()` or `tokens_u32()`.
  std::span<const std::uint16_t> tokens() const noexcept {
    assert(!wide_ && "weft::token_file::tokens: a uint32 file; use view() or tokens_u32()");
    if (wide_) return {};
    return {static_cast<const std::uint16_t*>(data_), size_};
  }
  /// The uint32 tokens as stored; empty for a uint16 file.
  std::span<const std::uint32_t> tokens_u32() const noexcept {
    if (!wide_) return {};
    return {static_cast<const std::uint32_t*>(data_), size_};
  }
  /// The tokens of either width as a `token_view` (uint32 read as int32: ids below 2^31).
  token_view view() const noexcept {
    if (!wide_) return token_view(std::span<const std::uint16_t>(static_cast<const std::uint16_t*>(data_), size_));
    // uint32 and int32 may alias each other (corresponding unsigned/signed types).
    return token_view(std::span<const std::int32_t>(static_cast<const std::int32_t*>(data_), size_));
  }

  const std::filesystem::path& path() const noexcept { return path_; }
  /// The format found (never `detect` once opened).
  token_format format() const noexcept { return format_; }
  /// The token width found (never `detect` once opened).
  token_dtype dtype() const noexcept { return wide_ ? token_dtype::u32 : token_dtype::u16; }
  /// Size of the whole file in bytes, header included.
  std::size_t file_bytes() const noexcept { return file_.size(); }

  void swap(token_file& o) noexcept {
    std::swap(path_, o.path_);
    file_.swap(o.file_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(wide_, o.wide_);
    std::swap(format_, o.format_);
  }

 private:
  static std::int32_t read_i32(const unsigned char* p) noexcept {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);  // little-endian host (static_assert above)
    return v;
  }

  void set_tokens(const unsigned char* p, std::size_t n, bool wide) noexcept {
    data_ = p;
    size_ = n;
    wide_ = wide;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw data_error("weft::token_file: '" + path_.string() + "': " + problem + ".");
  }
  // Maps the whole file read-only (detail::mapped_file); the messages name the failed step.
  void map() {
    const auto failure = file_.map(path_);
    if (!failure) return;
    const std::string why = std::strerror(failure->err);
    switch (failure->step) {
      case detail::map_step::open: fail("cannot open file (" + why + ")");
      case detail::map_step::stat: fail("cannot stat file (" + why + ")");
      case detail::map_step::not_regular: fail("not a regular file");
      case detail::map_step::too_small: fail("file is empty");
      case detail::map_step::mmap: fail("cannot mmap file (" + why + ")");
    }
  }

  std::filesystem::path path_;
  detail::mapped_file file_;
  const void* data_ = nullptr;  // (tokens) inside the mapping, after any header: uint16 or uint32
  std::size_t size_ = 0;
  bool wide_ = false;            // uint32 tokens
  token_format format_ = token_format::detect;
};

static_assert(token_source<token_file>);

}  // namespace weft
