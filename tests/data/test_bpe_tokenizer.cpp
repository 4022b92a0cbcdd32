// Tests of gpt2_pretokenizer and bpe_tokenizer on a small hand-made vocabulary. Expected pieces
// and ids are worked out by hand from GPT-2's rules (tests/data/bpe_crosscheck.py compares with
// tiktoken on GPT-2's real files and several MB of text).
#include "weft/data/bpe_tokenizer.hpp"
#include "weft/data/gpt2_pretokenizer.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace weft;

namespace {

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  gpt2_pretokenizer::split(text, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

// GPT-2's bytes_to_unicode, written out independently of the library: the visible character
// (as UTF-8) that stands for byte b in vocab.json and merges.txt.
std::string visible(unsigned b) {
  unsigned cp = b;
  if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
    unsigned n = 0;
    for (unsigned x = 0; x < b; ++x)
      if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Ids 0..255 = the bytes; then he=256 ll=257 hell=258 hello=259 Ġw=260 or=261 Ġwor=262, and
// <|endoftext|>=263.
const char* const merges_txt =
    "#version: 0.2\n"
    "h e\n"
    "l l\n"
    "he ll\n"
    "hell o\n"
    "\xC4\xA0 w\n"  // "Ġ w"
    "o r\n"
    "\xC4\xA0w or\n";

std::string vocab_json() {
  std::string v = "{";
  for (unsigned b = 0; b < 256; ++b) v += json_string(visible(b)) + ": " + std::to_string(b) + ", ";
  v += "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\\u0120w\": 260, \"or\": 261, \"\\u0120wor\": 262, ";
  v += "\"<|endoftext|>\": 263}";
  return v;
}

bpe_tokenizer small() { return bpe_tokenizer::from_text(vocab_json(), merges_txt); }

std::string load_error(const std::string& vocab, const std::string& merges) {
  try {
    (void)bpe_tokenizer::from_text(vocab, merges, "v.json", "m.txt");
  } catch (const data_error& e) {
    return e.what();
  }
  return "";
}

using ids = std::vector<std::int32_t>;

}  // namespace

TEST_CASE("gpt2_pretokenizer: GPT-2's pieces", "[data][bpe]") {
  using v = std::vector<std::string>;
  REQUIRE(pieces("Hello world") == v{"Hello", " world"});
  REQUIRE(pieces("I'm here") == v{"I", "'m", " here"});
  REQUIRE(pieces("don't") == v{"don", "'t"});
  REQUIRE(pieces("DON'T") == v{"DON", "'", "T"});  // contractions are lower case only
  REQUIRE(pieces("'s'") == v{"'s", "'"});
  REQUIRE(pieces("'ll've're'd") == v{"'ll", "'ve", "'re", "'d"});
  REQUIRE(pieces("'sa") == v{"'s", "a"});            // the first alternative wins, not the longest
  REQUIRE(pieces("?'s") == v{"?'", "s"});            // inside a run of punctuation it is punctuation
  REQUIRE(pieces("a  b") == v{"a", " ", " b"});      // a space run gives its last space to the word
  REQUIRE(pieces("a   \n\nb") == v{"a", "   \n", "\n", "b"});
  REQUIRE(pieces("x  ") == v{"x", "  "});            // a run at the end stays whole
  REQUIRE(pieces("\tx") == v{"\t", "x"});            // only ' ' prefixes a word
  REQUIRE(pieces("123abc 45") == v{"123", "abc", " 45"});
  REQUIRE(pieces("!!!? !!") == v{"!!!?", " !!"});
  REQUIRE(pieces("\xC3\xA9\xE6\xBC\xA2\xE5\xAD\x97 \xD0\xBC\xD0\xB8\xD1\x80") ==
          v{"\xC3\xA9\xE6\xBC\xA2\xE5\xAD\x97", " \xD0\xBC\xD0\xB8\xD1\x80"});  // "é漢字 мир": letters
  REQUIRE(pieces("\xD9\xA3" "4") == v{"\xD9\xA3" "4"});                           // "٣4": numbers
  REQUIRE(pieces("a\xC2\xA0" "b") == v{"a", "\xC2\xA0", "b"});                    // NBSP is space, not ' '
  REQUIRE(pieces("\xFF\xFE" "ab") == v{"\xFF\xFE", "ab"});                        // invalid UTF-8: "other"
  REQUIRE(pieces("") == v{});
}

TEST_CASE("bpe_tokenizer: the byte-to-unicode alphabet", "[data][bpe]") {
  REQUIRE(bpe_tokenizer::byte_to_unicode(' ') == 0x120);   // 'Ġ'
  REQUIRE(bpe_tokenizer::byte_to_unicode('\n') == 0x10A);  // 'Ċ'
  REQUIRE(bpe_tokenizer::byte_to_unicode(0) == 0x100);
  REQUIRE(bpe_tokenizer::byte_to_unicode(0xAD) == 0x143);  // the last of the 68 remapped bytes
  REQUIRE(bpe_tokenizer::byte_to_unicode('A') == 'A');
  REQUIRE(bpe_tokenizer::byte_to_unicode(0xE9) == 0xE9);
}

TEST_CASE("bpe_tokenizer: merges by rank, leftmost first", "[data][bpe]") {
  const auto t = small();
  REQUIRE(t.vocab_size() == 264);
  REQUIRE(t.merge_count() == 7);
  REQUIRE(t.encode("hello") == ids{259});
  REQUIRE(t.encode(" world") == ids{262, 'l', 'd'});
  REQUIRE(t.encode("hellohello") == ids{259, 259});
  REQUIRE(t.encode("lll") == ids{257, 'l'});  // the leftmost pair of equal rank merges first
  REQUIRE(t.encode("hello world") == ids{259, 262, 'l', 'd'});
  REQUIRE(t.encode("he llo") == ids{256, ' ', 257, 'o'});  // " llo" has no Ġl merge
  REQUIRE(t.encode("") == ids{});
  // Special tokens are text to encode_ordinary; their id is looked up.
  REQUIRE(t.encode("<|endoftext|>").size() > 1);
  REQUIRE(t.token_id("<|endoftext|>") == 263);
  REQUIRE(t.token_id("\xC4\xA0wor") == 262);
  REQUIRE_FALSE(t.token_id("nope").has_value());
}

TEST_CASE("bpe_tokenizer: decode inverts encode for any bytes", "[data][bpe]") {
  const auto t = small();
  std::mt19937 rng(5);
  for (int k = 0; k < 200; ++k) {
    std::string s(static_cast<std::size_t>(rng() % 300), '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 3 ? "hello world 'sll\n\t"[rng() % 18] : static_cast<char>(rng()));
    REQUIRE(t.decode(t.encode(s)) == s);
  }
  REQUIRE(t.decode(ids{259, 263}) == "hello<|endoftext|>");
  REQUIRE(t.decode(ids{-1, 264, 'a'}) == "\xEF\xBF\xBD\xEF\xBF\xBD" "a");
  REQUIRE(t.token_bytes(260) == " w");
}

TEST_CASE("gpt2_pretokenizer: chunks cut at complete_prefix encode like the whole", "[data][bpe]") {
  const auto t = small();
  const char* const atoms[] = {"hello", " world", "  ", "\n\n", "'s", "'ll", "123", "!!", "\xC3\xA9t\xC3\xA9", " ",
                               "\t", "lll", "\xE2\x80\x83", "DON'T", "\xF0\x9F\x98\x80"};
  std::mt19937 rng(11);
  for (int k = 0; k < 50; ++k) {
    std::string text;
    while (text.size() < 3000) text += atoms[rng() % std::size(atoms)];
    const ids whole = t.encode(text);
    // Feed it in random chunks as tokenize_shards does.
    ids chunked;
    std::string carry;
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 97, text.size() - at);
      carry.append(text, at, n);
      at += n;
      const std::size_t cut = at == text.size() ? carry.size() : gpt2_pretokenizer::complete_prefix(carry);
      t.encode_into(std::string_view(carry).substr(0, cut), chunked);
      carry.erase(0, cut);
    }
    REQUIRE(chunked == whole);
  }
}

TEST_CASE("bpe_tokenizer: loading errors are one line naming the file", "[data][bpe]") {
  const std::string m = merges_txt;
  REQUIRE(load_error("[1]", m) ==
          "weft::bpe_tokenizer: 'v.json': invalid vocabulary JSON at byte 0: expected '{' (expected one object of "
          "\"token\": id pairs).");
  // Syntax errors are nlohmann-json's, with the byte offset; shape errors name the token.
  REQUIRE(load_error("{\"a\": 1,}", m).find("invalid vocabulary JSON at byte 8: syntax error while parsing object key - "
                                            "unexpected '}'; expected string literal") != std::string::npos);
  REQUIRE(load_error("{\"a\": -1}", m).find("expected a non-negative integer token id for \"a\"") != std::string::npos);
  REQUIRE(load_error("{\"a\": \"1\"}", m).find("token id for \"a\", not a string") != std::string::npos);
  REQUIRE(load_error("{\"a\": 4294967296}", m).find("token id 4294967296 of \"a\" does not fit in int32") !=
          std::string::npos);
  REQUIRE(load_error("{\"a\": 1} x", m).find("at byte 9: unexpected text after the closing '}'") != std::string::npos);
  REQUIRE(load_error("{\"\\ud800\": 1}", m).find("surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF") !=
          std::string::npos);
  REQUIRE(load_error(std::string("{\"a\": 1}\0", 9), m).find("at byte 8: NUL byte") != std::string::npos);
  REQUIRE(load_error("{\"a\": 0}", m) ==
          "weft::bpe_tokenizer: 'v.json': no token for byte 0 (a byte-level BPE vocabulary has all 256 single bytes, "
          "written with GPT-2's byte-to-unicode map).");
  std::string dup = vocab_json();
  dup.back() = ',';
  REQUIRE(load_error(dup + " \"zz\": 5}", m).find("token id 5 appears twice") != std::string::npos);
  REQUIRE(load_error(vocab_json(), m + "x y\n") ==
          "weft::bpe_tokenizer: 'm.txt': line 9: \"xy\" is not in the vocabulary.");
  REQUIRE(load_error(vocab_json(), m + "nospace\n") ==
          "weft::bpe_tokenizer: 'm.txt': line 9 is not two tokens separated by one space: \"nospace\".");
  REQUIRE_THROWS_AS(bpe_tokenizer::load("/nonexistent/vocab.json", "/nonexistent/merges.txt"), data_error);
}

TEST_CASE("bpe_tokenizer: loads from files; JSON escapes", "[data][bpe]") {
  weft_test::temp_dir dir;
  // \u escapes, \/ and \" in keys are the same strings as written plainly.
  std::string v = vocab_json();
  const auto at = v.find("\"he\": 256");
  v.replace(at, 4, "\"\\u0068\\u0065\"");
  weft_test::write_bytes(dir / "vocab.json", v);
  weft_test::write_bytes(dir / "merges.txt", std::string(merges_txt) + "\r\n");  // CRLF and a blank line
  const auto t = bpe_tokenizer::load(dir / "vocab.json", dir / "merges.txt");
  REQUIRE(t.encode("hello") == ids{259});
  REQUIRE(t.token_id("\"") == '"');
  REQUIRE(t.token_id("/") == '/');
}
