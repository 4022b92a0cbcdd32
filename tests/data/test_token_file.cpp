// Tests of token_file (nanoGPT raw and llm.c shards, memory-mapped), token_buffer and
// token_view. Files are written byte by byte here, independently of the reader.
#include "weft/data/token_buffer.hpp"
#include "weft/data/token_file.hpp"
#include "weft/data/token_view.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

using namespace weft;
using weft_test::put_le;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

const std::vector<std::uint16_t> sample_tokens{0, 1, 50256, 65535, 12345, 7, 256, 42};

std::string raw_bytes(const std::vector<std::uint16_t>& toks) {
  std::string b;
  for (auto t : toks) put_le(b, t, 2);
  return b;
}

// llm.c shard: 256 int32 header (magic, version, ntok, zeros), then uint16 tokens.
std::string llmc_bytes(const std::vector<std::uint16_t>& toks, std::int32_t magic = 20240520,
                       std::int32_t version = 1, std::int64_t ntok = -1) {
  std::string b;
  put_le(b, static_cast<std::uint32_t>(magic), 4);
  put_le(b, static_cast<std::uint32_t>(version), 4);
  put_le(b, static_cast<std::uint32_t>(ntok < 0 ? static_cast<std::int64_t>(toks.size()) : ntok), 4);
  for (int i = 3; i < 256; ++i) put_le(b, 0, 4);
  return b + raw_bytes(toks);
}

// The message of the data_error that opening `p` throws ("" if none).
std::string open_error(const std::filesystem::path& p, token_format f) {
  try {
    (void)token_file::open(p, f);
  } catch (const data_error& e) {
    return e.what();
  }
  return "";
}

void require_tokens(const token_file& f, const std::vector<std::uint16_t>& expected) {
  REQUIRE(f.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    REQUIRE(f[i] == static_cast<std::int32_t>(expected[i]));
    REQUIRE(f.tokens()[i] == expected[i]);
  }
}

}  // namespace

TEST_CASE("token_file: both formats are token sources", "[train][token_file]") {
  STATIC_REQUIRE(token_source<token_file>);
  STATIC_REQUIRE(token_source<token_buffer>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<token_file>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<token_file>);
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, data_error>);
}

TEST_CASE("token_file: nanoGPT raw .bin", "[train][token_file]") {
  temp_dir dir;
  const auto p = dir / "train.bin";
  write_bytes(p, raw_bytes(sample_tokens));

  SECTION("detected") {
    const auto f = token_file::open(p);
    REQUIRE(f.format() == token_format::nanogpt);
    REQUIRE(f.file_bytes() == 2 * sample_tokens.size());
    REQUIRE(f.path() == p);
    require_tokens(f, sample_tokens);
  }
  SECTION("forced") {
    const auto f = token_file::open(p, token_format::nanogpt);
    require_tokens(f, sample_tokens);
  }
}

TEST_CASE("token_file: llm.c shard", "[train][token_file]") {
  temp_dir dir;
  const auto p = dir / "shard_000000.bin";
  write_bytes(p, llmc_bytes(sample_tokens));

  SECTION("detected") {
    const auto f = token_file::open(p);
    REQUIRE(f.format() == token_format::llmc);
    REQUIRE(f.file_bytes() == 1024 + 2 * sample_tokens.size());
    require_tokens(f, sample_tokens);
  }
  SECTION("forced") {
    const auto f = token_file::open(p, token_format::llmc);
    require_tokens(f, sample_tokens);
  }
  SECTION("forced raw reads the header as tokens") {
    const auto f = token_file::open(p, token_format::nanogpt);
    REQUIRE(f.size() == 512 + sample_tokens.size());
    REQUIRE(f[0] == (20240520 & 0xffff));  // low half of the magic comes first (little-endian)
    REQUIRE(f[1] == (20240520 >> 16));
    REQUIRE(f[512] == static_cast<std::int32_t>(sample_tokens[0]));
  }
}

TEST_CASE("token_file: a 2-byte raw file is too short to hold the magic", "[train][token_file]") {
  temp_dir dir;
  write_bytes(dir / "one.bin", raw_bytes({9}));
  const auto f = token_file::open(dir / "one.bin");
  REQUIRE(f.format() == token_format::nanogpt);
  REQUIRE(f.size() == 1);
  REQUIRE(f[0] == 9);
}

TEST_CASE("token_file: errors name the file and the problem in one line", "[train][token_file]") {
  temp_dir dir;
  const auto name = [&](const char* n) { return (dir / n).string(); };

  SECTION("missing file") {
    REQUIRE(open_error(dir / "nope.bin", token_format::detect) ==
            "weft::token_file: '" + name("nope.bin") + "': cannot open file (No such file or directory).");
  }
  SECTION("empty file") {
    write_bytes(dir / "empty.bin", "");
    for (auto f : {token_format::detect, token_format::nanogpt, token_format::llmc})
      REQUIRE(open_error(dir / "empty.bin", f) == "weft::token_file: '" + name("empty.bin") + "': file is empty.");
  }
  SECTION("directory") {
    REQUIRE(open_error(dir.path(), token_format::detect) ==
            "weft::token_file: '" + dir.path().string() + "': not a regular file.");
  }
  SECTION("odd size raw") {
    write_bytes(dir / "odd.bin", raw_bytes(sample_tokens) + "x");
    REQUIRE(open_error(dir / "odd.bin", token_format::nanogpt) ==
            "weft::token_file: '" + name("odd.bin") +
                "': odd size 17 bytes for a raw uint16 token file (nanogpt format needs a multiple of 2).");
    REQUIRE_FALSE(open_error(dir / "odd.bin", token_format::detect).empty());
  }
  SECTION("bad magic when llm.c is forced") {
    write_bytes(dir / "raw.bin", raw_bytes(sample_tokens));  // first int32 = 0 | 1 << 16 = 65536
    REQUIRE(open_error(dir / "raw.bin", token_format::llmc) ==
            "weft::token_file: '" + name("raw.bin") +
                "': bad magic 65536 (expected llm.c magic 20240520; is this a raw nanogpt .bin? open it with "
                "token_format::nanogpt).");
    write_bytes(dir / "wrong.bin", llmc_bytes(sample_tokens, 20240801));
    REQUIRE(open_error(dir / "wrong.bin", token_format::llmc).find("': bad magic 20240801 (expected llm.c magic") !=
            std::string::npos);
  }
  SECTION("unsupported version") {
    write_bytes(dir / "v2.bin", llmc_bytes(sample_tokens, 20240520, 2));
    REQUIRE(open_error(dir / "v2.bin", token_format::detect) ==
            "weft::token_file: '" + name("v2.bin") +
                "': unsupported llm.c version 2 (only version 1, uint16 tokens, is supported).");
  }
  SECTION("truncated: fewer tokens than the header says") {
    write_bytes(dir / "trunc.bin", llmc_bytes(sample_tokens, 20240520, 1, 100));
    REQUIRE(open_error(dir / "trunc.bin", token_format::detect) ==
            "weft::token_file: '" + name("trunc.bin") +
                "': truncated: header says 100 tokens (1224 bytes with header) but the file has 1040 bytes.");
  }
  SECTION("truncated: shorter than the header") {
    write_bytes(dir / "short.bin", llmc_bytes({}).substr(0, 100));
    REQUIRE(open_error(dir / "short.bin", token_format::detect) ==
            "weft::token_file: '" + name("short.bin") +
                "': truncated: 100 bytes, smaller than the 1024-byte llm.c header.");
  }
  SECTION("trailing bytes after the tokens") {
    write_bytes(dir / "long.bin", llmc_bytes(sample_tokens, 20240520, 1, 3));
    REQUIRE(open_error(dir / "long.bin", token_format::llmc) ==
            "weft::token_file: '" + name("long.bin") +
                "': size mismatch: header says 3 tokens (1030 bytes with header) but the file has 1040 bytes.");
  }
  SECTION("header with no tokens") {
    write_bytes(dir / "zero.bin", llmc_bytes({}));
    REQUIRE(open_error(dir / "zero.bin", token_format::detect) ==
            "weft::token_file: '" + name("zero.bin") + "': llm.c header says 0 tokens (expected at least 1).");
  }
}

TEST_CASE("token_file: errors are single lines", "[train][token_file]") {
  temp_dir dir;
  write_bytes(dir / "v9.bin", llmc_bytes(sample_tokens, 20240520, 9));
  const auto msg = open_error(dir / "v9.bin", token_format::detect);
  REQUIRE_FALSE(msg.empty());
  REQUIRE(msg.find('\n') == std::string::npos);
}

TEST_CASE("token_file: moving keeps the mapping alive", "[train][token_file]") {
  temp_dir dir;
  write_bytes(dir / "m.bin", raw_bytes(sample_tokens));
  auto a = token_file::open(dir / "m.bin");
  token_file b = std::move(a);
  REQUIRE(a.size() == 0);  // NOLINT(use-after-move): moved-from is empty
  require_tokens(b, sample_tokens);
  token_file c;
  c = std::move(b);
  require_tokens(c, sample_tokens);
}

TEST_CASE("token_view: files and buffers read alike", "[train][token_view]") {
  temp_dir dir;
  write_bytes(dir / "v.bin", llmc_bytes(sample_tokens));
  const auto file = token_file::open(dir / "v.bin");
  const token_buffer buf(std::vector<std::int32_t>(sample_tokens.begin(), sample_tokens.end()));

  const token_view vf = file, vb = buf;
  REQUIRE(vf.is_narrow());
  REQUIRE_FALSE(vb.is_narrow());
  REQUIRE(vf.size() == sample_tokens.size());
  REQUIRE(vb.size() == sample_tokens.size());
  for (std::size_t i = 0; i < sample_tokens.size(); ++i) REQUIRE(vf[i] == vb[i]);

  std::vector<std::int32_t> out(3, -1);
  vf.copy_to(2, out);
  REQUIRE(out == std::vector<std::int32_t>{50256, 65535, 12345});  // uint16 widened, not sign-extended
  vb.copy_to(2, out);
  REQUIRE(out == std::vector<std::int32_t>{50256, 65535, 12345});

  const auto sub = vf.subview(5, 100);  // clamped to the 3 tokens left
  REQUIRE(sub.size() == 3);
  REQUIRE(sub[0] == 7);
  REQUIRE(vf.subview(100, 1).empty());
}

TEST_CASE("token_buffer: fill and read", "[train][token_buffer]") {
  token_buffer b;
  REQUIRE(b.empty());
  b.push_back(3);
  b.append(std::vector<std::int32_t>{4, 5});
  REQUIRE(b.size() == 3);
  REQUIRE(b[2] == 5);
  REQUIRE(b.tokens().size() == 3);
  // A view of a temporary would dangle, so it does not compile.
  STATIC_REQUIRE_FALSE(std::is_constructible_v<token_view, token_buffer&&>);
  STATIC_REQUIRE(std::is_constructible_v<token_view, const token_buffer&>);
}
