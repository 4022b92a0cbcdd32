// Tests of token_file's uint32 support, token_shards and shard_writer. Files are written byte
// by byte here (independently of the reader), except where shard_writer's output is the subject.
#include "weft/data/shard_writer.hpp"
#include "weft/data/token_shards.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace weft;
using weft_test::put_le;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

std::string raw(const std::vector<std::uint32_t>& toks, int width) {
  std::string b;
  for (auto t : toks) put_le(b, t, width);
  return b;
}

std::string llmc(const std::vector<std::uint32_t>& toks, std::int32_t magic, std::int32_t version, int width,
                 std::int64_t ntok = -1) {
  std::string b;
  put_le(b, static_cast<std::uint32_t>(magic), 4);
  put_le(b, static_cast<std::uint32_t>(version), 4);
  put_le(b, static_cast<std::uint32_t>(ntok < 0 ? static_cast<std::int64_t>(toks.size()) : ntok), 4);
  for (int i = 3; i < 256; ++i) put_le(b, 0, 4);
  return b + raw(toks, width);
}

std::string shards_error(const std::filesystem::path& p, shard_options o = {}) {
  try {
    (void)token_shards::open(p, o);
  } catch (const data_error& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::uint32_t> small16{3, 1, 4, 1, 5, 9, 2, 6, 65535};
const std::vector<std::uint32_t> wide32{0, 70000, 128255, 5, 16777216, 2147483647u, 65536};

void require_tokens(const token_file& f, const std::vector<std::uint32_t>& expected) {
  REQUIRE(f.size() == expected.size());
  const token_view v = f.view();
  REQUIRE(v.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    REQUIRE(f[i] == static_cast<std::int32_t>(expected[i]));
    REQUIRE(v[i] == static_cast<std::int32_t>(expected[i]));
  }
}

}  // namespace

TEST_CASE("token_file: the four formats x widths", "[data][token_file]") {
  temp_dir dir;
  write_bytes(dir / "a.bin", raw(small16, 2));
  write_bytes(dir / "b.u32.bin", raw(wide32, 4));
  write_bytes(dir / "c.bin", llmc(small16, 20240520, 1, 2));
  write_bytes(dir / "d.bin", llmc(wide32, 20240801, 7, 4));

  const auto a = token_file::open(dir / "a.bin", token_format::detect, token_dtype::detect);
  REQUIRE(a.format() == token_format::nanogpt);
  REQUIRE(a.dtype() == token_dtype::u16);
  require_tokens(a, small16);

  const auto b = token_file::open(dir / "b.u32.bin", token_format::detect, token_dtype::detect);
  REQUIRE(b.format() == token_format::nanogpt);
  REQUIRE(b.dtype() == token_dtype::u32);
  REQUIRE(b.tokens_u32().size() == wide32.size());
  require_tokens(b, wide32);

  const auto c = token_file::open(dir / "c.bin", token_format::detect, token_dtype::detect);
  REQUIRE(c.format() == token_format::llmc);
  REQUIRE(c.dtype() == token_dtype::u16);
  require_tokens(c, small16);

  const auto d = token_file::open(dir / "d.bin", token_format::detect, token_dtype::detect);
  REQUIRE(d.format() == token_format::llmc);
  REQUIRE(d.dtype() == token_dtype::u32);
  require_tokens(d, wide32);

  // A raw uint32 file under any name, when the width is given.
  write_bytes(dir / "plain.bin", raw(wide32, 4));
  require_tokens(token_file::open(dir / "plain.bin", token_format::nanogpt, token_dtype::u32), wide32);
}

TEST_CASE("token_file: uint32 errors and the uint16 default", "[data][token_file]") {
  temp_dir dir;
  auto err = [&](const std::string& name, token_format f, token_dtype d) {
    try {
      (void)token_file::open(dir / name, f, d);
    } catch (const data_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto prefix = [&](const std::string& name) { return "weft::token_file: '" + (dir / name).string() + "': "; };

  write_bytes(dir / "d.bin", llmc(wide32, 20240801, 7, 4));
  // The default width is uint16: a uint32 shard is refused with the way to open it.
  REQUIRE(err("d.bin", token_format::detect, token_dtype::u16) ==
          prefix("d.bin") +
              "bad magic 20240801 (expected llm.c magic 20240520 for uint16 tokens; 20240801 is llm.c's uint32 shard: "
              "open it with token_dtype::u32 or token_dtype::detect).");
  write_bytes(dir / "v6.bin", llmc(wide32, 20240801, 6, 4));
  REQUIRE(err("v6.bin", token_format::detect, token_dtype::detect) ==
          prefix("v6.bin") + "unsupported llm.c version 6 with magic 20240801 (only version 7, uint32 tokens, is supported).");
  write_bytes(dir / "t.bin", llmc(wide32, 20240801, 7, 4, 100));
  REQUIRE(err("t.bin", token_format::detect, token_dtype::detect) ==
          prefix("t.bin") + "truncated: header says 100 tokens (1424 bytes with header) but the file has 1052 bytes.");
  write_bytes(dir / "l.bin", llmc(wide32, 20240801, 7, 4, 3));
  REQUIRE(err("l.bin", token_format::detect, token_dtype::u32) ==
          prefix("l.bin") + "size mismatch: header says 3 tokens (1036 bytes with header) but the file has 1052 bytes.");
  write_bytes(dir / "c.bin", llmc(small16, 20240520, 1, 2));
  REQUIRE(err("c.bin", token_format::llmc, token_dtype::u32) ==
          prefix("c.bin") +
              "llm.c header says uint16 tokens (magic 20240520) but uint32 was asked for; open it with token_dtype::u16 or "
              "token_dtype::detect.");
  write_bytes(dir / "x.u32.bin", raw(wide32, 4) + "ab");
  REQUIRE(err("x.u32.bin", token_format::detect, token_dtype::detect) ==
          prefix("x.u32.bin") + "size 30 bytes is not a multiple of 4 for a raw uint32 token file (nanogpt format).");
  write_bytes(dir / "y.u32.bin", raw(wide32, 4));
  REQUIRE(err("y.u32.bin", token_format::detect, token_dtype::u16) ==
          prefix("y.u32.bin") +
              "the name says uint32 tokens ('.u32.bin') but uint16 was asked for; open it with token_dtype::u32 or "
              "token_dtype::detect.");
}

TEST_CASE("token_shards: a directory of mixed shards, in name order", "[data][token_shards]") {
  temp_dir dir;
  write_bytes(dir / "s_000002.bin", llmc(wide32, 20240801, 7, 4));
  write_bytes(dir / "s_000000.bin", raw(small16, 2));
  write_bytes(dir / "s_000001.bin", llmc(small16, 20240520, 1, 2));
  write_bytes(dir / "val_000000.bin", raw({1, 2, 3}, 2));
  write_bytes(dir / "notes.txt", "not a shard");

  const auto all = token_shards::open(dir.path());
  REQUIRE(all.shard_count() == 4);
  REQUIRE(all.shard(0).path().filename() == "s_000000.bin");
  REQUIRE(all.shard(3).path().filename() == "val_000000.bin");
  REQUIRE(all.size() == 2 * small16.size() + wide32.size() + 3);
  REQUIRE(all.offset(2) == 2 * small16.size());

  const auto train = token_shards::open(dir.path(), {}, "s_");
  REQUIRE(train.shard_count() == 3);
  REQUIRE(train.view(2)[1] == 70000);
  REQUIRE(train.view(1)[8] == 65535);

  const std::filesystem::path two[] = {dir / "s_000002.bin", dir / "s_000000.bin"};
  const auto listed = token_shards::open(std::span<const std::filesystem::path>(two));
  REQUIRE(listed.shard(0).dtype() == token_dtype::u32);  // the given order is kept

  REQUIRE(shards_error(dir.path(), {}).empty());
  REQUIRE(shards_error(dir / "nope") == "weft::token_file: '" + (dir / "nope").string() +
                                            "': cannot open file (No such file or directory).");
  temp_dir empty;
  REQUIRE(shards_error(empty.path()) ==
          "weft::token_shards: '" + empty.path().string() + "': no *.bin files in this directory.");
  // One bad shard names itself.
  write_bytes(dir / "s_000003.bin", llmc(small16, 20240520, 1, 2, 50));
  REQUIRE(shards_error(dir.path()).find("'" + (dir / "s_000003.bin").string() + "': truncated: header says 50 tokens") !=
          std::string::npos);
  write_bytes(dir / "s_000003.bin", llmc(small16, 20240520, 1, 2).substr(0, 700));
  REQUIRE(shards_error(dir.path()).find("truncated: 700 bytes, smaller than the 1024-byte llm.c header") !=
          std::string::npos);
  write_bytes(dir / "s_000003.bin", llmc(small16, 20240521, 1, 2));
  REQUIRE(shards_error(dir / "s_000003.bin", {token_format::llmc, token_dtype::detect})
              .find("s_000003.bin': bad magic 20240521 (expected llm.c magic 20240520") != std::string::npos);
  // Forced llm.c on a raw shard of the directory: the first file fails, by name.
  REQUIRE(shards_error(dir.path(), {token_format::llmc, token_dtype::detect}).find("s_000000.bin': bad magic") !=
          std::string::npos);
}

TEST_CASE("shard_writer: both formats and widths read back, cut at shard_tokens", "[data][shard_writer]") {
  std::vector<std::int32_t> toks;
  for (std::int32_t i = 0; i < 2500; ++i) toks.push_back((i * 7919) % 65536);
  for (const auto format : {token_format::nanogpt, token_format::llmc})
    for (const auto dtype : {token_dtype::u16, token_dtype::u32}) {
      temp_dir dir;
      {
        shard_writer w(dir.path(), {.format = format, .dtype = dtype, .shard_tokens = 1000, .prefix = "t"});
        w.write(std::span<const std::int32_t>(toks).first(1234));
        w.write(std::span<const std::int32_t>(toks).subspan(1234));
        w.close();
        REQUIRE(w.files().size() == 3);
        REQUIRE(w.tokens() == toks.size());
      }
      const bool u32_raw = format == token_format::nanogpt && dtype == token_dtype::u32;
      REQUIRE(std::filesystem::exists(dir / (u32_raw ? "t_000002.u32.bin" : "t_000002.bin")));
      const auto s = token_shards::open(dir.path());  // detects format and width
      REQUIRE(s.shard_count() == 3);
      REQUIRE(s.shard(2).size() == 500);
      REQUIRE(s.shard(0).format() == format);
      REQUIRE(s.shard(0).dtype() == dtype);
      // Byte-exact file sizes: header + tokens * width.
      const std::size_t width = dtype == token_dtype::u16 ? 2 : 4;
      REQUIRE(s.shard(0).file_bytes() == (format == token_format::llmc ? 1024 : 0) + 1000 * width);
      for (std::size_t i = 0; i < toks.size(); ++i) {
        const std::size_t k = i / 1000;
        REQUIRE(s.view(k)[i - s.offset(k)] == toks[i]);
      }
    }
}

TEST_CASE("shard_writer: refuses what it cannot write", "[data][shard_writer]") {
  temp_dir dir;
  shard_writer w(dir.path(), {.format = token_format::llmc, .dtype = token_dtype::u16});
  const std::int32_t too_big[] = {1, 70000};
  REQUIRE_THROWS_WITH(w.write(too_big), Catch::Contains("token 70000 does not fit u16"));
  const std::int32_t negative[] = {-1};
  REQUIRE_THROWS_AS(w.write(negative), data_error);
  REQUIRE_THROWS_AS(shard_writer(dir.path(), {.format = token_format::detect}), data_error);
  REQUIRE_THROWS_AS(shard_writer(dir.path(), {.shard_tokens = 0}), data_error);
}

TEST_CASE("shard_writer: an exception leaves only complete shards", "[data][shard_writer]") {
  temp_dir dir;
  std::vector<std::int32_t> toks(250, 7);
  toks.push_back(70000);  // does not fit u16
  try {
    shard_writer w(dir.path(), {.format = token_format::llmc, .dtype = token_dtype::u16, .shard_tokens = 100});
    w.write(toks);
  } catch (const data_error&) {
  }
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"shard_000000.bin", "shard_000001.bin"});  // no shard_000002.bin(.tmp)
  // Without an exception the destructor ends the last shard.
  temp_dir dir2;
  {
    shard_writer w(dir2.path(), {.format = token_format::nanogpt, .dtype = token_dtype::u16, .shard_tokens = 100});
    w.write(std::span<const std::int32_t>(toks).first(150));
  }
  REQUIRE(token_shards::open(dir2.path()).size() == 150);
}
