// Checkpoints: a resumed run continues the loss curve bit for bit (gpt, llama, f32, f64, with a
// learning-rate schedule and gradient accumulation); model.safetensors holds exactly Hugging Face
// GPT-2's names and (Conv1D) layouts; weights round-trip; files of another model, missing
// directories, tensors and wrong shapes are one-line checkpoint_errors that leave the training
// step unchanged; GPT2LMHeadModel-style files ("transformer." prefix, mask buffers, a tied
// lm_head.weight) load. Atomic saves into a root (step directories, `latest`, keep-last-N): a save
// killed at any of its points (SIGKILL in a forked child) leaves a checkpoint that loads verified,
// the last good one or the new one; a directory without its manifest, or with any byte flipped,
// is refused with one line.
#include <weft/comm/single.hpp>
#include <weft/model.hpp>
#include <weft/parallel/plan.hpp>
#include <weft/data/batch_sampler.hpp>
#include <weft/io/checkpoint.hpp>
#include <weft/io/safetensors.hpp>
#include <weft/data/splitmix64.hpp>
#include <weft/data/token_buffer.hpp>
#include <weft/exec/training_step.hpp>

#include "../common/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace weft;
namespace fs = std::filesystem;

using gpt_tiny = gpt<gpt_config<vocab<64>, context<16>, width<16>, heads<2>, depth<2>>>;
using gpt_wide = gpt<gpt_config<vocab<64>, context<16>, width<32>, heads<2>, depth<2>>>;
using llama_tiny = llama<llama_config<vocab<64>, context<16>, width<16>, heads<2>, kv_heads<1>, depth<2>>>;

using gpt_f32 = plan<gpt_tiny, batch<micro<2>, seq<8>>>;
using gpt_f64 = plan<gpt_tiny, batch<micro<2>, seq<8>>, precision<double>>;
using gpt_wide_f32 = plan<gpt_wide, batch<micro<2>, seq<8>>>;
using llama_f32 = plan<llama_tiny, batch<micro<2>, seq<8>>>;
using gpt_bf16 = plan<gpt_tiny, batch<micro<2>, seq<8>>, precision<bf16, f32>>;
using gpt_f16 = plan<gpt_tiny, batch<micro<2>, seq<8>>, precision<f16, f32>>;

// ---- helpers ----

// 4096 tokens below `vocab` with some structure (a noisy repeating pattern), so training moves.
token_buffer synthetic_tokens(std::size_t vocab) {
  token_buffer b;
  splitmix64 g{2024};
  for (std::size_t i = 0; i < 4096; ++i) {
    const auto t = (i % 7 == 3) ? g.below(vocab) : (i * 5 + i / 11) % vocab;
    b.push_back(static_cast<std::int32_t>(t));
  }
  return b;
}

template <class T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
template <class T>
std::vector<T> copy_of(std::span<T> s) {
  return {s.begin(), s.end()};
}

// Losses and learning rates of `steps` optimizer steps of `st` drawing from `sampler`.
struct curve {
  std::vector<double> loss, lr;
};
template <class Plan>
void run_steps(training_step<Plan>& st, batch_sampler<Plan::B, Plan::S>& sampler, std::size_t steps, curve& c) {
  for (std::size_t i = 0; i < steps; ++i) {
    const step_metrics m = st.step([&](auto tokens, auto targets) { sampler.next(tokens, targets); });
    c.loss.push_back(m.loss);
    c.lr.push_back(m.lr);
  }
}

std::string curve_string(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(17);
  for (double x : v) s << x << ' ';
  return s.str();
}

// 2n steps straight vs n steps, save_checkpoint, a fresh training_step (other init seed) and
// sampler (other seed), load_checkpoint, n more steps: the same losses, learning rates,
// parameters, moments and step count, bit for bit.
template <class Plan>
void check_bit_identical_resume(train_options o, std::size_t n) {
  const token_buffer data = synthetic_tokens(Plan::vocab_size);
  constexpr std::uint64_t data_seed = 77;

  training_step<Plan> straight(o);
  batch_sampler<Plan::B, Plan::S> straight_sampler(data, data_seed);
  curve want;
  run_steps(straight, straight_sampler, 2 * n, want);

  weft_test::temp_dir tmp;
  const fs::path dir = tmp / "ckpt";
  curve got;
  // example-begin checkpoint-resume
  {
    training_step<Plan> first(o);
    batch_sampler<Plan::B, Plan::S> sampler(data, data_seed);
    run_steps(first, sampler, n, got);
    save_checkpoint(first, dir, checkpoint_state{sampler.state()});
  }
  train_options other = o;
  other.seed = o.seed + 1000;  // different initial parameters: everything must come from the checkpoint
  training_step<Plan> resumed(other);
  batch_sampler<Plan::B, Plan::S> sampler(data, data_seed + 1);  // seed and position come from the checkpoint
  const checkpoint_state cs = load_checkpoint(resumed, dir);
  sampler.set_state(cs.sampler);
  CHECK(cs.sampler.seed == data_seed);
  CHECK(cs.sampler.step == n * o.grad_accum);
  CHECK(resumed.step_count() == n);
  run_steps(resumed, sampler, n, got);
  // example-end checkpoint-resume

  INFO("straight: " << curve_string(want.loss));
  INFO("resumed:  " << curve_string(got.loss));
  REQUIRE(got.loss.size() == want.loss.size());
  for (std::size_t i = 0; i < want.loss.size(); ++i) {
    INFO("step " << i);
    CHECK(same_bits<double>(std::span(&got.loss[i], 1), std::span(&want.loss[i], 1)));
    CHECK(got.lr[i] == want.lr[i]);
  }
  CHECK(resumed.step_count() == straight.step_count());
  CHECK(sampler.state() == straight_sampler.state());
  using T = typename Plan::value_type;
  using M = typename Plan::master_type;  // moments and master weights (T unless mixed precision)
  CHECK(same_bits<T>(resumed.params(), straight.params()));
  CHECK(same_bits<M>(resumed.adam_m(), straight.adam_m()));
  CHECK(same_bits<M>(resumed.adam_v(), straight.adam_v()));
  if constexpr (Plan::mixed_precision) CHECK(same_bits<M>(resumed.master(), straight.master()));
  // The dynamic loss scale (f16) continues too: 1 and inactive otherwise.
  CHECK(resumed.loss_scale_state().scale() == straight.loss_scale_state().scale());
  CHECK(resumed.loss_scale_state().good_steps() == straight.loss_scale_state().good_steps());
  // The run did something: the loss moved.
  CHECK(want.loss.back() != want.loss.front());
}

train_options base_options() {
  train_options o;
  o.optimizer.lr = 1e-2f;
  o.seed = 11;
  return o;
}
train_options scheduled_options(std::size_t total) {
  train_options o = base_options();
  o.schedule = {3, total, 0.1f};  // warm-up 3 steps, cosine to step `total`
  return o;
}

// Copies every tensor of `src` to `out` except those `skip` names; returns the writer's data
// (referenced from the mapping of `src`, which must stay open until out.write).
void copy_tensors(const safetensors_file& src, safetensors_writer& out, const std::set<std::string>& skip = {}) {
  for (const std::string& name : src.names()) {
    if (skip.count(name)) continue;
    const auto& info = src.info(name);
    out.add(name, info.dtype, info.shape, info.bytes.data(), info.bytes.size());
  }
  for (const auto& [k, v] : src.metadata()) out.set_metadata(k, v);
}

const param_info& info_of(const std::vector<param_info>& infos, const std::string& name) {
  for (const auto& p : infos)
    if (p.name == name) return p;
  FAIL("no parameter " << name);
  return infos.front();
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The message of the checkpoint_error that `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const checkpoint_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- bit-identical resume ----

TEST_CASE("resume: gpt f32, constant learning rate", "[train][checkpoint][resume]") {
  check_bit_identical_resume<gpt_f32>(base_options(), 4);
}

TEST_CASE("resume: gpt f32, warm-up + cosine schedule (the lr depends on the restored step)",
          "[train][checkpoint][resume]") {
  const train_options o = scheduled_options(8);
  // The resumed half runs at learning rates the schedule gives only for steps >= 4.
  CHECK(o.schedule.at(4, o.optimizer.lr) != o.schedule.at(0, o.optimizer.lr));
  CHECK(o.schedule.at(6, o.optimizer.lr) < o.schedule.at(4, o.optimizer.lr));
  check_bit_identical_resume<gpt_f32>(o, 4);
}

TEST_CASE("resume: gpt f32 with gradient accumulation (the sampler position is 2 batches per step)",
          "[train][checkpoint][resume]") {
  train_options o = scheduled_options(6);
  o.grad_accum = 2;
  check_bit_identical_resume<gpt_f32>(o, 3);
}

TEST_CASE("resume: gpt precision<double>", "[train][checkpoint][resume]") {
  check_bit_identical_resume<gpt_f64>(scheduled_options(8), 4);
}

TEST_CASE("resume: llama f32", "[train][checkpoint][resume]") {
  check_bit_identical_resume<llama_f32>(scheduled_options(8), 4);
}

TEST_CASE("resume: gpt precision<bf16, f32> (the f32 master weights and moments are in the files)",
          "[train][checkpoint][resume][bf16]") {
  check_bit_identical_resume<gpt_bf16>(scheduled_options(8), 4);
  // The files are an f32 run's: the master weights as the model's tensors, f32 moments.
  const token_buffer data = synthetic_tokens(gpt_bf16::vocab_size);
  weft_test::temp_dir tmp;
  training_step<gpt_bf16> st(base_options());
  batch_sampler<2, 8> sampler(data, 3);
  curve c;
  run_steps(st, sampler, 2, c);
  save_checkpoint(st, tmp / "ckpt", checkpoint_state{sampler.state()});
  const auto model = safetensors_file::open(tmp / "ckpt" / "model.safetensors");
  const auto opt = safetensors_file::open(tmp / "ckpt" / "optimizer.safetensors");
  for (const std::string& name : model.names()) CHECK(model.info(name).dtype == "F32");
  for (const std::string& name : opt.names()) CHECK(opt.info(name).dtype == "F32");
  const param_info& wte = info_of(st.parameter_infos(), "wte.weight");
  const auto saved = model.read_as<float>("wte.weight");
  REQUIRE(saved.size() == wte.size);
  std::size_t master_equal = 0, rounded_differs = 0;
  for (std::size_t i = 0; i < wte.size; ++i) {
    master_equal += saved[i] == st.master()[wte.offset + i];
    rounded_differs += saved[i] != static_cast<float>(st.params()[wte.offset + i]);
  }
  CHECK(master_equal == wte.size);  // the master, not the bf16 copy
  CHECK(rounded_differs > 0);
}

TEST_CASE("resume: gpt precision<f16, f32> with its dynamic loss scale", "[train][checkpoint][resume][f16]") {
  train_options o = scheduled_options(8);
  o.loss_scale.init_scale = 1024;
  o.loss_scale.growth_interval = 3;  // the scale doubles after steps 3 and 6: the saved one is not the initial one
  check_bit_identical_resume<gpt_f16>(o, 4);
  training_step<gpt_f16> st(o);
  const token_buffer data = synthetic_tokens(gpt_f16::vocab_size);
  batch_sampler<2, 8> sampler(data, 3);
  curve c;
  run_steps(st, sampler, 4, c);
  REQUIRE(st.loss_scale_state().scale() == 2048);  // grown once
  weft_test::temp_dir tmp;
  save_checkpoint(st, tmp / "ckpt", checkpoint_state{sampler.state()});
  CHECK(safetensors_file::open(tmp / "ckpt" / "optimizer.safetensors").metadata().at("loss_scale") == "2048");
  training_step<gpt_f16> fresh(o);
  CHECK(fresh.loss_scale_state().scale() == 1024);
  const checkpoint_state cs = load_checkpoint(fresh, tmp / "ckpt");
  CHECK(cs.loss_scale == 2048);
  CHECK(fresh.loss_scale_state().scale() == 2048);
  CHECK(fresh.loss_scale_state().good_steps() == 1);
}

TEST_CASE("resume across precisions: an f32 checkpoint into precision<bf16, f32>, and back",
          "[train][checkpoint][resume][bf16]") {
  const token_buffer data = synthetic_tokens(gpt_f32::vocab_size);
  weft_test::temp_dir tmp;
  training_step<gpt_f32> f32_run(base_options());
  batch_sampler<2, 8> sampler(data, 9);
  curve c;
  run_steps(f32_run, sampler, 3, c);
  save_checkpoint(f32_run, tmp / "f32", checkpoint_state{sampler.state()});
  train_options other = base_options();
  other.seed = 99;
  training_step<gpt_bf16> mixed(other);
  load_checkpoint(mixed, tmp / "f32");
  // The master is the f32 run's parameters exactly, the bf16 parameters its rounded copy, the
  // moments the f32 run's.
  CHECK(same_bits<float>(mixed.master(), f32_run.params()));
  CHECK(same_bits<float>(mixed.adam_m(), f32_run.adam_m()));
  CHECK(same_bits<float>(mixed.adam_v(), f32_run.adam_v()));
  std::size_t rounded = 0;
  for (std::size_t i = 0; i < gpt_f32::param_count; ++i)
    rounded += mixed.params()[i].bits == bf16(f32_run.params()[i]).bits;
  CHECK(rounded == gpt_f32::param_count);
  CHECK(mixed.step_count() == 3);
  // Back: the mixed run's checkpoint loads into f32 with the master as the parameters.
  run_steps(mixed, sampler, 1, c);
  save_checkpoint(mixed, tmp / "bf16", checkpoint_state{sampler.state()});
  training_step<gpt_f32> back(other);
  load_checkpoint(back, tmp / "bf16");
  CHECK(same_bits<float>(back.params(), mixed.master()));
  CHECK(same_bits<float>(back.adam_m(), mixed.adam_m()));
  CHECK(back.step_count() == 4);
}

TEST_CASE("resume: the optimizer state matters (weights alone do not continue the curve)",
          "[train][checkpoint][resume]") {
  // A control for the tests above: restoring only the parameters gives a different curve.
  const train_options o = base_options();
  const token_buffer data = synthetic_tokens(gpt_f32::vocab_size);
  weft_test::temp_dir tmp;
  training_step<gpt_f32> a(o), b(o);
  batch_sampler<2, 8> sa(data, 5);
  curve ca, cb;
  run_steps(a, sa, 3, ca);
  save_checkpoint(a, tmp / "ckpt", checkpoint_state{sa.state()});
  run_steps(a, sa, 2, ca);
  load_weights(b, tmp / "ckpt" / "model.safetensors");  // no moments, step 0
  batch_sampler<2, 8> sb(data, 5);
  sb.set_state({5, 3});
  run_steps(b, sb, 2, cb);
  CHECK(cb.loss[0] == ca.loss[3]);  // same parameters and batch: same loss before the update
  CHECK(cb.loss[1] != ca.loss[4]);  // a different update
}

// ---- the files ----

TEST_CASE("checkpoint files: model.safetensors holds exactly Hugging Face GPT-2's names and layouts",
          "[train][checkpoint][hf]") {
  train_options o = base_options();
  training_step<gpt_f32> st(o);
  const token_buffer data = synthetic_tokens(gpt_f32::vocab_size);
  batch_sampler<2, 8> sampler(data, 3);
  curve c;
  run_steps(st, sampler, 2, c);  // moments non-zero, step 2
  weft_test::temp_dir tmp;
  save_checkpoint(st, tmp / "ckpt", checkpoint_state{sampler.state()});
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "config.json"})
    CHECK(fs::is_regular_file(tmp / "ckpt" / f));

  // transformers' GPT2Model: n_embd C = 16, n_layer 2, vocab 64, n_positions 16, n_inner 4C;
  // Conv1D stores its weight as (in, out).
  constexpr std::int64_t C = 16, V = 64, P = 16, L = 2;
  std::map<std::string, std::vector<std::int64_t>> hf{{"wte.weight", {V, C}}, {"wpe.weight", {P, C}},
                                                      {"ln_f.weight", {C}},   {"ln_f.bias", {C}}};
  for (std::int64_t i = 0; i < L; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    hf[h + "ln_1.weight"] = {C};
    hf[h + "ln_1.bias"] = {C};
    hf[h + "attn.c_attn.weight"] = {C, 3 * C};
    hf[h + "attn.c_attn.bias"] = {3 * C};
    hf[h + "attn.c_proj.weight"] = {C, C};
    hf[h + "attn.c_proj.bias"] = {C};
    hf[h + "ln_2.weight"] = {C};
    hf[h + "ln_2.bias"] = {C};
    hf[h + "mlp.c_fc.weight"] = {C, 4 * C};
    hf[h + "mlp.c_fc.bias"] = {4 * C};
    hf[h + "mlp.c_proj.weight"] = {4 * C, C};
    hf[h + "mlp.c_proj.bias"] = {C};
  }
  const auto f = safetensors_file::open(tmp / "ckpt" / "model.safetensors");
  std::set<std::string> names(f.names().begin(), f.names().end());
  std::set<std::string> want;
  for (const auto& [name, shape] : hf) want.insert(name);
  CHECK(names == want);  // exactly these: no lm_head.weight (tied), nothing else
  for (const auto& [name, shape] : hf) {
    INFO(name);
    REQUIRE(f.contains(name));
    CHECK(f.info(name).dtype == "F32");
    CHECK(f.info(name).shape == shape);
  }
  CHECK(f.metadata().at("format") == "pt");

  // Values: the (in, out) weights are the transposes of weft's in-memory (out, in) ones; the rest
  // are copies.
  const auto& infos = st.parameter_infos();
  std::size_t transposed = 0;
  for (const auto& [name, shape] : hf) {
    INFO(name);
    const param_info& p = info_of(infos, name);
    const std::vector<float> file = f.read_as<float>(name);
    const float* mem = st.params().data() + p.offset;
    if (name.ends_with("c_attn.weight") || name.ends_with("c_proj.weight") || name.ends_with("c_fc.weight")) {
      ++transposed;
      const auto in = static_cast<std::size_t>(shape[0]), out = static_cast<std::size_t>(shape[1]);
      REQUIRE(p.shape == std::vector<std::size_t>{out, in});  // weft: (out, in), like torch.nn.Linear
      bool equal = true;
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t j = 0; j < out; ++j) equal = equal && file[i * out + j] == mem[j * in + i];
      CHECK(equal);
    } else {
      CHECK(same_bits<float>(file, std::span<const float>(mem, p.size)));
    }
  }
  CHECK(transposed == 4 * L);

  // config.json: GPT-2's keys with this model's sizes.
  const std::string cfg = read_text(tmp / "ckpt" / "config.json");
  INFO(cfg);
  for (const char* key : {"\"model_type\": \"gpt2\"", "\"n_embd\": 16", "\"n_layer\": 2", "\"n_head\": 2",
                          "\"vocab_size\": 64", "\"n_positions\": 16", "\"n_inner\": 64",
                          "\"activation_function\": \"gelu_new\"", "\"layer_norm_epsilon\": 1e-05",
                          "\"tie_word_embeddings\": true", "\"GPT2LMHeadModel\""})
    CHECK(cfg.find(key) != std::string::npos);
  CHECK(cfg.front() == '{');
  CHECK(cfg.find_last_not_of(" \n") == cfg.rfind('}'));

  // optimizer.safetensors: both moments of every parameter in weft's layout, the position.
  const auto opt = safetensors_file::open(tmp / "ckpt" / "optimizer.safetensors");
  CHECK(opt.size() == 2 * infos.size());
  for (const param_info& p : infos) {
    INFO(p.name);
    const std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
    CHECK(opt.info("m." + p.name).shape == shape);
    CHECK(same_bits<float>(opt.read_as<float>("m." + p.name), std::span<const float>(st.adam_m().data() + p.offset, p.size)));
    CHECK(same_bits<float>(opt.read_as<float>("v." + p.name), std::span<const float>(st.adam_v().data() + p.offset, p.size)));
  }
  CHECK(opt.metadata().at("step") == "2");
  CHECK(opt.metadata().at("sampler_seed") == "3");
  CHECK(opt.metadata().at("sampler_step") == "2");
  CHECK(f.metadata().at("step") == "2");
}

TEST_CASE("checkpoint files: save_weights -> load_weights into another initialisation gives the same parameters",
          "[train][checkpoint]") {
  train_options oa = base_options(), ob = base_options();
  ob.seed = oa.seed + 1;
  weft_test::temp_dir tmp;
  SECTION("gpt") {
    training_step<gpt_f32> a(oa), b(ob);
    REQUIRE_FALSE(same_bits<float>(a.params(), b.params()));
    save_weights(a, tmp / "w.safetensors");
    load_weights(b, tmp / "w.safetensors");
    CHECK(same_bits<float>(a.params(), b.params()));
    CHECK(b.step_count() == 0);
  }
  SECTION("llama (weft's own names and layouts)") {
    training_step<llama_f32> a(oa), b(ob);
    REQUIRE_FALSE(same_bits<float>(a.params(), b.params()));
    save_weights(a, tmp / "w.safetensors");
    load_weights(b, tmp / "w.safetensors");
    CHECK(same_bits<float>(a.params(), b.params()));
  }
  SECTION("f64 file into an f32 model, f32 file into an f64 model (converted)") {
    training_step<gpt_f64> d(oa);
    training_step<gpt_f32> f(ob);
    save_weights(d, tmp / "d.safetensors");
    load_weights(f, tmp / "d.safetensors");
    bool rounded = true;
    for (std::size_t i = 0; i < gpt_f32::param_count; ++i) rounded = rounded && f.params()[i] == static_cast<float>(d.params()[i]);
    CHECK(rounded);
    save_weights(f, tmp / "f.safetensors");
    training_step<gpt_f64> d2(ob);
    load_weights(d2, tmp / "f.safetensors");
    bool widened = true;
    for (std::size_t i = 0; i < gpt_f32::param_count; ++i) widened = widened && d2.params()[i] == static_cast<double>(f.params()[i]);
    CHECK(widened);
  }
}

// ---- errors ----

TEST_CASE("checkpoint errors: another model, missing directory, tensor or file, wrong shape", "[train][checkpoint][errors]") {
  weft_test::temp_dir tmp;
  const train_options o = base_options();
  training_step<gpt_f32> st(o);
  const std::vector<float> before = copy_of(st.params());
  const std::vector<float> m_before = copy_of(st.adam_m());
  auto unchanged = [&] {
    return same_bits<float>(st.params(), before) && same_bits<float>(st.adam_m(), m_before) && st.step_count() == 0;
  };
  auto one_line = [](const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; };

  SECTION("a checkpoint of another width names both models") {
    training_step<gpt_wide_f32> wide(o);
    save_checkpoint(wide, tmp / "wide");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "wide"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("weft::load_checkpoint") != std::string::npos);
    CHECK(e.find("different model") != std::string::npos);
    CHECK(e.find("width=32") != std::string::npos);  // the saved model
    CHECK(e.find("width=16") != std::string::npos);  // this one
    CHECK(unchanged());
    // load_weights on its own: the first tensor whose shape differs.
    const std::string w = error_of([&] { load_weights(st, tmp / "wide" / "model.safetensors"); });
    INFO(w);
    CHECK(one_line(w));
    CHECK(w.find("wte.weight") != std::string::npos);
    CHECK(w.find("[64, 32]") != std::string::npos);
    CHECK(w.find("[64, 16]") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a llama checkpoint into a gpt") {
    training_step<llama_f32> l(o);
    save_checkpoint(l, tmp / "llama");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "llama"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("llama") != std::string::npos);
    CHECK(e.find("gpt2") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a missing directory") {
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "nowhere"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find((tmp / "nowhere").string()) != std::string::npos);
    CHECK(e.find("does not exist") != std::string::npos);
  }
  SECTION("a file where the directory should be") {
    weft_test::write_bytes(tmp / "plain", "x");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "plain"); });
    INFO(e);
    CHECK(e.find("not a directory") != std::string::npos);
  }
  SECTION("a directory without optimizer.safetensors (weights only)") {
    fs::create_directories(tmp / "weights_only");
    save_weights(st, tmp / "weights_only" / "model.safetensors");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "weights_only"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("no optimizer.safetensors") != std::string::npos);
    CHECK(e.find("load_weights") != std::string::npos);
  }
  SECTION("a missing weights file") {
    const std::string e = error_of([&] { load_weights(st, tmp / "absent.safetensors"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("absent.safetensors") != std::string::npos);
  }

  // The remaining cases edit a good checkpoint of this model.
  training_step<gpt_f32> other([&] { train_options x = o; x.seed = 99; return x; }());
  save_checkpoint(other, tmp / "good");
  // Replaces `file` of the good checkpoint by what `edit` adds to a writer (reading the old file).
  auto rewrite = [&](const std::string& file, auto&& edit) {
    const fs::path path = tmp / "good" / file;
    const auto src = safetensors_file::open(path);
    safetensors_writer w;
    edit(src, w);
    w.write(path);  // atomic: a new file renamed over the old one, which stays mapped
  };

  SECTION("a missing tensor") {
    rewrite("model.safetensors", [](const safetensors_file& src, safetensors_writer& w) {
      copy_tensors(src, w, {"h.1.mlp.c_fc.bias"});
    });
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("has no tensor 'h.1.mlp.c_fc.bias'") != std::string::npos);
    CHECK(e.find("model.safetensors") != std::string::npos);
    CHECK(unchanged());  // although h.0 and the rest were all there
    const std::string w = error_of([&] { load_weights(st, tmp / "good" / "model.safetensors"); });
    CHECK(w.find("has no tensor 'h.1.mlp.c_fc.bias'") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a missing moment") {
    rewrite("optimizer.safetensors", [](const safetensors_file& src, safetensors_writer& w) {
      copy_tensors(src, w, {"v.ln_f.bias"});
    });
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("'v.ln_f.bias'") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a Conv1D weight stored (out, in) instead of (in, out)") {
    rewrite("model.safetensors", [&](const safetensors_file& src, safetensors_writer& w) {
      copy_tensors(src, w, {"h.0.attn.c_attn.weight"});
      const param_info& p = info_of(other.parameter_infos(), "h.0.attn.c_attn.weight");
      w.add("h.0.attn.c_attn.weight", "F32", {48, 16}, other.params().data() + p.offset, p.size * sizeof(float));
    });
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("'h.0.attn.c_attn.weight' has shape [48, 16], this model needs [16, 48]") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("an integer tensor") {
    rewrite("model.safetensors", [&](const safetensors_file& src, safetensors_writer& w) {
      copy_tensors(src, w, {"ln_f.bias"});
      static const std::vector<std::int32_t> ints(16, 1);
      w.add("ln_f.bias", {16}, ints);
    });
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("'ln_f.bias' has dtype I32") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("model and optimizer files of different saves") {
    training_step<gpt_f32> later(o);
    save_weights(later, tmp / "later.safetensors");
    {
      const auto l = safetensors_file::open(tmp / "later.safetensors");
      safetensors_writer w;
      copy_tensors(l, w);
      w.set_metadata("step", "7");  // as save_checkpoint at step 7 writes it
      w.write(tmp / "good" / "model.safetensors");
    }
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("model.safetensors is of step 7 but optimizer.safetensors of step 0") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a step that is not a number") {
    rewrite("optimizer.safetensors", [](const safetensors_file& src, safetensors_writer& w) {
      copy_tensors(src, w);
      w.set_metadata("step", "12x");
    });
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "good"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("metadata 'step' is '12x'") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("the unedited checkpoint loads (the edits above are what fails)") {
    CHECK_NOTHROW(load_checkpoint(st, tmp / "good"));
    CHECK(same_bits<float>(st.params(), other.params()));
  }
}

// ---- files written the way transformers writes them ----

TEST_CASE("load_weights: a 'transformer.' prefix, mask buffers and a tied lm_head.weight (GPT2LMHeadModel)",
          "[train][checkpoint][hf]") {
  train_options oa = base_options(), ob = base_options();
  ob.seed = 4242;
  training_step<gpt_f32> src(oa), dst(ob);
  REQUIRE_FALSE(same_bits<float>(src.params(), dst.params()));
  constexpr std::int64_t C = 16, n = 16;

  // Each tensor in Hugging Face's layout, built here from weft's (out, in) weights.
  std::vector<std::vector<float>> keep;  // the data the writer references
  std::vector<double> wte64;
  safetensors_writer w;
  for (const param_info& p : src.parameter_infos()) {
    const float* mem = src.params().data() + p.offset;
    const bool conv1d = p.name.ends_with("c_attn.weight") || p.name.ends_with("c_proj.weight") ||
                        p.name.ends_with("c_fc.weight");
    if (p.name == "wte.weight") {  // stored as F64: converted on load
      wte64.assign(mem, mem + p.size);
      w.add("transformer.wte.weight", {static_cast<std::int64_t>(p.shape[0]), static_cast<std::int64_t>(p.shape[1])}, wte64);
      continue;
    }
    if (conv1d) {
      const std::size_t out = p.shape[0], in = p.shape[1];
      std::vector<float>& t = keep.emplace_back(p.size);
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t j = 0; j < out; ++j) t[i * out + j] = mem[j * in + i];
      w.add("transformer." + p.name, {static_cast<std::int64_t>(in), static_cast<std::int64_t>(out)}, t);
    } else {
      std::vector<std::int64_t> shape(p.shape.begin(), p.shape.end());
      w.add("transformer." + p.name, "F32", shape, mem, p.size * sizeof(float));
    }
  }
  // GPT-2's non-parameter buffers as older transformers versions saved them, and the tied head.
  std::vector<float> mask(n * n);  // (1, 1, n_positions, n_positions) lower triangle
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) mask[static_cast<std::size_t>(i * n + j)] = j <= i ? 1.0f : 0.0f;
  static const std::vector<float> masked_bias{-1e4f};
  for (int i = 0; i < 2; ++i) {
    w.add("transformer.h." + std::to_string(i) + ".attn.bias", {1, 1, n, n}, mask);
    w.add("transformer.h." + std::to_string(i) + ".attn.masked_bias", {}, masked_bias);
  }
  const param_info& wte = info_of(src.parameter_infos(), "wte.weight");
  w.add("lm_head.weight", "F32", {64, C}, src.params().data() + wte.offset,
        wte.size * sizeof(float));
  w.set_metadata("format", "pt");
  weft_test::temp_dir tmp;
  w.write(tmp / "hf.safetensors");

  load_weights(dst, tmp / "hf.safetensors");
  CHECK(same_bits<float>(dst.params(), src.params()));

  // And the same forward pass: identical logits.
  const token_buffer data = synthetic_tokens(64);
  batch_sampler<2, 8> s(data, 1);
  s.next(src.tokens(), src.targets());
  s.fill(0, dst.tokens(), dst.targets());
  CHECK(src.loss() == dst.loss());
}

// ---- atomic saves into a root; nothing loads unverified ----

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}
void flip_byte(const fs::path& file, std::uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}
bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }
// The message of whatever `f` throws ("" if nothing).
template <class F>
std::string any_error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return std::string(e.what()).empty() ? "(empty message)" : e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("atomic save into a root: step directories, latest, keep the last N, load through latest",
          "[train][checkpoint][atomic]") {
  weft_test::temp_dir tmp;
  const fs::path root = tmp / "ck";
  const token_buffer data = synthetic_tokens(64);
  training_step<gpt_f32> st(base_options());
  batch_sampler<2, 8> sampler(data, 5);
  single_world world;
  curve c;
  std::vector<std::vector<float>> params;
  for (int i = 1; i <= 4; ++i) {
    run_steps(st, sampler, 1, c);
    const fs::path dir = save_checkpoint(st, world, root, checkpoint_state{sampler.state()}, checkpoint_options{.keep_last = 2});
    CHECK(dir == root / ("step-00000000" + std::to_string(i)));
    params.push_back(copy_of(st.params()));
  }
  CHECK(names_in(root) == std::vector<std::string>{"latest", "step-000000003", "step-000000004"});
  CHECK(read_text(root / "latest") == "step-000000004\n");
  // A step directory is an ordinary checkpoint: Hugging Face's files and the verified extras.
  CHECK(names_in(root / "step-000000004") ==
        std::vector<std::string>{"config.json", "manifest.json", "model.safetensors", "optimizer.safetensors"});
  CHECK(read_text(root / "step-000000004" / "config.json").find("\"model_type\": \"gpt2\"") != std::string::npos);

  train_options other = base_options();
  other.seed = 999;
  training_step<gpt_f32> fresh(other);
  const checkpoint_state cs = load_checkpoint(fresh, root);  // the root: its latest
  CHECK(fresh.step_count() == 4);
  CHECK(cs.sampler.step == 4);
  CHECK(same_bits<float>(fresh.params(), params[3]));
  load_checkpoint(fresh, root / "step-000000003");  // a step directory by name
  CHECK(fresh.step_count() == 3);
  CHECK(same_bits<float>(fresh.params(), params[2]));
  // keep_last 0 keeps all; saving the same step again replaces it.
  save_checkpoint(st, world, root, checkpoint_state{sampler.state()});
  run_steps(st, sampler, 1, c);
  save_checkpoint(st, world, root, checkpoint_state{sampler.state()});
  CHECK(names_in(root) == std::vector<std::string>{"latest", "step-000000003", "step-000000004", "step-000000005"});
}

TEST_CASE("a checkpoint directory without its manifest is refused with one line, never loaded unverified",
          "[train][checkpoint][atomic][errors]") {
  weft_test::temp_dir tmp;
  training_step<gpt_f32> saved(base_options());
  single_world world;
  train_options other = base_options();
  other.seed = 4321;
  training_step<gpt_f32> st(other);
  const std::vector<float> before = copy_of(st.params());
  auto unchanged = [&] { return same_bits<float>(st.params(), before) && st.step_count() == 0; };

  SECTION("a directory saved in place, its manifest gone (what a kill in the middle of the old in-place save left)") {
    save_checkpoint(saved, tmp / "ck");
    CHECK_NOTHROW(load_checkpoint(st, tmp / "ck"));  // with its manifest: loads
    st.set_step_count(0);
    std::copy(before.begin(), before.end(), st.params().begin());
    fs::remove(tmp / "ck" / "manifest.json");
    const auto f = safetensors_file::open(tmp / "ck" / "model.safetensors");
    flip_byte(tmp / "ck" / "model.safetensors", 8 + f.header_length() + f.info("h.0.attn.c_attn.weight").data_begin + 9);
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "ck"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("has no manifest.json") != std::string::npos);
    CHECK(e.find("refusing to load it") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("latest's step directory without its manifest") {
    save_checkpoint(saved, world, tmp / "root");
    fs::remove(tmp / "root" / "step-000000000" / "manifest.json");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "root"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("names step-000000000, which has no manifest.json") != std::string::npos);
    CHECK(unchanged());
    const std::string d = error_of([&] { load_checkpoint(st, tmp / "root" / "step-000000000"); });
    INFO(d);
    CHECK(one_line(d));
    CHECK(d.find("has no manifest.json") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("latest naming a missing directory; its aside copy (a kill between the renames of a same-step save) loads") {
    save_checkpoint(saved, world, tmp / "root");
    fs::rename(tmp / "root" / "step-000000000", tmp / "root" / ".step-000000000.old");
    CHECK(error_of([&] { load_checkpoint(st, tmp / "root"); }).empty());
    CHECK(same_bits<float>(st.params(), copy_of(saved.params())));
    fs::remove_all(tmp / "root" / ".step-000000000.old");
    std::copy(before.begin(), before.end(), st.params().begin());
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "root"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("names step-000000000, which does not exist") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a root with only a temporary directory (a kill during its first save)") {
    fs::create_directories(tmp / "root" / ".step-000000003.tmp");
    save_checkpoint(saved, tmp / "root" / ".step-000000003.tmp");  // complete, but never renamed into place
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "root"); });
    INFO(e);
    CHECK(one_line(e));
    CHECK(e.find("holds no checkpoint") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("an empty directory") {
    fs::create_directories(tmp / "empty");
    const std::string e = error_of([&] { load_checkpoint(st, tmp / "empty"); });
    CHECK(one_line(e));
    CHECK(e.find("holds no checkpoint") != std::string::npos);
  }
}

TEST_CASE("a flipped byte anywhere in a saved file is refused with one line", "[train][checkpoint][atomic][errors]") {
  weft_test::temp_dir tmp;
  single_world world;
  training_step<gpt_f32> saved(base_options());
  const fs::path good = save_checkpoint(saved, world, tmp / "root");
  train_options other = base_options();
  other.seed = 4321;
  training_step<gpt_f32> st(other);
  const std::vector<float> before = copy_of(st.params());
  splitmix64 g{20261206};
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "config.json", "manifest.json"}) {
    const std::uint64_t size = fs::file_size(good / file);
    for (int trial = 0; trial < 12; ++trial) {
      // Half the flips in the first 400 bytes (the header / the fields), half anywhere.
      const std::uint64_t at = trial % 2 == 0 ? g.below(std::min<std::uint64_t>(size, 400)) : g.below(size);
      const fs::path copy = tmp / ("flip-" + std::to_string(trial));
      fs::remove_all(copy);
      fs::copy(good, copy);
      flip_byte(copy / file, at);
      const std::string e = any_error_of([&] { load_checkpoint(st, copy); });
      INFO(file << " byte " << at << ": " << e);
      if (std::string(file) == "manifest.json" && e.empty()) {
        // A manifest field the files do not depend on (saved_under, the rng): the data is still
        // exactly what the manifest's checksums describe.
        CHECK(same_bits<float>(st.params(), copy_of(saved.params())));
        std::copy(before.begin(), before.end(), st.params().begin());
        st.set_step_count(0);
        continue;
      }
      CHECK(one_line(e));
      CHECK(same_bits<float>(st.params(), before));
    }
  }
}

// A save killed (SIGKILL, in a forked child) at each of its points in turn — every run of data,
// rename, the manifest, the step directory's rename, `latest`, rotation — after a good save: the
// root then loads, verified, either the last good checkpoint or the new one, never a mixture and
// never nothing. The in-place save is not atomic: there a kill may leave a directory that is
// refused, but never one that loads unverified.
namespace {

// Forks; the child sets WEFT_TEST_CHECKPOINT_KILL=0:<event> and runs `save`. True if the child
// was killed (false: the save finished before that event).
template <class F>
bool killed_during(long event, F&& save) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("WEFT_TEST_CHECKPOINT_KILL", ("0:" + std::to_string(event)).c_str(), 1);
    try {
      save();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status)) {
    REQUIRE(WEXITSTATUS(status) == 0);  // the save itself must not fail
    return false;
  }
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  return true;
}

}  // namespace

TEST_CASE("a save killed at any point leaves the last good checkpoint or the new one, verified",
          "[train][checkpoint][atomic][fault]") {
  weft_test::temp_dir tmp;
  single_world world;
  const token_buffer data = synthetic_tokens(64);
  training_step<gpt_f32> st(base_options());
  batch_sampler<2, 8> sampler(data, 5);
  curve c;
  run_steps(st, sampler, 1, c);
  const fs::path base = tmp / "base";
  save_checkpoint(st, world, base, checkpoint_state{sampler.state()}, checkpoint_options{.keep_last = 2});
  run_steps(st, sampler, 1, c);
  save_checkpoint(st, world, base, checkpoint_state{sampler.state()}, checkpoint_options{.keep_last = 2});
  const std::vector<float> good = copy_of(st.params());  // step 2, the last good save
  run_steps(st, sampler, 1, c);
  const std::vector<float> next = copy_of(st.params());  // step 3

  train_options other = base_options();
  other.seed = 4321;
  // scenario 0: a new step (rotation drops step 1); 1: step 2 saved again with other values (the
  // swap through .step-2.old).
  for (int scenario = 0; scenario < 2; ++scenario) {
    const std::size_t new_step = scenario == 0 ? 3 : 2;
    st.set_step_count(new_step);
    long kills = 0;
    for (long event = 1; event < 200; ++event) {
      const fs::path root = tmp / ("trial-" + std::to_string(scenario) + "-" + std::to_string(event));
      fs::copy(base, root, fs::copy_options::recursive);
      const bool killed = killed_during(event, [&] {
        save_checkpoint(st, world, root, checkpoint_state{sampler.state()}, checkpoint_options{.keep_last = 2});
      });
      INFO("scenario " << scenario << ", killed at event " << event << (killed ? "" : " (the save finished)"));
      training_step<gpt_f32> loaded(other);
      const std::string e = any_error_of([&] { load_checkpoint(loaded, root); });
      INFO(e);
      REQUIRE(e.empty());  // a good save came before: never nothing
      const bool is_good = loaded.step_count() == 2 && same_bits<float>(loaded.params(), good);
      const bool is_new = loaded.step_count() == new_step && same_bits<float>(loaded.params(), next);
      CHECK((is_good || is_new));
      if (!killed) {
        CHECK(is_new);
        CHECK(names_in(root) == (scenario == 0 ? std::vector<std::string>{"latest", "step-000000002", "step-000000003"}
                                               : std::vector<std::string>{"latest", "step-000000001", "step-000000002"}));
        break;
      }
      ++kills;
      // Verified: a flipped byte in what loaded is refused.
      const fs::path used = root / (is_new ? detail::step_dir_name(new_step) : "step-000000002");
      if (fs::exists(used / "manifest.json")) {
        const auto f = safetensors_file::open(used / "model.safetensors");
        flip_byte(used / "model.safetensors", 8 + f.header_length() + f.info("wpe.weight").data_begin + 2);
        training_step<gpt_f32> again(other);
        CHECK_FALSE(any_error_of([&] { load_checkpoint(again, root); }).empty());
      }
      fs::remove_all(root);
    }
    CHECK(kills >= 8);  // headers, data runs, renames, manifest, directory, latest (and rotation or the swap)
  }

  // The in-place save: refused or verified, never loaded unverified.
  st.set_step_count(3);
  long refused = 0;
  for (long event = 1; event < 200; ++event) {
    const fs::path dir = tmp / ("inplace-" + std::to_string(event));
    fs::copy(base / "step-000000002", dir);
    const bool killed = killed_during(event, [&] { save_checkpoint(st, dir, checkpoint_state{sampler.state()}); });
    INFO("in place, killed at event " << event);
    training_step<gpt_f32> loaded(other);
    const std::string e = any_error_of([&] { load_checkpoint(loaded, dir); });
    INFO(e);
    if (!e.empty()) {
      CHECK(one_line(e));
      ++refused;
    } else {
      CHECK(fs::exists(dir / "manifest.json"));
      CHECK(((loaded.step_count() == 2 && same_bits<float>(loaded.params(), good)) ||
             (loaded.step_count() == 3 && same_bits<float>(loaded.params(), next))));
    }
    fs::remove_all(dir);
    if (!killed) break;
  }
  CHECK(refused > 0);  // the window the atomic save closes
}
