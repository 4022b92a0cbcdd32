// Distributed checkpoints (train/distributed_checkpoint.hpp) in a world of one: the same code
// path every rank of an MPI job runs. Resume continues the loss curve bit for bit; the step
// directory is what checkpoint.hpp's single-process load_checkpoint reads too; `latest` and
// keep_last rotation; and every damage — a corrupted byte, a truncated file, another model, a
// missing manifest — is one checkpoint_error line naming the file or tensor, with the step
// unchanged. (Resharding across strategies and a save killed half-way: tests/mpi/checkpoint_resume.cpp.)
#include "../common/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <weft/comm/single.hpp>
#include <weft/model.hpp>
#include <weft/io/distributed_checkpoint.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace weft;
using Catch::Matchers::Contains;

namespace {

using model = gpt<gpt_config<vocab<32>, context<8>, width<16>, heads<4>, depth<2>>>;
using wide_model = gpt<gpt_config<vocab<32>, context<8>, width<24>, heads<4>, depth<2>>>;
using Plan = plan<model, batch<micro<2>, seq<8>>, precision<double>>;
using WidePlan = plan<wide_model, batch<micro<2>, seq<8>>, precision<double>>;

train_options options(std::uint64_t seed = 7) {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.schedule = {2, 8, 0.1f};
  o.seed = seed;
  return o;
}

// Token of (step, row, position): any fixed function will do.
std::int32_t token_at(std::size_t step, std::size_t row, std::size_t pos) {
  std::uint64_t h = step * 1000003u + row * 101u + pos;
  h ^= h >> 17, h *= 0xed5ad4bbu, h ^= h >> 11;
  return static_cast<std::int32_t>(h % 32);
}

template <class Step>
std::vector<double> run(Step& st, std::size_t from, std::size_t n) {
  std::vector<double> losses;
  for (std::size_t s = from; s < from + n; ++s)
    losses.push_back(st.step([&](auto tok, auto tgt) {
                       for (std::size_t r = 0; r < 2; ++r)
                         for (std::size_t t = 0; t < 8; ++t) {
                           tok[r * 8 + t] = token_at(s, r, t);
                           tgt[r * 8 + t] = token_at(s, r, t + 1);
                         }
                     }).loss);
  return losses;
}

void run_single(training_step<Plan>& st, std::size_t n) {
  for (std::size_t s = 0; s < n; ++s)
    st.step([&](auto tok, auto tgt) {
      for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t t = 0; t < 8; ++t) {
          tok[r * 8 + t] = token_at(s, r, t);
          tgt[r * 8 + t] = token_at(s, r, t + 1);
        }
    });
}

template <class Step>
std::vector<double> params_of(Step& st) {
  auto p = st.inner().local().params();
  return {p.begin(), p.end()};
}

// The one-line message of a failing load, and that the step did not change.
template <class P>
std::string load_error(const std::filesystem::path& dir) {
  single_world world;
  auto st = make_training_step<P>(world, options(99));
  const auto before = params_of(st);
  std::string msg;
  try {
    load_checkpoint(st, world, dir);
  } catch (const checkpoint_error& e) {
    msg = e.what();
  }
  if (!msg.empty()) {
    CHECK(params_of(st) == before);
    CHECK(st.inner().step_count() == 0);
  }
  CHECK(msg.find('\n') == std::string::npos);
  return msg;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void flip_byte(const std::filesystem::path& file, std::uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("distributed checkpoint in a world of one resumes bit for bit", "[train][checkpoint][distributed]") {
  weft_test::temp_dir tmp;
  single_world world;
  const std::size_t n = 3;
  std::vector<double> straight, resumed;
  {
    auto st = make_training_step<Plan>(world, options());
    straight = run(st, 0, 2 * n);
  }
  {
    auto st = make_training_step<Plan>(world, options());
    resumed = run(st, 0, n);
    const auto dir = save_checkpoint(st, world, tmp.path(), checkpoint_state{{42, 3}});
    CHECK(dir == tmp.path() / "step-000000003");
    // The same bytes as checkpoint.hpp's single-process save of the same state.
    save_checkpoint(st.inner().local(), tmp / "single", checkpoint_state{{42, 3}});
    for (const char* f : {"model.safetensors", "optimizer.safetensors", "config.json"})
      CHECK(read_all(dir / f) == read_all(tmp / "single" / f));
    std::filesystem::remove_all(tmp / "single");
  }
  CHECK(std::filesystem::exists(tmp / "latest"));
  CHECK(std::filesystem::exists(tmp / "step-000000003" / "manifest.json"));
  CHECK(std::filesystem::exists(tmp / "step-000000003" / "config.json"));
  auto st = make_training_step<Plan>(world, options(1234));  // other initial parameters
  const checkpoint_state cs = load_checkpoint(st, world, tmp.path());
  CHECK(cs.sampler.seed == 42);
  CHECK(cs.sampler.step == 3);
  CHECK(st.inner().step_count() == n);
  const auto more = run(st, n, n);
  resumed.insert(resumed.end(), more.begin(), more.end());
  CHECK(resumed == straight);

  // The step directory is an ordinary checkpoint: checkpoint.hpp's loader reads it.
  training_step<Plan> single(options(555));
  const checkpoint_state cs1 = load_checkpoint(single, tmp / "step-000000003");
  CHECK(cs1.sampler.seed == 42);
  CHECK(single.step_count() == n);
}

TEST_CASE("distributed checkpoint keeps the last N and points latest at the newest", "[train][checkpoint][distributed]") {
  weft_test::temp_dir tmp;
  single_world world;
  auto st = make_training_step<Plan>(world, options());
  for (int i = 0; i < 4; ++i) {
    run(st, static_cast<std::size_t>(i), 1);
    save_checkpoint(st, world, tmp.path(), {}, checkpoint_options{.keep_last = 2});
  }
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"latest", "step-000000003", "step-000000004"});
  std::ifstream latest(tmp / "latest");
  std::string line;
  std::getline(latest, line);
  CHECK(line == "step-000000004");
  // A crashed save leaves a temporary directory: loading ignores it, the next save removes it.
  std::filesystem::create_directory(tmp / ".step-000000005.tmp");
  auto other = make_training_step<Plan>(world, options(3));
  load_checkpoint(other, world, tmp.path());
  CHECK(other.inner().step_count() == 4);
  run(st, 4, 1);
  save_checkpoint(st, world, tmp.path(), {}, checkpoint_options{.keep_last = 2});
  CHECK(!std::filesystem::exists(tmp / ".step-000000005.tmp"));
  CHECK(!std::filesystem::exists(tmp / "step-000000003"));
}

TEST_CASE("distributed checkpoint refuses damage with one line, the step unchanged", "[train][checkpoint][distributed]") {
  weft_test::temp_dir tmp;
  single_world world;
  {
    auto st = make_training_step<Plan>(world, options());
    run(st, 0, 2);
    save_checkpoint(st, world, tmp.path());
  }
  const auto dir = tmp / "step-000000002";
  const auto copy = [&](const std::string& name) {
    std::filesystem::copy(dir, tmp / name, std::filesystem::copy_options::recursive);
    return tmp / name;
  };

  SECTION("a good checkpoint loads") { CHECK(load_error<Plan>(tmp.path()).empty()); }
  SECTION("a corrupted byte in a tensor names the tensor") {
    const auto d = copy("corrupt");
    const auto f = safetensors_file::open(d / "model.safetensors");
    const auto& info = f.info("h.1.mlp.c_fc.weight");
    const std::uint64_t at = 8 + f.header_length() + info.data_begin + 17;
    flip_byte(d / "model.safetensors", at);
    CHECK_THAT(load_error<Plan>(d), Contains("model.safetensors: tensor 'h.1.mlp.c_fc.weight' does not match its checksum"));
  }
  SECTION("a corrupted byte in a moment names the moment") {
    const auto d = copy("corrupt_opt");
    const auto f = safetensors_file::open(d / "optimizer.safetensors");
    const std::uint64_t at = 8 + f.header_length() + f.info("v.wpe.weight").data_begin + 3;
    flip_byte(d / "optimizer.safetensors", at);
    CHECK_THAT(load_error<Plan>(d), Contains("tensor 'v.wpe.weight' does not match its checksum"));
  }
  SECTION("a truncated file") {
    const auto d = copy("truncated");
    const auto size = std::filesystem::file_size(d / "optimizer.safetensors");
    std::filesystem::resize_file(d / "optimizer.safetensors", size - 100);
    CHECK_THAT(load_error<Plan>(d), Contains("optimizer.safetensors has " + std::to_string(size - 100) +
                                                      " bytes, the manifest says " + std::to_string(size)));
  }
  SECTION("a corrupted manifest") {
    const auto d = copy("bad_manifest");
    std::filesystem::resize_file(d / "manifest.json", 50);
    CHECK_THAT(load_error<Plan>(d), Contains("manifest.json: invalid JSON"));
  }
  SECTION("a step directory without its manifest (a save that did not finish)") {
    const auto d = copy("step-000000009");
    std::filesystem::remove(d / "manifest.json");
    CHECK_THAT(load_error<Plan>(d), Contains("holds no checkpoint"));
  }
  SECTION("another model") {
    CHECK_THAT(load_error<WidePlan>(tmp.path()), Contains("holds a different model"));
  }
  SECTION("nothing there") {
    CHECK_THAT(load_error<Plan>(tmp / "nowhere"), Contains("does not exist"));
  }
}

TEST_CASE("single-process save_checkpoint is the same engine: manifest, checksums, loadable by the distributed loader",
          "[train][checkpoint][distributed]") {
  weft_test::temp_dir tmp;
  single_world world;
  training_step<Plan> st(options());
  run_single(st, 2);
  save_checkpoint(st, tmp / "single", checkpoint_state{{5, 6}});
  CHECK(std::filesystem::exists(tmp / "single" / "manifest.json"));
  // The distributed loader takes a step directory written by one process (here in a world of one;
  // tests/mpi/checkpoint_resume.cpp loads across world sizes).
  auto dist = make_training_step<Plan>(world, options(77));
  const checkpoint_state cs = load_checkpoint(dist, world, tmp / "single");
  CHECK(cs.sampler.step == 6);
  CHECK(params_of(dist) == std::vector<double>(st.params().begin(), st.params().end()));
  // A flipped byte is caught by the single-process loader too, naming the tensor; the step is unchanged.
  const auto f = safetensors_file::open(tmp / "single" / "optimizer.safetensors");
  flip_byte(tmp / "single" / "optimizer.safetensors", 8 + f.header_length() + f.info("m.ln_f.bias").data_begin + 5);
  training_step<Plan> other(options(88));
  const std::vector<double> before(other.params().begin(), other.params().end());
  std::string msg;
  try {
    load_checkpoint(other, tmp / "single");
  } catch (const checkpoint_error& e) {
    msg = e.what();
  }
  CHECK_THAT(msg, Contains("optimizer.safetensors: tensor 'm.ln_f.bias' does not match its checksum"));
  CHECK(std::vector<double>(other.params().begin(), other.params().end()) == before);
  CHECK(other.step_count() == 0);
}
