/*
 * 01_train_gpt — weft's main job: train a small GPT on the CPU, end to end.
 *
 * With no arguments it trains a byte-level GPT on the fortune(6) corpus that the set-up
 * installs (Debian's `fortunes` package), shows a progress bar, logs metrics as JSON lines,
 * evaluates the validation loss, saves a checkpoint (Hugging Face GPT-2 names, safetensors)
 * and prints a text sample. It shows the whole user-facing path: a model as a type, a plan
 * whose memory is known at compile time, and a training step that allocates nothing.
 *
 *   bash run.sh demo                     # the default: preset "small", about 5 minutes here
 *   build/examples/train_gpt --help      # every option
 */
#include <weft/weft.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace weft;

// ---- presets: each is a model type and a micro-batch type (compiled in) ----
// example-begin presets
using tiny_model = gpt<gpt_config<vocab<256>, context<64>, width<64>, heads<4>, depth<2>>>;
using small_model = gpt<gpt_config<vocab<256>, context<64>, width<128>, heads<4>, depth<4>>>;
using llama_small_model = llama<llama_config<vocab<256>, context<128>, width<192>, heads<6>, kv_heads<2>, depth<4>>>;

using tiny_plan = plan<tiny_model, batch<micro<8>, seq<64>>>;
using small_plan = plan<small_model, batch<micro<16>, seq<64>>>;
using llama_small_plan = plan<llama_small_model, batch<micro<8>, seq<128>>>;
static_assert(small_plan::bytes_per_rank <= 512_MiB);  // memory is known before launch
// example-end presets

// --precision bf16: the same models with bf16 parameters, gradients and activations, f32
// master weights and AdamW moments (docs/precision.md).
using tiny_bf16_plan = plan<tiny_model, batch<micro<8>, seq<64>>, precision<bf16, f32>>;
using small_bf16_plan = plan<small_model, batch<micro<16>, seq<64>>, precision<bf16, f32>>;
using llama_small_bf16_plan = plan<llama_small_model, batch<micro<8>, seq<128>>, precision<bf16, f32>>;

struct options {
  std::string preset = "small";
  std::string precision = "f32";  // f32 | bf16 (bf16 with f32 master weights)
  std::string data;  // text file, directory of text files, or token file (.bin)
  std::size_t steps = 1500;
  std::size_t batch = 0;  // sequences per optimizer step; 0 = one micro-batch
  float lr = 3e-3f;
  std::size_t warmup = 50;
  std::size_t eval_every = 100;
  std::size_t eval_batches = 16;
  std::string checkpoint = "out/checkpoint";
  std::string resume;
  std::string log = "out/metrics.jsonl";
  std::uint64_t seed = 1337;
  std::size_t sample_chars = 300;
  double expect_val_loss = 0;  // > 0: exit 3 unless the final validation loss is at most this
  bool quiet = false;
};

static void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: train_gpt [options]\n"
               "  --preset NAME        tiny | small | llama-small            (default small)\n"
               "  --precision P        f32 | bf16 (bf16 storage, f32 master weights and moments; default f32)\n"
               "  --data PATH          text file, directory of text files, or token file (.bin: nanoGPT\n"
               "                       uint16 or llm.c shard); default: the fortune(6) corpus\n"
               "  --steps N            optimizer steps                         (default 1500)\n"
               "  --batch N            sequences per step, a multiple of the preset's micro-batch (8)\n"
               "  --lr X               peak learning rate                      (default 3e-3)\n"
               "  --warmup N           warm-up steps, then cosine decay        (default 50)\n"
               "  --eval-every N       validation every N steps                (default 100)\n"
               "  --eval-batches N     micro-batches per validation            (default 16)\n"
               "  --checkpoint DIR     where to save at the end                (default out/checkpoint; '' = none)\n"
               "  --resume DIR         continue from a checkpoint\n"
               "  --log FILE           JSON-lines metrics                      (default out/metrics.jsonl)\n"
               "  --seed N             initialisation and sampling seed        (default 1337)\n"
               "  --sample N           characters to generate at the end       (default 300)\n"
               "  --expect-val-loss X  exit with status 3 unless the final validation loss <= X\n"
               "  --quiet              no progress bar\n"
               "  --help\n");
}

static std::optional<options> parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_gpt: %s needs a value (see --help)\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](std::string s) -> double {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || v < 0) {
        std::fprintf(stderr, "train_gpt: %s expects a non-negative number, got '%s'\n", std::string(a).c_str(), s.c_str());
        std::exit(2);
      }
      return v;
    };
    if (a == "--help" || a == "-h") { usage(stdout); std::exit(0); }
    else if (a == "--preset") o.preset = value();
    else if (a == "--precision") o.precision = value();
    else if (a == "--data") o.data = value();
    else if (a == "--steps") o.steps = static_cast<std::size_t>(number(value()));
    else if (a == "--batch") o.batch = static_cast<std::size_t>(number(value()));
    else if (a == "--lr") o.lr = static_cast<float>(number(value()));
    else if (a == "--warmup") o.warmup = static_cast<std::size_t>(number(value()));
    else if (a == "--eval-every") o.eval_every = static_cast<std::size_t>(number(value()));
    else if (a == "--eval-batches") o.eval_batches = static_cast<std::size_t>(number(value()));
    else if (a == "--checkpoint") o.checkpoint = value();
    else if (a == "--resume") o.resume = value();
    else if (a == "--log") o.log = value();
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(number(value()));
    else if (a == "--sample") o.sample_chars = static_cast<std::size_t>(number(value()));
    else if (a == "--expect-val-loss") o.expect_val_loss = number(value());
    else if (a == "--quiet") o.quiet = true;
    else {
      std::fprintf(stderr, "train_gpt: unknown option '%s' (see --help)\n", argv[i]);
      return std::nullopt;
    }
  }
  return o;
}

// ---- data: a token file, or text tokenized on the fly ----
struct dataset {
  std::optional<token_file> file;
  std::optional<text_corpus> text;
  token_view all() const { return file ? token_view(*file) : token_view(*text); }
};

static dataset load_data(const std::string& path) {
  dataset d;
  std::vector<fs::path> files;
  text_options topt;
  if (path.empty()) {
    // The default corpus: every fortune(6) text file (not the .dat indexes or .u8 links).
    const fs::path dir = "/usr/share/games/fortunes";
    if (!fs::is_directory(dir))
      throw data_error("train_gpt: the default corpus " + dir.string() +
                       " is missing; install Debian's fortunes package (bash run.sh demo does) or pass --data");
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && !e.is_symlink() && e.path().extension().empty()) files.push_back(e.path());
    topt.fortune_records = true;
  } else if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file()) files.push_back(e.path());
  } else if (fs::path(path).extension() == ".bin") {
    d.file = token_file::open(path);
    return d;
  } else {
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw data_error("train_gpt: no text files found in " + path);
  d.text = text_corpus::load(std::span<const fs::path>(files), topt);
  return d;
}

// ---- the progress bar ----
static void progress(std::size_t step, std::size_t total, double loss, double tps, double eta_s, bool tty) {
  constexpr int width = 30;
  const int filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total));
  char bar[width + 1];
  for (int i = 0; i < width; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[width] = '\0';
  std::printf("%s[%s] step %zu/%zu  loss %.4f  %.0f tok/s  ETA %dm%02ds%s", tty ? "\r" : "", bar, step, total, loss,
              tps, static_cast<int>(eta_s) / 60, static_cast<int>(eta_s) % 60, tty ? "" : "\n");
  std::fflush(stdout);
}

// ---- sampling: autoregressive generation with the trained parameters ----
template <class Plan, class TrainStep>
std::string generate(const TrainStep& trained, std::size_t n_chars, std::uint64_t seed, std::string_view prompt) {
  using sample_plan = plan<typename Plan::model, batch<micro<1>, seq<Plan::S>>>;
  training_step<sample_plan> gen;  // a B=1 arena sharing nothing but the parameter values
  if constexpr (Plan::mixed_precision)  // the f32 master weights: what the bf16 parameters round
    std::copy(trained.master().begin(), trained.master().end(), gen.params().begin());
  else
    std::copy(trained.params().begin(), trained.params().end(), gen.params().begin());
  std::vector<std::int32_t> ctx = byte_tokenizer::encode(prompt);
  splitmix64 rng{seed};
  std::string out(prompt);
  constexpr std::size_t S = Plan::S, V = Plan::vocab_size;
  for (std::size_t n = 0; n < n_chars; ++n) {
    const std::size_t len = std::min(ctx.size(), S);
    const std::size_t start = ctx.size() - len;
    auto tok = gen.tokens();
    std::fill(tok.begin(), tok.end(), 0);
    std::copy(ctx.begin() + static_cast<std::ptrdiff_t>(start), ctx.end(), tok.begin());
    gen.forward();
    const float* logits = gen.logits().data() + (len - 1) * V;
    // Softmax at temperature 0.8, then draw.
    double mx = *std::max_element(logits, logits + V), total = 0;
    std::vector<double> p(V);
    for (std::size_t v = 0; v < V; ++v) total += p[v] = std::exp((logits[v] - mx) / 0.8);
    double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * total;
    std::size_t pick = 0;
    while (pick + 1 < V && (u -= p[pick]) > 0) ++pick;
    ctx.push_back(static_cast<std::int32_t>(pick));
    out += byte_tokenizer::decode(std::span<const std::int32_t>(&ctx.back(), 1));
  }
  return out;
}

template <class Plan>
int train(const options& o) {
  constexpr std::size_t B = Plan::B, S = Plan::S;
  const dataset data = load_data(o.data);
  const token_view all = data.all();
  for (std::size_t i = 0; i < std::min<std::size_t>(all.size(), 1 << 16); ++i)
    if (all[i] < 0 || static_cast<std::size_t>(all[i]) >= Plan::vocab_size)
      throw data_error("train_gpt: token " + std::to_string(all[i]) + " is outside the preset's vocabulary of " +
                       std::to_string(Plan::vocab_size));
  const token_split parts = split(all, 0.1);

  const std::size_t sequences = o.batch == 0 ? B : o.batch;
  if (sequences % B != 0) {
    std::fprintf(stderr, "train_gpt: --batch %zu is not a multiple of the preset's micro-batch %zu\n", sequences, B);
    return 2;
  }
  train_options topt;
  topt.optimizer.lr = o.lr;
  topt.optimizer.weight_decay = 0.1f;
  topt.schedule = {o.warmup, o.steps, 0.1f};
  topt.grad_accum = sequences / B;
  topt.seed = o.seed;

  training_step<Plan> step(topt);
  batch_sampler<B, S> sampler(parts.train, o.seed);
  eval_batches<B, S> val(parts.validation);
  if constexpr (Plan::mixed_precision) {
    if (!o.resume.empty() || !o.checkpoint.empty())
      std::printf("note: checkpoints are not written or read under --precision bf16 yet\n");
  } else if (!o.resume.empty()) {
    const checkpoint_state cs = load_checkpoint(step, o.resume);
    sampler.set_state(cs.sampler);
    std::printf("resumed from %s at step %zu\n", o.resume.c_str(), step.step_count());
  }

  Plan::report();
  std::printf("data: %zu tokens (%zu train, %zu validation); %zu sequences x %zu tokens per step\n", all.size(),
              parts.train.size(), parts.validation.size(), sequences, S);

  if (!o.log.empty() && fs::path(o.log).has_parent_path()) fs::create_directories(fs::path(o.log).parent_path());
  std::FILE* log = o.log.empty() ? nullptr : std::fopen(o.log.c_str(), "a");
  const bool tty = !o.quiet && isatty(STDOUT_FILENO);

  auto validate = [&] {
    val.rewind();
    const std::size_t n = std::min(o.eval_batches, val.size());
    return step.evaluate([&](auto tok, auto tgt) { val.next(tok, tgt); }, n);
  };

  double val_loss = -1, ema_tps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t first = step.step_count();
  while (step.step_count() < o.steps) {
    const step_metrics m = step.step([&](auto tok, auto tgt) { sampler.next(tok, tgt); });
    ema_tps = ema_tps == 0 ? m.tokens_per_second : 0.9 * ema_tps + 0.1 * m.tokens_per_second;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = elapsed / static_cast<double>(m.step - first) * static_cast<double>(o.steps - m.step);
    const bool eval_now = (o.eval_every && m.step % o.eval_every == 0) || m.step == o.steps;
    if (eval_now) val_loss = validate();
    if (log) {
      std::fprintf(log,
                   "{\"step\":%zu,\"loss\":%.6f,\"grad_norm\":%.6f,\"lr\":%.6g,\"ms\":%.3f,\"tokens_per_s\":%.1f,"
                   "\"gflops\":%.3f%s}\n",
                   m.step, m.loss, m.grad_norm, m.lr, m.seconds * 1e3, m.tokens_per_second, m.gflops,
                   eval_now ? (",\"val_loss\":" + std::to_string(val_loss)).c_str() : "");
      std::fflush(log);
    }
    if (tty) progress(m.step, o.steps, m.loss, ema_tps, eta, true);
    if (eval_now || (!tty && !o.quiet && m.step % 25 == 0)) {
      if (tty) std::printf("\n");
      if (!tty && !o.quiet) progress(m.step, o.steps, m.loss, ema_tps, eta, false);
      if (eval_now) std::printf("step %zu: validation loss %.4f nats/byte\n", m.step, val_loss);
    }
  }
  if (val_loss < 0) val_loss = validate();
  if (log) std::fclose(log);

  if constexpr (!Plan::mixed_precision) {
    if (!o.checkpoint.empty()) {
      save_checkpoint(step, o.checkpoint, checkpoint_state{sampler.state()});
      std::printf("checkpoint: %s (model.safetensors, optimizer.safetensors, config.json)\n", o.checkpoint.c_str());
    }
  }
  if (o.sample_chars > 0) {
    std::printf("---- sample ----\n%s\n----------------\n",
                generate<Plan>(step, o.sample_chars, o.seed, "The ").c_str());
  }
  std::printf("final validation loss %.4f nats/byte after %zu steps\n", val_loss, step.step_count());
  if (o.expect_val_loss > 0)  // the margin is printed, so a goal that stops being met shows early
    std::printf("loss goal: validation loss %.4f, goal %.4f, margin %.4f (%s)\n", val_loss, o.expect_val_loss,
                o.expect_val_loss - val_loss, val_loss <= o.expect_val_loss ? "met" : "MISSED");
  if (o.expect_val_loss > 0 && !(val_loss <= o.expect_val_loss)) {
    std::fprintf(stderr, "train_gpt: validation loss %.4f is above the expected %.4f\n", val_loss, o.expect_val_loss);
    return 3;
  }
  return 0;
}

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  if (!o) return 2;
  try {
    if (o->precision == "bf16") {
      if (o->preset == "tiny") return train<tiny_bf16_plan>(*o);
      if (o->preset == "small") return train<small_bf16_plan>(*o);
      if (o->preset == "llama-small") return train<llama_small_bf16_plan>(*o);
      std::fprintf(stderr, "train_gpt: unknown preset '%s' (tiny, small, llama-small)\n", o->preset.c_str());
      return 2;
    }
    if (o->precision != "f32") {
      std::fprintf(stderr, "train_gpt: unknown precision '%s' (f32, bf16)\n", o->precision.c_str());
      return 2;
    }
    if (o->preset == "tiny") return train<tiny_plan>(*o);
    if (o->preset == "small") return train<small_plan>(*o);
    if (o->preset == "llama-small") return train<llama_small_plan>(*o);
    std::fprintf(stderr, "train_gpt: unknown preset '%s' (tiny, small, llama-small)\n", o->preset.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
