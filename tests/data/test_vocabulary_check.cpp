// Token ids checked against the model's vocabulary over the whole corpus (issue 27): every reader
// (token_file nanoGPT/llm.c, uint16/uint32; token_shards; text_corpus; corpus::open) refuses an id
// at or above the vocabulary anywhere in the file, with one line naming the file, the offset and
// the id. Files are written byte by byte here, independently of the readers.
#include "weft/data/corpus.hpp"
#include "weft/data/text_corpus.hpp"
#include "weft/data/token_file.hpp"
#include "weft/data/token_shards.hpp"
#include "weft/data/vocabulary_check.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace weft;
using weft_test::put_le;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

// n tokens cycling through 0..vocab-1 (every legal id, the largest included), with `bad` at `at`.
std::vector<std::uint32_t> tokens_with(std::size_t n, std::uint32_t vocab, std::size_t at, std::uint32_t bad) {
  std::vector<std::uint32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::uint32_t>(i % vocab);
  if (at < n) t[at] = bad;
  return t;
}

std::string raw(const std::vector<std::uint32_t>& t, int width) {
  std::string b;
  for (auto v : t) put_le(b, v, width);
  return b;
}

std::string llmc(const std::vector<std::uint32_t>& t, bool wide) {
  std::string b;
  put_le(b, wide ? 20240801u : 20240520u, 4);
  put_le(b, wide ? 7u : 1u, 4);
  put_le(b, t.size(), 4);
  for (int i = 3; i < 256; ++i) put_le(b, 0, 4);
  return b + raw(t, wide ? 4 : 2);
}

// The message of the data_error `f` throws ("" if none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const data_error& e) {
    return e.what();
  }
  return "";
}

std::string expected(const std::string& who, const std::filesystem::path& p, std::uint64_t id, std::size_t at,
                     std::size_t vocab) {
  return who + ": '" + p.string() + "': token " + std::to_string(id) + " at offset " + std::to_string(at) +
         " is outside the vocabulary (" + std::to_string(vocab) + " tokens: ids 0.." + std::to_string(vocab - 1) + ").";
}

}  // namespace

TEST_CASE("find_outside_vocabulary: the first id out of range anywhere, block edges included", "[data][vocab]") {
  for (std::size_t at : {std::size_t{0}, std::size_t{16383}, std::size_t{16384}, std::size_t{65536}, std::size_t{99999}}) {
    std::vector<std::uint16_t> t(100000);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::uint16_t>(i % 256);
    REQUIRE_FALSE(find_outside_vocabulary(std::span<const std::uint16_t>(t), 256));
    t[at] = 256;
    if (at + 5 < t.size()) t[at + 5] = 60000;  // only the first is named
    const auto bad = find_outside_vocabulary(std::span<const std::uint16_t>(t), 256);
    REQUIRE(bad);
    CHECK(bad->offset == at);
    CHECK(bad->id == 256);
  }
  // int32 buffers: a negative id is out of range too
  std::vector<std::int32_t> w{1, 2, 3, -7, 5};
  const auto neg = find_outside_vocabulary(std::span<const std::int32_t>(w), 256);
  REQUIRE(neg);
  CHECK(neg->offset == 3);
  CHECK(neg->id == -7);
  // uint32: ids above 2^31 (negative when read as int32) are reported as stored
  std::vector<std::uint32_t> u{0, 3000000000u};
  const auto big = find_outside_vocabulary(std::span<const std::uint32_t>(u), 128256);
  REQUIRE(big);
  CHECK(big->id == 3000000000LL);
}

TEST_CASE("token_file: an id out of the vocabulary past the first 65,536 tokens is refused at open", "[data][vocab]") {
  temp_dir dir;
  struct file_case {
    const char* name;
    bool llmc_header;
    int width;
    std::uint32_t bad;
  };
  for (const file_case c : {file_case{"small_id.bin", false, 2, 300}, file_case{"large_id.bin", false, 2, 65535},
                            file_case{"llmc_small.bin", true, 2, 256}, file_case{"llmc_large.bin", true, 2, 60000},
                            file_case{"llmc_u32.bin", true, 4, 70123}, file_case{"llmc_u32_huge.bin", true, 4, 3000000000u},
                            file_case{"raw.u32.bin", false, 4, 4000000000u}}) {
    INFO(c.name);
    const auto p = dir / c.name;
    const std::size_t at = 81920;
    const auto t = tokens_with(100000, 256, at, c.bad);
    write_bytes(p, c.llmc_header ? llmc(t, c.width == 4) : raw(t, c.width));
    // Without a vocabulary the file opens (the format is fine); with one, the id is named.
    REQUIRE(error_of([&] { (void)token_file::open(p, token_format::detect, token_dtype::detect); }).empty());
    CHECK(error_of([&] { (void)token_file::open(p, token_format::detect, token_dtype::detect, 256); }) ==
          expected("weft::token_file", p, c.bad, at, 256));
    // A vocabulary that holds the id: no error.
    if (c.bad < 1000000)
      CHECK(error_of([&] { (void)token_file::open(p, token_format::detect, token_dtype::detect, c.bad + 1); }).empty());
    // corpus::open: the path the examples use (a .bin of either width, detected)
    CHECK(error_of([&] { (void)corpus::open(p.string(), "test", 0, 256); }) == expected("weft::token_file", p, c.bad, at, 256));
    // token_shards: the offset is within the shard that holds the token
    const std::filesystem::path good = dir / "a_good.bin";
    write_bytes(good, raw(tokens_with(1000, 256, 1000, 0), 2));
    const std::filesystem::path both[] = {good, p};
    CHECK(error_of([&] { (void)token_shards::open(std::span<const std::filesystem::path>(both), shard_options{.vocab_size = 256}); }) ==
          expected("weft::token_file", p, c.bad, at, 256));
    REQUIRE(error_of([&] { (void)token_shards::open(std::span<const std::filesystem::path>(both)); }).empty());
  }
}

TEST_CASE("token_file: every id just inside the vocabulary passes", "[data][vocab]") {
  temp_dir dir;
  const auto p = dir / "ok.bin";
  write_bytes(p, llmc(tokens_with(70000, 50257, 70000, 0), false));  // ids 0..50256, 50256 included
  const token_file f = token_file::open(p, token_format::detect, token_dtype::detect, 50257);
  CHECK(f.size() == 70000);
  CHECK(error_of([&] { f.check_vocabulary(50256); }) == expected("weft::token_file", p, 50256, 50256, 50256));
}

TEST_CASE("text_corpus: an id out of the vocabulary names its file and the offset in it", "[data][vocab]") {
  temp_dir dir;
  const auto a = dir / "a.txt", b = dir / "b.txt";
  write_bytes(a, "hello ");
  write_bytes(b, "abc~def");  // '~' is 126
  const std::filesystem::path files[] = {a, b};
  const text_corpus c = text_corpus::load(std::span<const std::filesystem::path>(files));
  REQUIRE(error_of([&] { c.check_vocabulary(256); }).empty());
  CHECK(error_of([&] { c.check_vocabulary(120); }) == expected("weft::text_corpus", b, 126, 3, 120));
  // corpus::open of a directory of text files, with the vocabulary
  CHECK(error_of([&] { (void)corpus::open(dir.path().string(), "test", 0, 120); }) ==
        expected("weft::text_corpus", b, 126, 3, 120));
  REQUIRE(error_of([&] { (void)corpus::open(dir.path().string(), "test", 0, 256); }).empty());
}

TEST_CASE("corpus::open reads uint32 token files (llm.c and .u32.bin) through all()", "[data][vocab]") {
  temp_dir dir;
  const auto p = dir / "llama.bin";
  write_bytes(p, llmc(tokens_with(5000, 128256, 5000, 0), true));
  const corpus c = corpus::open(p.string(), "test", 0, 128256);
  REQUIRE(c.all().size() == 5000);
  CHECK(c.all()[4999] == 4999);
}
