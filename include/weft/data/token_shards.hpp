#pragma once
// ---- token_shards: a corpus of many memory-mapped token files ----
// A training corpus of GBs arrives as many shards (llm.c's `fineweb_train_000001.bin`, ...,
// nanoGPT's `train.bin`), each a `token_file`: nanoGPT raw or llm.c, uint16 or uint32 tokens,
// mixed freely. The shards are kept in the given (or, for a directory, sorted-name) order, so
// the sample stream built on them is the same on every machine. All checks happen in `open`,
// the token ids against a vocabulary when `shard_options::vocab_size` is given.
#include "weft/data/data_error.hpp"  // data_error
#include "weft/data/token_file.hpp"  // token_file, token_format, token_dtype
#include "weft/data/token_view.hpp"  // token_view

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace weft {

/// How `token_shards::open` reads each file (default: detect both the format and the width).
struct shard_options {
  token_format format = token_format::detect;
  token_dtype dtype = token_dtype::detect;
  /// Not 0: every token id of every shard is checked to be below it, in one pass at open; the
  /// first one that is not ends `open` with a data_error naming the shard, offset and id.
  std::size_t vocab_size = 0;
};

/// An ordered set of memory-mapped token files; move-only.
class token_shards {
 public:
  token_shards() = default;

  /// The files in the given order. Throws `data_error` for an empty list or any file that
  /// `token_file::open` refuses (the message names that file), a token id out of
  /// `options.vocab_size` included (the offset is within that shard).
  static token_shards open(std::span<const std::filesystem::path> files, shard_options options = {}) {
    if (files.empty()) throw data_error("weft::token_shards: no shard files given.");
    token_shards s;
    s.files_.reserve(files.size());
    s.offsets_.reserve(files.size() + 1);
    s.offsets_.push_back(0);
    for (const auto& p : files) {
      s.files_.push_back(token_file::open(p, options.format, options.dtype, options.vocab_size));
      s.offsets_.push_back(s.offsets_.back() + s.files_.back().size());
    }
    return s;
  }
  static token_shards open(std::initializer_list<std::filesystem::path> files, shard_options options = {}) {
    return open(std::span<const std::filesystem::path>(files.begin(), files.size()), options);
  }

  /// A single file, or every `*.bin` file of a directory (not recursive) whose name contains
  /// `name_contains` (e.g. "train" for llm.c's `*_train_*.bin`), sorted by name.
  static token_shards open(const std::filesystem::path& file_or_dir, shard_options options = {},
                           std::string_view name_contains = {}) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(file_or_dir, ec)) {
      const fs::path one[] = {file_or_dir};
      return open(std::span<const fs::path>(one), options);
    }
    const auto files = list(file_or_dir, name_contains);
    if (files.empty())
      throw data_error("weft::token_shards: '" + file_or_dir.string() + "': no *.bin files" +
                       (name_contains.empty() ? std::string() : " with '" + std::string(name_contains) + "' in the name") +
                       " in this directory.");
    return open(std::span<const fs::path>(files), options);
  }

  /// The `*.bin` files of `dir` whose name contains `name_contains`, sorted by name.
  static std::vector<std::filesystem::path> list(const std::filesystem::path& dir, std::string_view name_contains = {}) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && e.path().extension() == ".bin" && name.find(name_contains) != std::string::npos)
        files.push_back(e.path());
    }
    if (ec) throw data_error("weft::token_shards: '" + dir.string() + "': cannot list directory (" + ec.message() + ").");
    std::sort(files.begin(), files.end());  // directory order is not deterministic
    return files;
  }

  /// Number of shard files.
  std::size_t shard_count() const noexcept { return files_.size(); }
  /// Tokens in all shards.
  std::size_t size() const noexcept { return offsets_.empty() ? 0 : offsets_.back(); }
  bool empty() const noexcept { return size() == 0; }
  /// Shard `i` (its path, format, width, tokens).
  const token_file& shard(std::size_t i) const noexcept { return files_[i]; }
  /// The tokens of shard `i`, of either width.
  token_view view(std::size_t i) const noexcept { return files_[i].view(); }
  /// Index of the first token of shard `i` in the concatenation of all shards.
  std::size_t offset(std::size_t i) const noexcept { return offsets_[i]; }
  /// Bytes of all files, headers included.
  std::size_t file_bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& f : files_) n += f.file_bytes();
    return n;
  }

 private:
  std::vector<token_file> files_;
  std::vector<std::size_t> offsets_;  // (shards + 1) prefix sums of token counts
};

}  // namespace weft
