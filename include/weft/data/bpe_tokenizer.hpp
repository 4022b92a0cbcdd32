#pragma once
// ---- bpe_tokenizer: GPT-2's byte-level BPE from a vocab.json + merges.txt pair ----
// The files of GPT-2 (OpenAI's encoder.json + vocab.bpe, Hugging Face's vocab.json +
// merges.txt: the same contents) or of any byte-level BPE trained the same way (Hugging Face's
// ByteLevelBPETokenizer). Encoding = GPT-2's pre-tokenization (gpt2_pretokenizer) and, inside
// each piece, BPE over its UTF-8 bytes: repeatedly merge the adjacent pair of lowest merge rank
// (the leftmost if it occurs twice) until no pair has a rank. This is tiktoken's
// `encode_ordinary`: special tokens such as "<|endoftext|>" are never produced from text; add
// them by id (`token_id`). Decoding concatenates the tokens' bytes.
//
// Vocabulary strings are written in GPT-2's byte-to-unicode alphabet (byte 0x20 ' ' is 'Ġ'
// U+0120, ...): `byte_to_unicode` gives the map. An entry that is not in that alphabet (an
// added special token) decodes to its own UTF-8 text. Loading throws `data_error`, one line.
#include "weft/data/detail/vocab_json.hpp"  // vocab_json_reader (nlohmann-json)
#include "weft/data/gpt2_pretokenizer.hpp"  // gpt2_pretokenizer
#include "weft/data/data_error.hpp"        // data_error
#include "weft/data/splitmix64.hpp"        // splitmix64::mix64 (hash of a token pair)

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weft {

namespace detail {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
// themselves, the other 68 to U+0100.. in byte order, so every byte is a visible character.
struct byte_unicode_map {
  std::array<std::uint32_t, 256> to_cp{};
  std::array<std::int16_t, 324> to_byte{};  // code point (< 324) -> byte, or -1
  constexpr byte_unicode_map() {
    for (auto& b : to_byte) b = -1;
    std::uint32_t extra = 0;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? b : 256 + extra++;
      to_byte[to_cp[b]] = static_cast<std::int16_t>(b);
    }
  }
};
inline constexpr byte_unicode_map byte_unicode{};

// Open-addressing hash map of a token pair (a, b) -> (merge rank, merged token).
class merge_table {
 public:
  struct entry {
    std::uint64_t key = empty_key;
    std::uint32_t rank = 0;
    std::int32_t merged = 0;
  };
  static constexpr std::uint64_t empty_key = ~std::uint64_t{0};

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, entry{});
    mask_ = cap - 1;
  }
  static std::uint64_t key(std::int32_t a, std::int32_t b) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }
  // Inserts unless present; returns false if the pair was already there.
  bool insert(std::int32_t a, std::int32_t b, std::uint32_t rank, std::int32_t merged) {
    const std::uint64_t k = key(a, b);
    for (std::size_t i = splitmix64::mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return false;
      if (slots_[i].key == empty_key) {
        slots_[i] = {k, rank, merged};
        return true;
      }
    }
  }
  const entry* find(std::int32_t a, std::int32_t b) const noexcept {
    const std::uint64_t k = key(a, b);
    for (std::size_t i = splitmix64::mix64(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i];
      if (slots_[i].key == empty_key) return nullptr;
    }
  }

 private:
  std::vector<entry> slots_;
  std::size_t mask_ = 0;
};

inline std::string read_whole_file(const std::filesystem::path& p, const char* what) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) throw data_error("weft::bpe_tokenizer: '" + p.string() + "': cannot open the " + what + " file.");
  std::string s;
  char buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) throw data_error("weft::bpe_tokenizer: '" + p.string() + "': read error in the " + what + " file.");
  return s;
}

}  // namespace detail

/// Byte-level BPE (GPT-2's algorithm); see the top of the file. Immutable after loading, so
/// one tokenizer may encode on several threads at once.
class bpe_tokenizer {
 public:
  /// What `decode` writes for an id outside the vocabulary: U+FFFD in UTF-8.
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";

  /// Loads `vocab_json` (string -> id) and `merges_txt` (one "left right" pair per line, in
  /// rank order; a first line starting with "#version" is skipped).
  static bpe_tokenizer load(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
    const std::string vocab = detail::read_whole_file(vocab_json, "vocabulary");  // first: errors in file order
    const std::string merges = detail::read_whole_file(merges_txt, "merges");
    return from_text(vocab, merges, vocab_json.string(), merges_txt.string());
  }

  /// The same from the files' contents; the names appear in error messages.
  static bpe_tokenizer from_text(std::string_view vocab_json, std::string_view merges_txt,
                                 const std::string& vocab_name = "vocab.json",
                                 const std::string& merges_name = "merges.txt") {
    bpe_tokenizer t;
    t.load_vocab(detail::vocab_json_reader(vocab_json, vocab_name).read(), vocab_name);
    t.load_merges(merges_txt, merges_name);
    return t;
  }

  /// One more than the largest id (50257 for GPT-2).
  std::size_t vocab_size() const noexcept { return id_bytes_.size(); }
  /// Number of merges (50000 for GPT-2).
  std::size_t merge_count() const noexcept { return merges_; }

  /// Id of a vocabulary entry written as in vocab.json (e.g. "<|endoftext|>", "Ġthe").
  std::optional<std::int32_t> token_id(std::string_view vocab_string) const {
    const auto it = ids_.find(std::string(vocab_string));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }

  /// Appends the tokens of `text` (tiktoken's encode_ordinary).
  void encode_into(std::string_view text, std::vector<std::int32_t>& out) const {
    gpt2_pretokenizer::split(text, [&](std::string_view piece) { encode_piece(piece, out); });
  }
  std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> out;
    out.reserve(text.size() / 3 + 1);
    encode_into(text, out);
    return out;
  }

  /// Appends the bytes of `tokens`; an unknown id is written as U+FFFD.
  void decode_into(std::span<const std::int32_t> tokens, std::string& out) const {
    for (const std::int32_t t : tokens) {
      if (t >= 0 && static_cast<std::size_t>(t) < id_bytes_.size() && has_id_[static_cast<std::size_t>(t)])
        out.append(id_bytes_[static_cast<std::size_t>(t)]);
      else
        out.append(replacement);
    }
  }
  std::string decode(std::span<const std::int32_t> tokens) const {
    std::string out;
    decode_into(tokens, out);
    return out;
  }

  /// The bytes a token stands for (empty for an unknown id).
  std::string_view token_bytes(std::int32_t id) const noexcept {
    if (id < 0 || static_cast<std::size_t>(id) >= id_bytes_.size()) return {};
    return id_bytes_[static_cast<std::size_t>(id)];
  }

  /// GPT-2's visible stand-in for `byte` (e.g. U+0120 'Ġ' for ' ').
  static constexpr std::uint32_t byte_to_unicode(unsigned char byte) noexcept { return detail::byte_unicode.to_cp[byte]; }

 private:
  static constexpr std::uint32_t no_rank = std::numeric_limits<std::uint32_t>::max();

  [[noreturn]] static void fail(const std::string& file, const std::string& what) {
    throw data_error("weft::bpe_tokenizer: '" + file + "': " + what + ".");
  }

  // Vocabulary string (GPT-2's alphabet, UTF-8) -> the bytes it stands for; nullopt if a
  // character is outside the alphabet (a special token).
  static std::optional<std::string> to_bytes(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      const auto b0 = static_cast<unsigned char>(s[i]);
      std::uint32_t cp;
      std::size_t len;
      if (b0 < 0x80) {
        cp = b0;
        len = 1;
      } else if ((b0 & 0xE0) == 0xC0 && i + 1 < s.size()) {
        cp = (static_cast<std::uint32_t>(b0 & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
        len = 2;
      } else {
        return std::nullopt;  // three-byte characters and beyond are outside the alphabet (< U+0144)
      }
      if (cp >= detail::byte_unicode.to_byte.size() || detail::byte_unicode.to_byte[cp] < 0) return std::nullopt;
      out.push_back(static_cast<char>(detail::byte_unicode.to_byte[cp]));
      i += len;
    }
    return out;
  }

  void load_vocab(const std::vector<std::pair<std::string, std::int64_t>>& entries, const std::string& file) {
    if (entries.empty()) fail(file, "the vocabulary is empty");
    std::int64_t max_id = 0;
    for (const auto& [s, id] : entries) max_id = std::max(max_id, id);
    if (max_id >= (std::int64_t{1} << 31)) fail(file, "token id " + std::to_string(max_id) + " does not fit in int32");
    id_bytes_.assign(static_cast<std::size_t>(max_id) + 1, std::string());
    has_id_.assign(id_bytes_.size(), false);
    byte_id_.fill(-1);
    ids_.reserve(entries.size());
    for (const auto& [s, id64] : entries) {
      const auto id = static_cast<std::int32_t>(id64);
      if (has_id_[static_cast<std::size_t>(id)])
        fail(file, "token id " + std::to_string(id) + " appears twice (\"" + s + "\")");
      if (!ids_.emplace(s, id).second) fail(file, "token \"" + s + "\" appears twice");
      has_id_[static_cast<std::size_t>(id)] = true;
      const auto bytes = to_bytes(s);
      id_bytes_[static_cast<std::size_t>(id)] = bytes ? *bytes : s;  // a special token decodes to itself
      if (bytes && bytes->size() == 1) byte_id_[static_cast<unsigned char>((*bytes)[0])] = id;
    }
    for (int b = 0; b < 256; ++b)
      if (byte_id_[static_cast<std::size_t>(b)] < 0)
        fail(file, "no token for byte " + std::to_string(b) +
                       " (a byte-level BPE vocabulary has all 256 single bytes, written with GPT-2's byte-to-unicode map)");
  }

  void load_merges(std::string_view text, const std::string& file) {
    std::vector<std::pair<std::string_view, std::size_t>> lines;  // (line, line number)
    std::size_t number = 0;
    for (std::size_t i = 0; i < text.size();) {
      std::size_t e = text.find('\n', i);
      if (e == std::string_view::npos) e = text.size();
      std::string_view line = text.substr(i, e - i);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++number;
      i = e + 1;
      if (line.empty() || (number == 1 && line.starts_with("#version"))) continue;
      lines.emplace_back(line, number);
    }
    table_.reserve(lines.size());
    std::uint32_t rank = 0;
    for (const auto& [line, no] : lines) {
      const std::size_t sp = line.find(' ');
      if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() || line.find(' ', sp + 1) != std::string_view::npos)
        fail(file, "line " + std::to_string(no) + " is not two tokens separated by one space: \"" + std::string(line) + "\"");
      const std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
      const auto a = ids_.find(left), b = ids_.find(right), m = ids_.find(left + right);
      if (a == ids_.end() || b == ids_.end() || m == ids_.end())
        fail(file, "line " + std::to_string(no) + ": \"" + (a == ids_.end() ? left : b == ids_.end() ? right : left + right) +
                       "\" is not in the vocabulary");
      // A repeated pair keeps its first (lowest) rank, as every BPE implementation does.
      table_.insert(a->second, b->second, rank++, m->second);
    }
    merges_ = lines.size();
  }

  std::uint32_t rank_of(std::int32_t a, std::int32_t b) const noexcept {
    const auto* e = table_.find(a, b);
    return e ? e->rank : no_rank;
  }

  // BPE inside one piece: parts[] are the current tokens, ranks[i] the rank of (parts[i],
  // parts[i+1]). Merge the leftmost lowest rank, refresh the two neighbouring ranks, repeat.
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
    const std::size_t n = piece.size();
    if (n == 1) {
      out.push_back(byte_id_[static_cast<unsigned char>(piece[0])]);
      return;
    }
    constexpr std::size_t small = 64;
    std::array<std::int32_t, small> parts_s;
    std::array<std::uint32_t, small> ranks_s;
    std::vector<std::int32_t> parts_v;
    std::vector<std::uint32_t> ranks_v;
    std::int32_t* parts = parts_s.data();
    std::uint32_t* ranks = ranks_s.data();
    if (n > small) {  // long pieces (runs of spaces, digits, letters): heap scratch
      parts_v.resize(n);
      ranks_v.resize(n);
      parts = parts_v.data();
      ranks = ranks_v.data();
    }
    for (std::size_t i = 0; i < n; ++i) parts[i] = byte_id_[static_cast<unsigned char>(piece[i])];
    std::size_t m = n;
    for (std::size_t i = 0; i + 1 < m; ++i) ranks[i] = rank_of(parts[i], parts[i + 1]);
    for (;;) {
      std::uint32_t best = no_rank;
      std::size_t at = 0;
      for (std::size_t i = 0; i + 1 < m; ++i)
        if (ranks[i] < best) {
          best = ranks[i];
          at = i;
        }
      if (best == no_rank) break;
      parts[at] = table_.find(parts[at], parts[at + 1])->merged;
      for (std::size_t i = at + 1; i + 1 < m; ++i) parts[i] = parts[i + 1];
      for (std::size_t i = at + 1; i + 2 < m; ++i) ranks[i] = ranks[i + 1];
      --m;
      if (at > 0) ranks[at - 1] = rank_of(parts[at - 1], parts[at]);
      if (at + 1 < m) ranks[at] = rank_of(parts[at], parts[at + 1]);
    }
    out.insert(out.end(), parts, parts + m);
  }

  std::vector<std::string> id_bytes_;  // (vocab) the bytes of each id
  std::vector<bool> has_id_;           // (vocab) whether the id is in vocab.json
  std::array<std::int32_t, 256> byte_id_{};
  std::unordered_map<std::string, std::int32_t> ids_;  // vocab string -> id
  detail::merge_table table_;
  std::size_t merges_ = 0;
};

}  // namespace weft
