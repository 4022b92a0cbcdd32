// Sample program for the safetensors cross-check against the reference implementation
// (tests/io/safetensors_crosscheck.py runs it; see docs/checkpoints.md).
//
//   safetensors_write_sample write <path>   writes the tensors below with weft's writer; the
//                                           Python side loads them with the `safetensors` package
//   safetensors_write_sample read <path>    reads a file the Python side wrote with the reference
//                                           writer and checks every tensor and metadata entry
//
// The expected values are simple formulas that the Python script spells out independently.
// Exit status 0 on success, 1 on a mismatch (one line per problem on stderr), 2 on usage errors.
#include "weft/io/safetensors.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

namespace d = weft::io::detail;  // shape_string, st_quote for messages

// ---- write mode ----

void write_sample(const std::string& path) {
  // (vocab=5, width=4): i / 3 in float
  std::vector<float> wte(20);
  for (std::size_t i = 0; i < wte.size(); ++i) wte[i] = static_cast<float>(i) / 3.0f;
  // (2, 3): i / 3 in double
  std::vector<double> attn_bias(6);
  for (std::size_t i = 0; i < attn_bias.size(); ++i) attn_bias[i] = static_cast<double>(i) / 3.0;
  // (out=8, in=3) source, written transposed as (in=3, out=8): src[r][c] = 10 r + c
  std::vector<float> fc_src(24);
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t c = 0; c < 3; ++c) fc_src[r * 3 + c] = static_cast<float>(10 * r + c);
  const std::vector<float> f16_src{1.0f, -0.5f, 65504.0f, std::ldexp(1.0f, -24),
                                   1.0f / 3.0f, 1e5f, 3 * std::ldexp(1.0f, -25), -0.0f,
                                   1.0f + 3 * std::ldexp(1.0f, -12), 1.0f + 3 * std::ldexp(1.0f, -11)};
  const std::vector<std::int64_t> tokens{std::numeric_limits<std::int64_t>::min(), -1, 0, 1, 50256,
                                         std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::int32_t> positions{-5, 0, 7, std::numeric_limits<std::int32_t>::max()};
  const std::vector<std::uint8_t> mask{0, 128, 255};
  const float lr = 6e-4f;

  weft::safetensors_writer w;
  w.set_metadata("format", "pt");
  w.set_metadata("weft.step", "1200");
  w.set_metadata("note", "quote \" backslash \\ newline \n ctrl \x01 utf8 \xc3\xa9 \xe2\x9c\x93");
  w.add("wte.weight", {5, 4}, wte);
  w.add("h.0.attn.bias", {2, 3}, attn_bias);
  // (4, 12): i / 3 rounded to bf16
  w.add("h.0.attn.c_attn.weight", "BF16", {4, 12}, [](weft::safetensors_sink& out) {
    for (int i = 0; i < 48; ++i) out.write(weft::bf16{static_cast<float>(i) / 3.0f});
  });
  // (12,): ((i % 17) - 8) / 4, exact in bf16
  w.add("h.0.ln_1.bias", "BF16", {12}, [](weft::safetensors_sink& out) {
    for (int i = 0; i < 12; ++i) out.write(weft::bf16{static_cast<float>((i % 17) - 8) * 0.25f});
  });
  std::vector<weft::f16> ln_1_weight;  // stored as F16
  for (float x : f16_src) ln_1_weight.push_back(weft::f16{x});
  w.add("h.0.ln_1.weight", {10}, ln_1_weight);
  w.add("h.0.mlp.c_fc.weight", "F32", {3, 8}, [&](weft::safetensors_sink& out) {
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t r = 0; r < 8; ++r) out.write(fc_src[r * 3 + c]);
  });
  w.add("tokens", {7}, tokens);
  w.add("positions", {2, 2}, positions);
  w.add("mask", {3}, mask);
  w.add("lr", "F32", {}, &lr, sizeof lr);
  w.add("empty", "F32", {0, 4}, nullptr, 0);
  w.write(path);
  std::printf("wrote %zu tensors to %s\n", w.size(), path.c_str());
}

// ---- read mode ----

int failures = 0;

void problem(const std::string& what) {
  std::fprintf(stderr, "mismatch: %s\n", what.c_str());
  ++failures;
}

template <class T>
std::string text(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
    return buf;
  } else {
    return std::to_string(v);
  }
}

template <class T>
void expect_values(const weft::safetensors_file& f, const std::string& name, const std::vector<T>& want) {
  const std::vector<T> got = f.read_as<T>(name);
  if (got.size() != want.size()) return problem(name + ": element count");
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = std::is_floating_point_v<T>
                          ? (std::isnan(static_cast<double>(got[i])) && std::isnan(static_cast<double>(want[i]))) ||
                                (got[i] == want[i] && std::signbit(static_cast<double>(got[i])) ==
                                                          std::signbit(static_cast<double>(want[i])))
                          : got[i] == want[i];
    if (!same)
      return problem(name + "[" + std::to_string(i) + "] = " + text(got[i]) + ", expected " + text(want[i]));
  }
}

struct expected_tensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::function<void(const weft::safetensors_file&, const std::string&)> check;
};

// What safetensors_crosscheck.py writes (mode `write-reference`), formula by formula.
std::map<std::string, expected_tensor> reference_tensors() {
  std::map<std::string, expected_tensor> t;
  t["h.0.attn.c_attn.weight"] = {"F32", {4, 12}, [](auto& f, auto& n) {
    std::vector<float> v(48);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) / 3.0f;
    expect_values(f, n, v);
  }};
  t["h.0.attn.c_proj.bias"] = {"F64", {5}, [](auto& f, auto& n) {
    std::vector<double> v(5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / 3.0 - 1.0;
    expect_values(f, n, v);
  }};
  t["wpe.weight"] = {"F16", {2, 4}, [](auto& f, auto& n) {
    expect_values<float>(f, n, {1.0f, -0.5f, 65504.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -14),
                                0.333251953125f, -0.0f, std::numeric_limits<float>::infinity()});
  }};
  t["tokens"] = {"I64", {6}, [](auto& f, auto& n) {
    expect_values<std::int64_t>(f, n, {std::numeric_limits<std::int64_t>::min(), -1, 0, 50256,
                                       std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max()});
  }};
  t["positions"] = {"I32", {2, 3}, [](auto& f, auto& n) {
    expect_values<std::int32_t>(f, n, {-5, 0, 7, std::numeric_limits<std::int32_t>::max(),
                                       std::numeric_limits<std::int32_t>::min(), 42});
  }};
  t["i16"] = {"I16", {2}, [](auto& f, auto& n) { expect_values<std::int64_t>(f, n, {-32768, 32767}); }};
  t["u16"] = {"U16", {2}, [](auto& f, auto& n) { expect_values<std::int64_t>(f, n, {0, 65535}); }};
  t["u32"] = {"U32", {2}, [](auto& f, auto& n) { expect_values<std::uint32_t>(f, n, {0, 4294967295u}); }};
  t["u64"] = {"U64", {2}, [](auto& f, auto& n) {
    expect_values<std::uint64_t>(f, n, {0, std::numeric_limits<std::uint64_t>::max()});
  }};
  t["i8"] = {"I8", {2}, [](auto& f, auto& n) { expect_values<int>(f, n, {-128, 127}); }};
  t["mask"] = {"U8", {3}, [](auto& f, auto& n) { expect_values<std::uint8_t>(f, n, {0, 128, 255}); }};
  t["flags"] = {"BOOL", {4}, [](auto& f, auto& n) { expect_values<int>(f, n, {1, 0, 1, 1}); }};
  t["lr"] = {"F32", {}, [](auto& f, auto& n) { expect_values<float>(f, n, {6e-4f}); }};
  t["empty"] = {"F32", {0, 3}, [](auto& f, auto& n) { expect_values<float>(f, n, {}); }};
  // written with the low-level serialize_file (numpy has no bfloat16): (i - 7) * 3/8, exact in bf16
  t["ln_f.weight"] = {"BF16", {3, 5}, [](auto& f, auto& n) {
    std::vector<double> v(15);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<double>(i) - 7.0) * 0.375;
    expect_values(f, n, v);
  }};
  t["ln_f.bias"] = {"F32", {15}, [](auto& f, auto& n) {
    std::vector<float> v(15);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<float>(i) - 7.0f) * 0.375f;
    expect_values(f, n, v);
  }};
  return t;
}

const std::map<std::string, std::string> reference_metadata{
    {"format", "np"},
    {"source", "safetensors.numpy.save_file"},
    {"note", "quote \" backslash \\ newline \n ctrl \x01 utf8 \xc3\xa9 \xe2\x9c\x93"},
    {"writer", "safetensors.serialize_file"},
};

int read_sample(const std::string& path) {
  const auto f = weft::safetensors_file::open(path);
  const auto expected = reference_tensors();
  for (const std::string& name : f.names()) {
    const auto it = expected.find(name);
    if (it == expected.end()) {
      problem("unexpected tensor " + name);
      continue;
    }
    const auto& info = f.info(name);
    if (info.dtype != it->second.dtype) problem(name + ": dtype " + info.dtype + ", expected " + it->second.dtype);
    if (info.shape != it->second.shape) problem(name + ": shape " + d::shape_string(info.shape));
    else it->second.check(f, name);
  }
  for (const auto& [key, value] : f.metadata()) {
    const auto it = reference_metadata.find(key);
    if (it == reference_metadata.end()) problem("unexpected metadata key " + key);
    else if (it->second != value) problem("metadata " + key + " = " + d::st_quote(value));
  }
  if (f.size() == 0) problem("no tensors");
  if (failures != 0) return 1;
  std::printf("checked %zu tensors and %zu metadata entries of %s\n", f.size(), f.metadata().size(), path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "write" && std::string(argv[1]) != "read")) {
    std::fprintf(stderr, "usage: %s write|read <path>\n", argv[0]);
    return 2;
  }
  try {
    if (std::string(argv[1]) == "write") {
      write_sample(argv[2]);
      return 0;
    }
    return read_sample(argv[2]);
  } catch (const weft::checkpoint_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
