#pragma once
// ---- corpus: the one loader of a training corpus, by path ----
// Every example and tool opens its data through this: a token file (nanoGPT .bin or llm.c shard,
// memory-mapped), a text file, a directory of text files (sorted, concatenated), or, with an empty
// path, the fortune(6) corpus of Debian's `fortunes` package (the demo's default). "{rank}" in the
// path is replaced by the given rank, so each process of a job can read its own file. Given the
// model's vocabulary size, `open` checks every token id of the whole corpus against it (one pass;
// weft/data/vocabulary_check.hpp): a model must never index past its embedding table.
#include "weft/data/data_error.hpp"   // data_error
#include "weft/data/text_corpus.hpp"  // text_corpus, text_options
#include "weft/data/token_file.hpp"   // token_file
#include "weft/data/token_view.hpp"   // token_view

#include <algorithm>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace weft {

/// A loaded corpus: a memory-mapped token file or tokenized text. Move-only (owns the mapping).
class corpus {
 public:
  /// Where Debian's fortune(6) texts live (the default corpus).
  static constexpr const char* fortune_dir = "/usr/share/games/fortunes";

  /// Opens `path` (see the top of this file); `who` names the program in error messages.
  /// Throws data_error with one line naming the path and the fix. With `vocab_size` not 0,
  /// also a token id at or above it (the message names the file, the token's offset and id).
  /// A .bin file is a nanoGPT or llm.c token file of uint16 or uint32 tokens (detected:
  /// token_format::detect, token_dtype::detect).
  static corpus open(std::string path, const std::string& who = "weft", int rank = 0, std::size_t vocab_size = 0) {
    corpus c = open_unchecked(std::move(path), who, rank);
    if (vocab_size > 0) c.check_vocabulary(vocab_size);
    return c;
  }

  /// Throws data_error (one line: file, offset, id) if a token id is not below `vocab_size`.
  void check_vocabulary(std::size_t vocab_size) const {
    if (file_) file_->check_vocabulary(vocab_size);
    if (text_) text_->check_vocabulary(vocab_size);
  }

  /// All tokens, whatever the source.
  token_view all() const { return file_ ? file_->view() : token_view(*text_); }
  /// Whether the corpus is a token file (else: tokenized text, byte-level).
  bool is_token_file() const { return file_.has_value(); }
  const token_file* file() const { return file_ ? &*file_ : nullptr; }
  const text_corpus* text() const { return text_ ? &*text_ : nullptr; }

 private:
  static corpus open_unchecked(std::string path, const std::string& who, int rank) {
    namespace fs = std::filesystem;
    if (const auto at = path.find("{rank}"); at != std::string::npos) path.replace(at, 6, std::to_string(rank));
    corpus c;
    std::vector<fs::path> files;
    text_options topt;
    if (path.empty()) {
      // Every fortune(6) text file (not the .dat indexes or the .u8 links).
      if (!fs::is_directory(fortune_dir))
        throw data_error(who + ": the default corpus " + std::string(fortune_dir) +
                         " is missing; install Debian's fortunes package (bash run.sh demo does) or pass --data");
      for (const auto& e : fs::directory_iterator(fortune_dir))
        if (e.is_regular_file() && !e.is_symlink() && e.path().extension().empty()) files.push_back(e.path());
      topt.fortune_records = true;
    } else if (fs::is_directory(path)) {
      for (const auto& e : fs::directory_iterator(path))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::path(path).extension() == ".bin") {
      c.file_.emplace(token_file::open(path, token_format::detect, token_dtype::detect));
      return c;
    } else {
      files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw data_error(who + ": no text files found in " + (path.empty() ? fortune_dir : path));
    c.text_.emplace(text_corpus::load(std::span<const fs::path>(files), topt));
    return c;
  }

  std::optional<token_file> file_;
  std::optional<text_corpus> text_;
};

}  // namespace weft
