#pragma once
// ---- text_corpus: text files tokenised into memory ----
// Reads one or several text files (e.g. the fortune(6) files under /usr/share/games/fortunes)
// in 64 KiB chunks and tokenises them on the fly with `byte_tokenizer` into a
// `token_buffer`. Bytes are taken as they are: the text is expected to be UTF-8 but is not
// validated (the byte tokenizer round-trips anything). Load time only: may allocate and throw.
#include "weft/data/data_error.hpp"    // data_error
#include "weft/data/token_buffer.hpp"  // token_buffer
#include "weft/data/token_source.hpp"  // token_source
#include "weft/data/tokenizer.hpp"     // byte_tokenizer
#include "weft/data/vocabulary_check.hpp"  // find_outside_vocabulary

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace weft {

/// How `text_corpus` joins and cleans its files.
struct text_options {
  /// fortune(6) files separate records by a line holding only "%". When true, each such
  /// line (with "\n" or "\r\n") is replaced by `record_separator`.
  bool fortune_records = false;
  /// What replaces a "%" line; the default "\n" leaves a blank line between records.
  std::string record_separator = "\n";
  /// Inserted between two consecutive files (not before the first or after the last).
  std::string file_separator{};
};

/// A token_buffer filled from text files; models `token_source`.
class text_corpus {
 public:
  /// Where one file's tokens lie in the corpus.
  struct file_entry {
    std::filesystem::path path;
    std::size_t offset = 0;  ///< first token of the file
    std::size_t count = 0;   ///< tokens of the file (after separator replacement)
  };

  text_corpus() = default;
  explicit text_corpus(text_options options) : options_(std::move(options)) {}

  /// One file. Throws `data_error` if it cannot be read.
  static text_corpus load(const std::filesystem::path& path, text_options options = {}) {
    text_corpus c(std::move(options));
    c.add_file(path);
    return c;
  }

  /// Several files, concatenated in the given order.
  static text_corpus load(std::span<const std::filesystem::path> paths, text_options options = {}) {
    text_corpus c(std::move(options));
    for (const auto& p : paths) c.add_file(p);
    return c;
  }
  static text_corpus load(std::initializer_list<std::filesystem::path> paths, text_options options = {}) {
    return load(std::span<const std::filesystem::path>(paths.begin(), paths.size()), std::move(options));
  }

  /// Appends a file (with `file_separator` before it unless it is the first).
  void add_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a text file");
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) fail(path, std::string("cannot open file (") + std::strerror(errno) + ")");
    const auto guess = std::filesystem::file_size(path, ec);
    if (!ec) tokens_.reserve(tokens_.size() + static_cast<std::size_t>(guess) + options_.file_separator.size());

    begin_file();
    const std::size_t offset = tokens_.size();
    std::vector<char> chunk(std::size_t{1} << 16);
    std::size_t got = 0;
    while ((got = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) feed(std::string_view(chunk.data(), got));
    const bool failed = std::ferror(f) != 0;
    const int err = errno;
    std::fclose(f);
    if (failed) fail(path, std::string("read error (") + std::strerror(err) + ")");
    end_file();
    files_.push_back({path, offset, tokens_.size() - offset});
  }

  /// Appends text given in memory, treated like the contents of one more file.
  void add_text(std::string_view text, std::filesystem::path name = "<text>") {
    begin_file();
    const std::size_t offset = tokens_.size();
    feed(text);
    end_file();
    files_.push_back({std::move(name), offset, tokens_.size() - offset});
  }

  // ---- reading (token_source) ----
  std::size_t size() const noexcept { return tokens_.size(); }
  bool empty() const noexcept { return tokens_.empty(); }
  std::int32_t operator[](std::size_t i) const noexcept { return tokens_[i]; }
  std::span<const std::int32_t> tokens() const noexcept { return tokens_.tokens(); }

  /// Throws `data_error` if a token id is not below `vocab_size` (byte-level text has ids
  /// 0..255, so only a model with fewer than 256 tokens can fail): one line naming the file the
  /// token came from, its offset in that file's tokens and its id.
  void check_vocabulary(std::size_t vocab_size) const {
    const auto bad = find_outside_vocabulary(tokens_.tokens(), vocab_size);
    if (!bad) return;
    std::string file = "<separator>";  // a file_separator / record_separator between files
    token_outside where = *bad;
    for (const auto& f : files_)
      if (bad->offset >= f.offset && bad->offset < f.offset + f.count) {
        file = f.path.string();
        where.offset = bad->offset - f.offset;
      }
    throw data_error(outside_vocabulary_message("weft::text_corpus", file, where, vocab_size));
  }

  const token_buffer& buffer() const noexcept { return tokens_; }
  std::span<const file_entry> files() const noexcept { return files_; }
  const text_options& options() const noexcept { return options_; }
  static constexpr std::int32_t vocab_size = byte_tokenizer::vocab_size;

 private:
  [[noreturn]] static void fail(const std::filesystem::path& path, const std::string& problem) {
    throw data_error("weft::text_corpus: '" + path.string() + "': " + problem + ".");
  }

  void emit(std::string_view bytes) { byte_tokenizer::encode_into(bytes, tokens_.storage()); }

  void begin_file() {
    if (!files_.empty()) emit(options_.file_separator);
    line_start_ = true;
    held_ = 0;
  }

  // A "%" line at the very end of a file (no newline after it) is a separator too.
  void end_file() {
    if (held_ > 0) emit(options_.record_separator);
    held_ = 0;
  }

  // Streams bytes through a small state machine that recognises whole lines "%" / "%\r"
  // across chunk boundaries: held_ counts the bytes of "%\r" seen at the start of a line.
  void feed(std::string_view text) {
    auto& out = tokens_.storage();
    for (char ch : text) {
      if (held_ > 0) {
        if (ch == '\n') {  // the line was exactly "%" or "%\r"
          emit(options_.record_separator);
          held_ = 0;
          line_start_ = true;
          continue;
        }
        if (ch == '\r' && held_ == 1) {
          held_ = 2;
          continue;
        }
        emit(std::string_view("%\r", held_));  // not a separator line after all
        held_ = 0;
      }
      if (options_.fortune_records && line_start_ && ch == '%') {
        held_ = 1;
        line_start_ = false;
        continue;
      }
      out.push_back(byte_tokenizer::encode(ch));
      line_start_ = (ch == '\n');
    }
  }

  text_options options_;
  token_buffer tokens_;
  std::vector<file_entry> files_;
  bool line_start_ = true;
  std::size_t held_ = 0;  // 0, 1 ("%") or 2 ("%\r")
};

static_assert(token_source<text_corpus>);

}  // namespace weft
