/*
 * 01_train_gpt — weft's main job: train a small GPT on the CPU, end to end.
 *
 * With no arguments it trains a byte-level GPT on the fortune(6) corpus that the set-up
 * installs (Debian's `fortunes` package), shows a progress bar, logs metrics as JSON lines,
 * evaluates the validation loss, saves a checkpoint (Hugging Face GPT-2 names, safetensors;
 * atomic: out/checkpoint/step-N/, out/checkpoint/latest names the newest)
 * and prints a text sample. It shows the whole user-facing path: a model as a type, a plan
 * whose memory is known at compile time, and a training step that allocates nothing.
 * Long-job features (docs/running_long_jobs.md): a non-finite step is skipped; --spike-guard
 * skips loss/gradient-norm spikes and rolls back to the last checkpoint after several in a row;
 * SIGTERM/SIGINT finish the current step, save a checkpoint and exit 0.
 *
 *   bash run.sh demo                     # the default: preset "small", about 5 minutes here
 *   build/examples/train_gpt --help      # every option
 */
#include <weft/io.hpp>    // save_checkpoint, load_checkpoint
#include <weft/train/cli.hpp>  // cli::args: checked options
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
#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <fcntl.h>
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
// --precision f16: f16 storage, f32 master weights and moments, dynamic loss scaling
// (train_options::loss_scale; an overflow skips the step and halves the scale).
using tiny_f16_plan = plan<tiny_model, batch<micro<8>, seq<64>>, precision<f16, f32>>;
using small_f16_plan = plan<small_model, batch<micro<16>, seq<64>>, precision<f16, f32>>;
using llama_small_f16_plan = plan<llama_small_model, batch<micro<8>, seq<128>>, precision<f16, f32>>;

struct options {
  std::string preset = "small";
  std::string precision = "f32";  // f32 | bf16 | f16 (16-bit storage with f32 master weights)
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
  // ---- long jobs (docs/running_long_jobs.md) ----
  std::size_t checkpoint_every = 0;  // > 0: also save to --checkpoint every N steps (rollback target)
  std::size_t keep = 2;              // step directories kept under --checkpoint (0: all)
  bool spike_guard = false;
  spike_guard_options spike{};
  // ---- fault injection, for tests ----
  std::size_t bad_batch = 0, bad_batches = 0;  // sampler positions [bad_batch, +bad_batches): garbage targets
  std::size_t nan_at = 0;  // > 0: the N-th step() call (skipped ones included) has NaN gradients
  std::size_t signal_at = std::numeric_limits<std::size_t>::max();  // SIGTERM during optimizer step N
};

static void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: train_gpt [options]\n"
               "  --preset NAME        tiny | small | llama-small            (default small)\n"
               "  --precision P        f32 | bf16 | f16 (16-bit storage, f32 master weights and moments; f16 with\n"
               "                       dynamic loss scaling; default f32)\n"
               "  --data PATH          text file, directory of text files, or token file (.bin: nanoGPT\n"
               "                       uint16 or llm.c shard); default: the fortune(6) corpus\n"
               "  --steps N            optimizer steps                         (default 1500)\n"
               "  --batch N            sequences per step, a multiple of the preset's micro-batch (8)\n"
               "  --lr X               peak learning rate                      (default 3e-3)\n"
               "  --warmup N           warm-up steps, then cosine decay        (default 50)\n"
               "  --eval-every N       validation every N steps                (default 100)\n"
               "  --eval-batches N     micro-batches per validation            (default 16)\n"
               "  --checkpoint DIR     save into DIR/step-N/ at the end; DIR/latest names the newest; each save\n"
               "                       is atomic (default out/checkpoint; '' = none)\n"
               "  --keep N             step directories kept in DIR, newest first; 0 = all (default 2)\n"
               "  --resume DIR         continue from DIR's latest checkpoint, or from a DIR/step-N/\n"
               "  --log FILE           JSON-lines metrics, one object per step (default out/metrics.jsonl)\n"
               "  --metrics FILE       the same as --log\n"
               "  --checkpoint-every N also save the checkpoint every N steps (a rollback target)\n"
               "  --spike-guard        skip steps whose loss or gradient norm spikes (z-score); roll back\n"
               "                       to the last checkpoint after several in a row\n"
               "  --spike-window N     accepted steps the z-score is taken over  (default 100)\n"
               "  --spike-warmup N     accepted steps before the guard judges    (default 20)\n"
               "  --spike-threshold X  z-score of a spike                        (default 6)\n"
               "  --spike-rollback-after K  consecutive spikes that roll back; 0 never (default 3)\n"
               "  --inject-bad-batch P[:N]  (testing) micro-batches P..P+N-1 of the sampler get garbage targets\n"
               "  --inject-nan N       (testing) the N-th step call (1-based, skipped ones included) gets NaN gradients\n"
               "  --signal-self-at N   (testing) raise SIGTERM during optimizer step N\n"
               "  --seed N             initialisation and sampling seed        (default 1337)\n"
               "  --sample N           characters to generate at the end       (default 300)\n"
               "  --expect-val-loss X  exit with status 3 unless the final validation loss <= X\n"
               "  --quiet              no progress bar\n"
               "  --help\n");
}

// Every number is parsed in full and range-checked (weft/train/cli.hpp): a bad value is one line
// and exit status 2.
static std::optional<options> parse(int argc, char** argv) {
  options o;
  cli::args a("train_gpt", argc, argv);
  using z = std::size_t;
  constexpr z most = std::numeric_limits<z>::max();
  try {
    while (a.next()) {
      if (a.is("--help") || a.is("-h")) { usage(stdout); std::exit(0); }
      else if (a.is("--preset")) o.preset = a.value();
      else if (a.is("--precision")) o.precision = a.value();
      else if (a.is("--data")) o.data = a.value();
      else if (a.is("--steps")) o.steps = a.integer<z>();
      else if (a.is("--batch")) o.batch = a.integer<z>(0, z{1} << 24);
      else if (a.is("--lr")) o.lr = a.real<float>(0, 10, cli::exclusive);
      else if (a.is("--warmup")) o.warmup = a.integer<z>();
      else if (a.is("--eval-every")) o.eval_every = a.integer<z>();
      else if (a.is("--eval-batches")) o.eval_batches = a.integer<z>(1, most);
      else if (a.is("--checkpoint")) o.checkpoint = a.value();
      else if (a.is("--resume")) o.resume = a.value();
      else if (a.is("--log") || a.is("--metrics")) o.log = a.value();
      else if (a.is("--checkpoint-every")) o.checkpoint_every = a.integer<z>();
      else if (a.is("--keep")) o.keep = a.integer<z>();
      else if (a.is("--spike-guard")) o.spike_guard = true;
      else if (a.is("--spike-window")) o.spike.window = a.integer<z>(1, most);
      else if (a.is("--spike-warmup")) o.spike.warmup = a.integer<z>();
      else if (a.is("--spike-threshold")) o.spike.threshold = a.real<double>(0, 1e6, cli::exclusive);
      else if (a.is("--spike-rollback-after")) o.spike.rollback_after = a.integer<z>();
      else if (a.is("--inject-bad-batch")) {
        const std::string v = a.value();
        const auto colon = v.find(':');
        o.bad_batch = cli::parse_integer<z>("train_gpt", "--inject-bad-batch", v.substr(0, colon));
        o.bad_batches = colon == std::string::npos ? 1 : cli::parse_integer<z>("train_gpt", "--inject-bad-batch", v.substr(colon + 1));
      }
      else if (a.is("--inject-nan")) o.nan_at = a.integer<z>();
      else if (a.is("--signal-self-at")) o.signal_at = a.integer<z>();
      else if (a.is("--seed")) o.seed = a.integer<std::uint64_t>();
      else if (a.is("--sample")) o.sample_chars = a.integer<z>();
      else if (a.is("--expect-val-loss")) o.expect_val_loss = a.real<double>(0, 1e6);
      else if (a.is("--quiet")) o.quiet = true;
      else a.unknown();
    }
  } catch (const cli::option_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return std::nullopt;
  }
  return o;
}

// A number for JSON: NaN and infinities are not JSON numbers, so they are written as null.
static std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", x);
  return buf;
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

// What keeps checkpoints from being written to `dir`, or "": it is created if need be, and a file
// is created and removed in it. Checked before the first step, so that an unwritable --checkpoint
// is one line at the start rather than an error at the first save (by default after training).
static std::string checkpoint_dir_problem(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    return ec ? "cannot create it (" + ec.message() + ")" : std::string("it is not a directory");
  const fs::path probe = fs::path(dir) / (".write-test." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::string("cannot write in it (") + std::strerror(errno) + ")";
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

template <class Plan>
int train(const options& o) {
  if (!o.checkpoint.empty())
    if (const std::string why = checkpoint_dir_problem(o.checkpoint); !why.empty()) {
      std::fprintf(stderr, "train_gpt: --checkpoint %s: %s; give a writable directory, or --checkpoint '' for none\n",
                   o.checkpoint.c_str(), why.c_str());
      return 2;
    }
  constexpr std::size_t B = Plan::B, S = Plan::S;
  // A token file, or text tokenized on the fly; every token id checked against the vocabulary.
  const corpus data = corpus::open(o.data, "train_gpt", 0, Plan::vocab_size);
  const token_view all = data.all();
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
  if (o.nan_at > 0)  // testing: one step's gradients are NaN
    topt.fault = [at = o.nan_at - 1](std::size_t call) { return call == at ? std::numeric_limits<double>::quiet_NaN() : 1.0; };

  training_step<Plan> step(topt);
  batch_sampler<B, S> sampler(parts.train, o.seed);
  eval_batches<B, S> val(parts.validation);
  if (!o.resume.empty()) {  // under --precision bf16/f16: the f32 master and moments (docs/checkpoints.md)
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

  // ---- long jobs: checkpoints to roll back to, the spike guard, preemption ----
  // Every precision checkpoints: under bf16/f16 the files hold the f32 master weights and moments.
  // Saves are atomic (docs/checkpoints.md): the engine of the distributed checkpoints in a world of
  // one writes DIR/.step-N.tmp/, renames it to DIR/step-N/, then replaces DIR/latest, and keeps the
  // newest --keep step directories. A kill at any moment leaves the last good checkpoint.
  std::string last_checkpoint = o.resume;  // where a rollback goes: the newest checkpoint of this job
  single_world world;
  std::optional<std::pair<std::size_t, std::uint64_t>> saved;  // (step, data position) of the last save
  fs::path saved_dir;
  auto save = [&](const char* why) {
    if (o.checkpoint.empty()) return;
    const std::pair<std::size_t, std::uint64_t> now{step.step_count(), sampler.step()};
    if (saved != now) {  // nothing has changed since the last save: it stands
      saved_dir = save_checkpoint(step, world, o.checkpoint, checkpoint_state{sampler.state()},
                                  checkpoint_options{.keep_last = o.keep});
      saved = now;
    }
    last_checkpoint = o.checkpoint;  // its `latest`
    if (!o.quiet && why) std::printf("checkpoint (%s): %s at step %zu\n", why, saved_dir.c_str(), step.step_count());
    std::fflush(stdout);  // a line printed is a save finished (the fault tests kill during saves)
  };
  if (o.checkpoint_every && last_checkpoint.empty()) save(nullptr);  // a rollback target from the start
  std::optional<spike_guard> guard;
  if (o.spike_guard) guard.emplace(o.spike);
  preemption::install();  // SIGTERM/SIGINT: finish this step, save, exit 0
  std::size_t rollbacks = 0, consecutive_skips = 0;
  constexpr std::size_t max_consecutive_skips = 50;  // then the run is broken, not unlucky: stop

  double val_loss = -1, ema_tps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t first = step.step_count();
  while (step.step_count() < o.steps) {
    if (step.step_count() + 1 == o.signal_at) std::raise(SIGTERM);  // testing: a signal during this step
    const std::uint64_t position = sampler.step();                  // the data position of this step
    auto fill = [&](auto tok, auto tgt) {
      const std::uint64_t p = sampler.step();
      sampler.next(tok, tgt);
      if (p >= o.bad_batch && p < o.bad_batch + o.bad_batches)  // testing: a bad batch
        std::fill(tgt.begin(), tgt.end(), static_cast<std::int32_t>(Plan::vocab_size - 1));
    };
    // example-begin guarded-step
    const step_metrics m = guard ? step.step(fill, *guard) : step.step(fill);  // guard: a spike_guard
    // example-end guarded-step
    const bool spike = guard && m.skipped && !m.nonfinite;
    bool rolled_back = false;
    if (m.skipped) {
      std::printf("step %zu skipped (%s: loss %.4g, grad norm %.4g; data position %llu)\n", m.step + 1,
                  m.nonfinite ? (m.loss_scale != 1.0 ? "f16 overflow, loss scale halved" : "not finite") : "spike",
                  m.loss, m.grad_norm, static_cast<unsigned long long>(position));
      if (++consecutive_skips >= max_consecutive_skips) {
        std::fprintf(stderr, "train_gpt: %zu steps in a row were skipped; stopping\n", consecutive_skips);
        return 4;
      }
    } else {
      consecutive_skips = 0;
    }
    if (spike && guard->last() == spike_decision::rollback) {
      if (!last_checkpoint.empty()) {
        // example-begin rollback
        // Weights, moments and step count from the checkpoint; the data position stays where it
        // is, past the bad batches (PaLM's remedy: restart earlier, skip the data that spiked).
        const sampler_state here = sampler.state();
        load_checkpoint(step, last_checkpoint);
        sampler.set_state(here);
        // example-end rollback
        rolled_back = true;
        ++rollbacks;
        std::printf("rollback %zu: %zu spikes in a row; restored step %zu from %s, data continues at position %llu\n",
                    rollbacks, o.spike.rollback_after, step.step_count(), last_checkpoint.c_str(),
                    static_cast<unsigned long long>(sampler.step()));
      }
      if (!rolled_back) std::printf("rollback asked for, but there is no checkpoint (--checkpoint-every N); going on\n");
    }
    ema_tps = ema_tps == 0 ? m.tokens_per_second : 0.9 * ema_tps + 0.1 * m.tokens_per_second;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double done = static_cast<double>(std::max<std::size_t>(m.step, first + 1) - first);
    const double eta = elapsed / done * static_cast<double>(o.steps - std::min(m.step, o.steps));
    const bool eval_now = !m.skipped && ((o.eval_every && m.step % o.eval_every == 0) || m.step == o.steps);
    if (eval_now) val_loss = validate();
    if (log) {
      std::fprintf(log,
                   "{\"step\":%zu,\"loss\":%s,\"grad_norm\":%s,\"lr\":%.6g,\"ms\":%.3f,\"tokens_per_s\":%.1f,"
                   "\"gflops\":%.3f,\"data_position\":%llu,\"skipped\":%s,\"nonfinite\":%s,\"spike\":%s,"
                   "\"skipped_total\":%zu,\"spikes\":%zu,\"rollback\":%s,\"rollbacks_total\":%zu%s}\n",
                   m.step, json_number(m.loss).c_str(), json_number(m.grad_norm).c_str(), m.lr, m.seconds * 1e3,
                   m.tokens_per_second, m.gflops, static_cast<unsigned long long>(position), m.skipped ? "true" : "false",
                   m.nonfinite ? "true" : "false", spike ? "true" : "false", m.skipped_total,
                   guard ? guard->spikes() : std::size_t{0}, rolled_back ? "true" : "false", rollbacks,
                   eval_now ? (",\"val_loss\":" + std::to_string(val_loss)).c_str() : "");
      std::fflush(log);
    }
    if (!m.skipped && o.checkpoint_every && m.step % o.checkpoint_every == 0 && m.step < o.steps) save("periodic");
    // example-begin preemption
    if (preemption::requested()) {
      // Stopped between steps: the checkpoint holds everything --resume needs (weights,
      // moments, step count, sampler position), so the resumed run equals an uninterrupted one.
      if (tty) std::printf("\n");
      save(nullptr);
      if (o.checkpoint.empty())
        std::printf("preempted by signal %d after step %zu (no checkpoint: --checkpoint '')\n", preemption::signal(),
                    step.step_count());
      else
        std::printf("preempted by signal %d after step %zu: checkpoint %s; continue with --resume %s\n",
                    preemption::signal(), step.step_count(), o.checkpoint.c_str(), o.checkpoint.c_str());
      if (log) std::fclose(log);
      return 0;
    }
    // example-end preemption
    if (tty) progress(m.step, o.steps, m.loss, ema_tps, eta, true);
    if (eval_now || (!tty && !o.quiet && !m.skipped && m.step % 25 == 0)) {
      if (tty) std::printf("\n");
      if (!tty && !o.quiet) progress(m.step, o.steps, m.loss, ema_tps, eta, false);
      if (eval_now) std::printf("step %zu: validation loss %.4f nats/byte\n", m.step, val_loss);
    }
  }
  if (val_loss < 0) val_loss = validate();
  if (log) std::fclose(log);

  if (!o.checkpoint.empty()) {
    save(nullptr);
    std::printf("checkpoint: %s (model.safetensors, optimizer.safetensors, config.json; %s/latest names it)\n",
                saved_dir.c_str(), o.checkpoint.c_str());
  }
  if (o.sample_chars > 0) {
    std::printf("---- sample ----\n%s\n----------------\n",
                generate<Plan>(step, o.sample_chars, o.seed, "The ").c_str());
  }
  if constexpr (std::is_same_v<typename Plan::value_type, f16>)
    std::printf("loss scale %g after %zu overflow(s)\n", step.loss_scale_state().scale(), step.loss_scale_state().overflows());
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
    if (o->precision == "f16") {
      if (o->preset == "tiny") return train<tiny_f16_plan>(*o);
      if (o->preset == "small") return train<small_f16_plan>(*o);
      if (o->preset == "llama-small") return train<llama_small_f16_plan>(*o);
      std::fprintf(stderr, "train_gpt: unknown preset '%s' (tiny, small, llama-small)\n", o->preset.c_str());
      return 2;
    }
    if (o->precision != "f32") {
      std::fprintf(stderr, "train_gpt: unknown precision '%s' (f32, bf16, f16)\n", o->precision.c_str());
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
