// Tests of weft/io/safetensors.hpp: writer/reader round trip, byte-exact agreement with
// the reference implementation's own test vectors, decoding of known F16/BF16 bit patterns,
// and one clear checkpoint_error per kind of corrupt file.
#include "weft/io/safetensors.hpp"

#include <catch2/catch.hpp>

#include "../common/temp_dir.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using weft::checkpoint_error;
using weft::safetensors_file;
using weft::safetensors_sink;
using weft::safetensors_writer;
using weft_test::temp_dir;
using weft_test::write_bytes;

namespace {

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file with the given header text (not padded) and `data_bytes` zero bytes of data.
std::string make_file(const std::string& header, std::size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\0');
}

// Opening `bytes` as a file must fail with a single-line message naming the file and `part`.
void require_open_fails(const temp_dir& dir, const std::string& bytes, const std::string& part) {
  const fs::path p = dir / "bad.safetensors";
  write_bytes(p, bytes);
  try {
    (void)safetensors_file::open(p);
    FAIL("no checkpoint_error; expected one containing: " << part);
  } catch (const checkpoint_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(part) != std::string::npos);
    CHECK(msg.find(p.string()) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return "<no checkpoint_error>";
}

}  // namespace

// ---- 16-bit floats: decoding of known bit patterns (file bytes built by hand) ----

TEST_CASE("F16 and BF16 tensors decode to the values of their bit patterns", "[train][safetensors]") {
  temp_dir dir;
  const fs::path p = dir / "half.safetensors";
  // F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), 1023 * 2^-24 (largest subnormal),
  //      0x3555 = 0.333251953125, -0, -inf
  const std::vector<std::uint16_t> h{0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x3555, 0x8000, 0xfc00};
  // BF16: 1, -2, 0x3eab = 0.333984375, 2^-133 (subnormal), max = 0x7f7f, NaN
  const std::vector<std::uint16_t> b{0x3f80, 0xc000, 0x3eab, 0x0001, 0x7f7f, 0x7fc0};
  const std::string header = R"({"h":{"dtype":"F16","shape":[8],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"BF16","shape":[6],"data_offsets":[16,28]}})";
  write_bytes(p, le64(header.size()) + header + std::string(reinterpret_cast<const char*>(h.data()), 16) +
                     std::string(reinterpret_cast<const char*>(b.data()), 12));
  const auto f = safetensors_file::open(p);

  const std::vector<float> hf = f.read_as<float>("h");
  CHECK(hf[0] == 1.0f);
  CHECK(hf[1] == -2.0f);
  CHECK(hf[2] == 65504.0f);
  CHECK(hf[3] == std::ldexp(1.0f, -24));
  CHECK(hf[4] == std::ldexp(1023.0f, -24));
  CHECK(hf[5] == 0.333251953125f);
  CHECK((hf[6] == 0.0f && std::signbit(hf[6])));
  CHECK((std::isinf(hf[7]) && hf[7] < 0));
  CHECK(f.read_as<double>("h")[5] == 0.333251953125);

  const std::vector<float> bf = f.read_as<float>("b");
  CHECK(bf[0] == 1.0f);
  CHECK(bf[1] == -2.0f);
  CHECK(bf[2] == 0.333984375f);
  CHECK(bf[3] == std::ldexp(1.0f, -133));
  CHECK(bf[4] == 0x1.fep127f);
  CHECK(std::isnan(bf[5]));

  // Into weft's own 16-bit types: same dtype is a bit copy; others round to nearest even.
  const std::vector<weft::f16> hh = f.read_as<weft::f16>("h");
  for (std::size_t i = 0; i < h.size(); ++i) CHECK(hh[i].bits == h[i]);
  const std::vector<weft::bf16> hb = f.read_as<weft::bf16>("h");
  CHECK(hb[0].bits == 0x3f80);
  CHECK(hb[2].bits == 0x4780);  // 65504 rounds up to 65536 in bf16
  CHECK(hb[5].bits == 0x3eab);  // 0.333251953125 -> 0.333984375
  const std::vector<weft::f16> bh = f.read_as<weft::f16>("b");
  CHECK(bh[0].bits == 0x3c00);
  CHECK(bh[2].bits == 0x3558);  // 0.333984375 is exact in f16
  CHECK(bh[3].bits == 0x0000);  // 2^-133 underflows to +0
  CHECK(bh[4].bits == 0x7c00);  // bf16 max overflows to inf
}

// ---- byte layout: test vectors of the reference implementation (tensor.rs tests) ----

TEST_CASE("writer output is byte-identical to the reference implementation", "[train][safetensors]") {
  temp_dir dir;
  const std::vector<float> v{0, 1, 2, 3, 4, 5};
  std::string data(reinterpret_cast<const char*>(v.data()), 24);

  SECTION("one F32 tensor, header needs no padding") {
    safetensors_writer w;
    w.add("attn.0", {1, 2, 3}, v);
    w.write(dir / "a.safetensors");
    CHECK(read_bytes(dir / "a.safetensors") ==
          le64(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data);
  }
  SECTION("header padded with spaces to a multiple of 8") {
    safetensors_writer w;
    w.add("attn0", {1, 1, 2, 3}, v);
    w.write(dir / "a.safetensors");
    CHECK(read_bytes(dir / "a.safetensors") ==
          le64(72) + R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" + "       " + data);
  }
  SECTION("no tensors") {
    safetensors_writer w;
    w.write(dir / "a.safetensors");
    CHECK(read_bytes(dir / "a.safetensors") == le64(8) + "{}      ");
    CHECK(safetensors_file::open(dir / "a.safetensors").size() == 0);
  }
  SECTION("metadata only") {
    safetensors_writer w;
    w.set_metadata("framework", "pt");
    w.write(dir / "a.safetensors");
    CHECK(read_bytes(dir / "a.safetensors") == le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
  }
}

// ---- round trip ----

TEST_CASE("round trip of tensors of several dtypes, with metadata", "[train][safetensors]") {
  temp_dir dir;
  const fs::path path = dir / "model.safetensors";

  const std::vector<double> f64{1.0 / 3.0, -2.5, 1e300, -0.0};
  const std::vector<float> f32{0.1f, -7.25f, 3.0e-40f /* subnormal */, 1e30f, 5.f, 6.f};
  const std::vector<std::int64_t> i64{std::numeric_limits<std::int64_t>::min(), -1, 0, 50256};
  const std::vector<std::int32_t> i32{-7, 2147483647};
  const std::vector<std::uint8_t> u8{0, 1, 254, 255, 7};
  // (rows=2, cols=3) stored row-major; written transposed as (3, 2) via a callback
  const std::vector<float> w23{1, 2, 3, 4, 5, 6};
  const std::vector<float> bf_src{1.0f, -0.5f, 3.140625f, 1.0f + std::ldexp(1.0f, -7)};  // exact in bf16
  const std::vector<float> f16_src{1.0f, -0.5f, 65504.0f, std::ldexp(1.0f, -24)};         // exact in f16
  std::vector<weft::f16> f16_values;
  for (float x : f16_src) f16_values.push_back(weft::f16{x});
  const float scalar = 42.5f;

  safetensors_writer w;
  w.set_metadata("format", "pt");
  w.set_metadata("note", "quote \" backslash \\ newline \n tab \t bell \x07 utf8 \xc3\xa9");
  w.add("f64", {2, 2}, f64)
      .add("h.0.attn.c_attn.weight", {2, 3}, f32)
      .add("tokens", {4}, i64)
      .add("i32", {1, 2}, i32)
      .add("u8", {5}, u8)
      .add("scalar", "F32", {}, &scalar, sizeof scalar)
      .add("empty", "F32", {0, 4}, nullptr, 0)
      .add("transposed", "F32", {3, 2},
           [&](safetensors_sink& out) {
             std::vector<float> line(2);  // one row of the (3, 2) result
             for (std::size_t c = 0; c < 3; ++c) {
               for (std::size_t r = 0; r < 2; ++r) line[r] = w23[r * 3 + c];
               if (c == 0) out.write(std::span<const float>(line));  // every way to pass a row
               if (c == 1) out.write(std::span<float>(line));
               if (c == 2) out.write(line);
             }
           })
      .add("bf16", "BF16", {4},  // converted while writing
           [&](safetensors_sink& out) {
             for (float x : bf_src) out.write(weft::bf16{x});
           })
      .add("f16", {2, 2}, f16_values);  // weft::f16 elements are stored as F16
  CHECK(w.size() == 10);
  w.write(path);
  CHECK(!fs::exists(dir / "model.safetensors.tmp"));

  const auto f = safetensors_file::open(path);
  CHECK(f.size() == 10);
  CHECK(f.metadata().size() == 2);
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.metadata().at("note") == "quote \" backslash \\ newline \n tab \t bell \x07 utf8 \xc3\xa9");
  CHECK(f.header_length() % 8 == 0);

  // data order: 8-byte elements first, then 4, then 2, then 1; by name within a size
  const std::vector<std::string> expected_order{"f64", "tokens", "empty", "h.0.attn.c_attn.weight", "i32",
                                                "scalar", "transposed", "bf16", "f16", "u8"};
  CHECK(f.names() == expected_order);
  for (const auto& name : f.names()) {
    const auto& t = f.info(name);
    INFO(name);
    const std::size_t element = t.dtype == "F64" || t.dtype == "I64" ? 8 : t.dtype == "U8" ? 1 : t.dtype == "BF16" || t.dtype == "F16" ? 2 : 4;
    CHECK(t.data_begin % element == 0);  // aligned, as the reference guarantees
    CHECK(reinterpret_cast<std::uintptr_t>(t.bytes.data()) % element == 0);
  }

  CHECK(f.info("f64").dtype == "F64");
  CHECK(f.info("f64").shape == std::vector<std::int64_t>{2, 2});
  CHECK(f.read_as<double>("f64") == f64);
  CHECK(std::signbit(f.read_as<double>("f64")[3]));
  CHECK(f.read_as<float>("h.0.attn.c_attn.weight") == f32);
  CHECK(f.info("h.0.attn.c_attn.weight").shape == std::vector<std::int64_t>{2, 3});
  CHECK(f.read_as<std::int64_t>("tokens") == i64);
  CHECK(f.read_as<std::int32_t>("i32") == i32);
  CHECK(f.read_as<std::uint8_t>("u8") == u8);
  CHECK(f.read_as<int>("u8") == std::vector<int>{0, 1, 254, 255, 7});
  CHECK(f.info("scalar").shape.empty());
  CHECK(f.info("scalar").element_count == 1);
  CHECK(f.read_as<float>("scalar") == std::vector<float>{42.5f});
  CHECK(f.info("empty").element_count == 0);
  CHECK(f.info("empty").bytes.empty());
  CHECK(f.read_as<float>("transposed") == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(f.info("bf16").dtype == "BF16");
  CHECK(f.read_as<float>("bf16") == bf_src);
  CHECK(f.read_as<double>("bf16") == std::vector<double>(bf_src.begin(), bf_src.end()));
  CHECK(f.info("f16").dtype == "F16");
  CHECK(f.read_as<float>("f16") == f16_src);
  const std::vector<weft::bf16> bf_back = f.read_as<weft::bf16>("bf16");
  CHECK(bf_back[0].bits == 0x3f80);
  CHECK(bf_back[3].bits == 0x3f81);
  CHECK(f.read_as<weft::f16>("f16")[2].bits == 0x7bff);
  const std::vector<float> f64_as_float = f.read_as<float>("f64");  // rounded to nearest float
  CHECK(f64_as_float[0] == 1.0f / 3.0f);
  CHECK(f64_as_float[1] == -2.5f);

  // raw bytes are the caller's bytes
  const auto& raw = f.info("h.0.attn.c_attn.weight").bytes;
  REQUIRE(raw.size() == f32.size() * 4);
  CHECK(std::memcmp(raw.data(), f32.data(), raw.size()) == 0);

  // the object moves, spans stay valid
  safetensors_file g = safetensors_file::open(path);
  safetensors_file h = std::move(g);
  CHECK(h.read_as<std::int64_t>("tokens") == i64);
}

TEST_CASE("writing replaces a file atomically and leaves it intact on failure", "[train][safetensors]") {
  temp_dir dir;
  const fs::path path = dir / "ckpt.safetensors";
  const std::vector<float> v1{1, 2, 3};
  safetensors_writer w1;
  w1.add("x", {3}, v1);
  w1.write(path);
  const std::string before = read_bytes(path);

  SECTION("a throwing callback") {
    safetensors_writer w2;
    w2.add("x", "F32", {3}, [](safetensors_sink& out) {
      out.write(1.0f);
      throw std::runtime_error("device copy failed");
    });
    CHECK_THROWS_WITH(w2.write(path), "device copy failed");
  }
  SECTION("a callback writing too few bytes") {
    safetensors_writer w2;
    w2.add("x", "F32", {3}, [](safetensors_sink& out) { out.write(1.0f); });
    const std::string msg = error_of([&] { w2.write(path); });
    CHECK_THAT(msg, Catch::Contains("the fill callback wrote 4 of the 12 bytes"));
    CHECK_THAT(msg, Catch::Contains("'x'"));
  }
  SECTION("a callback writing too many bytes") {
    safetensors_writer w2;
    w2.add("x", "F32", {3}, [](safetensors_sink& out) {
      for (int i = 0; i < 4; ++i) out.write(1.0f);
    });
    CHECK_THAT(error_of([&] { w2.write(path); }), Catch::Contains("wrote more than the 12 bytes"));
  }
  SECTION("a directory that does not exist") {
    safetensors_writer w2;
    w2.add("x", {3}, v1);
    const std::string msg = error_of([&] { w2.write(dir / "no" / "such" / "dir.safetensors"); });
    CHECK_THAT(msg, Catch::Contains("cannot create"));
    CHECK_THAT(msg, Catch::Contains("no/such/dir.safetensors.tmp"));
  }
  CHECK(read_bytes(path) == before);
  CHECK(!fs::exists(dir / "ckpt.safetensors.tmp"));
}

TEST_CASE("writer rejects inconsistent tensors when they are added", "[train][safetensors]") {
  const std::vector<float> v{1, 2, 3, 4, 5, 6};
  safetensors_writer w;
  w.add("a", {2, 3}, v);
  CHECK_THAT(error_of([&] { w.add("a", {6}, v); }), Catch::Contains("tensor 'a': added twice"));
  CHECK_THAT(error_of([&] { w.add("b", {2, 2}, v); }),
             Catch::Contains("shape [2, 2] of F32 needs 16 bytes but 24 were given"));
  CHECK_THAT(error_of([&] { w.add("c", "F17", {6}, v.data(), 24); }), Catch::Contains("unknown dtype 'F17'"));
  CHECK_THAT(error_of([&] { w.add("d", "F32", {-1, 6}, v.data(), 24); }), Catch::Contains("shape [-1, 6]"));
  CHECK_THAT(error_of([&] { w.add("__metadata__", {6}, v); }), Catch::Contains("reserved"));
  CHECK_THAT(error_of([&] { w.add("", {6}, v); }), Catch::Contains("empty tensor name"));
  CHECK(w.size() == 1);
}

// ---- JSON details ----

TEST_CASE("reader decodes JSON escapes and tolerates whitespace", "[train][safetensors]") {
  temp_dir dir;
  const fs::path p = dir / "esc.safetensors";
  // \u00e9 = é, \ud83d\ude00 = U+1F600 (surrogate pair), \/ = /
  const std::string header =
      " {\n \"__metadata__\" : { \"k\\u00e9y\" : \"a\\/b\\\"c\\\\d\\n\\ud83d\\ude00\" } ,\n"
      "  \"w\\t1\" : { \"shape\" : [ 2 ] , \"data_offsets\" : [ 0 , 4 ] , \"dtype\" : \"BF16\" , \"extra\" : [true, null, {}] } }  ";
  write_bytes(p, le64(header.size()) + header + std::string("\x80\x3f\x00\xc0", 4));
  const auto f = safetensors_file::open(p);
  CHECK(f.metadata().at("k\xc3\xa9y") == "a/b\"c\\d\n\xf0\x9f\x98\x80");
  REQUIRE(f.names() == std::vector<std::string>{"w\t1"});
  CHECK(f.read_as<float>("w\t1") == std::vector<float>{1.0f, -2.0f});
}

// The header is JSON, so names and metadata are UTF-8: the writer refuses other bytes at the
// call that brings them, the reader refuses a header that holds them (as the reference does).
TEST_CASE("names and metadata must be valid UTF-8", "[train][safetensors]") {
  temp_dir dir;
  const std::vector<float> v{1, 2};
  safetensors_writer w;
  CHECK_THAT(error_of([&] { w.add("bad\xff", {2}, v); }), Catch::Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] { w.set_metadata("k", "\xc3"); }), Catch::Contains("must be valid UTF-8"));
  CHECK(w.size() == 0);
  w.add("caf\xc3\xa9", {2}, v).set_metadata("k\xc3\xa9", "v\xf0\x9f\x98\x80");
  w.write(dir / "utf8.safetensors");
  const auto f = safetensors_file::open(dir / "utf8.safetensors");
  CHECK(f.names() == std::vector<std::string>{"caf\xc3\xa9"});
  CHECK(f.metadata().at("k\xc3\xa9") == "v\xf0\x9f\x98\x80");
  require_open_fails(dir, make_file("{\"a\xff\":1}", 0), "not valid UTF-8");
}

// ---- corrupt files: each gives its own error ----

TEST_CASE("corrupt files give clear errors", "[train][safetensors]") {
  temp_dir dir;
  // A valid file to corrupt: 'a' F32 [2] at [0,8), 'b' I32 [3] at [8,20)
  const std::vector<float> a{1, 2};
  const std::vector<std::int32_t> b{3, 4, 5};
  safetensors_writer w;
  w.add("a", {2}, a).add("b", {3}, b);
  w.write(dir / "good.safetensors");
  const std::string good = read_bytes(dir / "good.safetensors");
  REQUIRE(safetensors_file::open(dir / "good.safetensors").size() == 2);

  const auto tensor = [](const std::string& name, const std::string& dtype, const std::string& shape,
                         std::uint64_t begin, std::uint64_t end) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(begin) + "," + std::to_string(end) + "]}";
  };

  SECTION("missing file") {
    const std::string msg = error_of([&] { (void)safetensors_file::open(dir / "absent.safetensors"); });
    CHECK_THAT(msg, Catch::Contains("absent.safetensors': cannot open: No such file or directory"));
  }
  SECTION("truncated data") {
    require_open_fails(dir, good.substr(0, good.size() - 4),
                       "tensor 'b': data_offsets [8, 20] end past the 16-byte data section (truncated file?)");
  }
  SECTION("truncated inside the header") {
    require_open_fails(dir, good.substr(0, 20), "runs past the end of the 20-byte file (truncated file?)");
  }
  SECTION("shorter than the length field") {
    require_open_fails(dir, good.substr(0, 5), "file is 5 bytes, shorter than the 8-byte header length");
    require_open_fails(dir, "", "file is 0 bytes");
  }
  SECTION("header length beyond the limit") {
    require_open_fails(dir, le64(std::uint64_t{1} << 40) + good.substr(8),
                       "header length 1099511627776 exceeds the 100000000-byte limit");
    require_open_fails(dir, le64(~std::uint64_t{0}) + good.substr(8), "exceeds the 100000000-byte limit");
  }
  SECTION("header length within the limit but past the end") {
    require_open_fails(dir, le64(good.size()) + good.substr(8), "runs past the end");
  }
  SECTION("header length too short cuts the JSON") {
    std::string bad = good;
    bad.replace(0, 8, le64(16));
    require_open_fails(dir, bad, "header is not valid JSON");
  }
  SECTION("offsets out of range") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[2]", 0, 8) + "," + tensor("b", "I32", "[3]", 800, 812) + "}", 20),
                       "tensor 'b': data_offsets [800, 812] end past the 20-byte data section");
  }
  SECTION("offsets reversed") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[2]", 8, 0) + "}", 8),
                       "tensor 'a': data_offsets [8, 0] end before they begin");
  }
  SECTION("overlapping tensors") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[2]", 0, 8) + "," + tensor("b", "F32", "[2]", 4, 12) + "}", 12),
                       "tensors 'a' and 'b' [4, 12] overlap");
  }
  SECTION("gap between tensors") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[2]", 0, 8) + "," + tensor("b", "F32", "[2]", 12, 20) + "}", 20),
                       "data section bytes [8, 12) belong to no tensor (gap before 'b')");
  }
  SECTION("trailing bytes") {
    require_open_fails(dir, good + "xx", "data section is 22 bytes but the tensors cover only 20");
  }
  SECTION("dtype and shape disagree with the byte length") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[3]", 0, 8) + "}", 8),
                       "tensor 'a': shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8");
    require_open_fails(dir, make_file("{" + tensor("a", "BF16", "[2,2]", 0, 16) + "}", 16),
                       "shape [2, 2] of BF16 needs 8 bytes");
  }
  SECTION("shape product overflows") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[4294967296,4294967296]", 0, 8) + "}", 8),
                       "tensor 'a': shape [4294967296, 4294967296] of F32 overflows");
  }
  SECTION("unknown dtype") {
    require_open_fails(dir, make_file("{" + tensor("a", "F31", "[2]", 0, 8) + "}", 8), "tensor 'a': unknown dtype 'F31'");
  }
  SECTION("malformed tensor entries") {
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "tensor 'a': missing \"data_offsets\"");
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                       "shape entries must be non-negative integers");
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
                       "data_offsets must be an array of two integers");
    require_open_fails(dir, make_file(R"({"a":[1,2]})", 8), "tensor 'a' is an array, expected an object");
    require_open_fails(dir, make_file(R"({"__metadata__":{"step":100}})", 0), "__metadata__ value for 'step' is a number");
    require_open_fails(dir, make_file(R"([1,2])", 0), "header is an array, expected a JSON object");
  }
  SECTION("invalid JSON") {
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8), "not valid JSON: unexpected end");
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8), "non-integer number");
    require_open_fails(dir, make_file(R"({"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})", 8), "leading zero");
    require_open_fails(dir, make_file(R"({"a\q":1})", 0), "unknown escape");
    require_open_fails(dir, make_file(R"({"\ud800x":1})", 0), "unpaired high surrogate");
    require_open_fails(dir, make_file(R"({"x":[99999999999999999999]})", 0), "integer too large");
    require_open_fails(dir, make_file("{\"a\nb\":1}", 0), "raw control character");
    require_open_fails(dir, make_file(R"({} x)", 0), "unexpected text after the top-level value");
    require_open_fails(dir, make_file(std::string(100, '[') + std::string(100, ']'), 0), "nesting deeper than 64");
    require_open_fails(dir, make_file(std::string("{}\0\0\0\0\0\0", 8), 0), "not valid JSON");  // NUL padding
  }
  SECTION("duplicate tensor name") {
    require_open_fails(dir, make_file("{" + tensor("a", "F32", "[2]", 0, 8) + "," + tensor("a", "F32", "[2]", 8, 16) + "}", 16),
                       "duplicate key 'a'");
  }
  SECTION("missing tensor name") {
    const auto f = safetensors_file::open(dir / "good.safetensors");
    const std::string msg = error_of([&] { (void)f.info("h.0.mlp.c_fc.weight"); });
    CHECK_THAT(msg, Catch::Contains("good.safetensors"));
    CHECK_THAT(msg, Catch::Contains("no tensor named 'h.0.mlp.c_fc.weight' (the file has 2 tensors, e.g. 'a', 'b')"));
    CHECK(!f.contains("h.0.mlp.c_fc.weight"));
    CHECK(f.contains("a"));
  }
  SECTION("read_as with a wrong destination") {
    const auto f = safetensors_file::open(dir / "good.safetensors");
    std::vector<float> three(3);
    CHECK_THAT(error_of([&] { f.read_as<float>("a", std::span<float>(three)); }),
               Catch::Contains("tensor 'a' has 2 elements (shape [2]) but the destination holds 3"));
    CHECK_THAT(error_of([&] { (void)f.read_as<float>("b"); }),
               Catch::Contains("tensor 'b' is I32; read_as<float> converts only from F64, F32, F16 and BF16"));
    CHECK_THAT(error_of([&] { (void)f.read_as<std::int32_t>("a"); }),
               Catch::Contains("read_as<int32> converts only from integer dtypes"));
  }
  SECTION("integer values that do not fit the destination") {
    const std::vector<std::int32_t> big{1, 300};
    safetensors_writer w2;
    w2.add("t", {2}, big);
    w2.write(dir / "big.safetensors");
    const auto f = safetensors_file::open(dir / "big.safetensors");
    CHECK_THAT(error_of([&] { (void)f.read_as<std::uint8_t>("t"); }),
               Catch::Contains("tensor 't': element 1 = 300 does not fit in uint8"));
  }
}

// ---- the snippet in docs/checkpoints.md ----

TEST_CASE("docs/checkpoints.md: write and read a safetensors file", "[train][safetensors][docs]") {
  temp_dir dir;
  const fs::path path = dir / "model.safetensors";
  std::vector<float> wte(8 * 4);  // (vocab=8, width=4)
  for (std::size_t i = 0; i < wte.size(); ++i) wte[i] = static_cast<float>(i);
  std::vector<float> fc(6 * 4);  // weft layout (out=6, in=4)
  for (std::size_t i = 0; i < fc.size(); ++i) fc[i] = static_cast<float>(i) / 8;

  // example-begin safetensors-basics
  weft::safetensors_writer w;
  w.set_metadata("format", "pt");
  w.add("wte.weight", {8, 4}, wte);  // std::vector<float> -> F32, referenced until write()
  // Store (out=6, in=4) as (in, out) in bf16, converting and transposing while writing.
  w.add("h.0.mlp.c_fc.weight", "BF16", {4, 6}, [&](weft::safetensors_sink& out) {
    for (std::size_t in = 0; in < 4; ++in)
      for (std::size_t o = 0; o < 6; ++o) out.write(weft::bf16{fc[o * 4 + in]});
  });
  w.write(path);  // path.tmp, fsync, rename: never a half-written file at `path`

  const auto f = weft::safetensors_file::open(path);  // mmap + full validation
  const auto& info = f.info("h.0.mlp.c_fc.weight");  // {dtype "BF16", shape {4, 6}, bytes, ...}
  std::vector<float> fc_t(static_cast<std::size_t>(info.element_count));
  f.read_as<float>("h.0.mlp.c_fc.weight", fc_t);  // BF16 -> float
  const std::string format = f.metadata().at("format");
  // example-end safetensors-basics

  CHECK(format == "pt");
  CHECK(f.names() == std::vector<std::string>{"wte.weight", "h.0.mlp.c_fc.weight"});
  CHECK(f.read_as<float>("wte.weight") == wte);
  for (std::size_t in = 0; in < 4; ++in)
    for (std::size_t o = 0; o < 6; ++o) CHECK(fc_t[in * 6 + o] == fc[o * 4 + in]);  // i/8 < 3: exact in bf16
}
