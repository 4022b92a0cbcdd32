/*
 * planner_validation — prints the tables of docs/planner_validation.md from the cost model:
 * Narayanan et al. 2021 Table 1 (predicted per-GPU TFLOP/s at the published split, the
 * error, and the search's own choice), the 8·T·P/(n·X) reproduction, and bench_parallel_step
 * on this machine (predicted against the measured rows of docs/benchmarks.md), and the published
 * runs of published_runs.hpp (each with its layout pinned, the error, the search's free choice).
 * `planner_validation published` prints the published-runs table alone, `planner_validation row N`
 * one of its rows in full (the step by bottleneck).
 */
#include <weft/planner/run_cost.hpp>
#include <weft/planner/search.hpp>

#include "published_runs.hpp"  // the published runs (data) and their evaluation

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace weft::planner;
using weft::recompute_kind;
using weft::schedule_kind;

namespace {
struct row {
  double billions;
  std::size_t heads, h, l, tp, pp, gpus, batch;
  double tflops;
};
constexpr row table1[] = {{1.7, 24, 2304, 24, 1, 1, 32, 512, 137},       {3.6, 32, 3072, 30, 2, 1, 64, 512, 138},
                          {7.5, 32, 4096, 36, 4, 1, 128, 512, 142},      {18.4, 48, 6144, 40, 8, 1, 256, 1024, 135},
                          {39.1, 64, 8192, 48, 8, 2, 512, 1536, 138},    {76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140},
                          {145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148}, {310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155},
                          {529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163}, {1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163}};

job_options megatron_2021_job() {
  job_options j{};
  j.fused_attention = false, j.overlap_grad_reduce = false;
  return j;
}
search_options published(const row& r) {
  search_options o{};
  o.job = megatron_2021_job();
  o.fixed_tp = r.tp, o.fixed_pp = r.pp, o.fix_recompute = true, o.recompute = recompute_kind::full;
  o.fix_zero = true, o.allow_gpipe = false, o.allow_sequence_parallel = false;
  return o;
}
double paper_flops(const row& r) {
  const double s = 2048, v = 51200, l = static_cast<double>(r.l), h = static_cast<double>(r.h);
  return 96.0 * static_cast<double>(r.batch) * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}
std::string text(const strategy_desc& s) {
  char b[160];
  std::snprintf(b, sizeof b, "tp%zu%s pp%zu dp%zu %s%s b%zu z%zu %s", s.tp, s.sequence_parallel ? "+sp" : "", s.pp, s.dp,
                s.pp == 1 ? "" : schedule_name(s.schedule),
                s.pp > 1 && s.schedule == schedule_kind::interleaved ? (" V" + std::to_string(s.chunks)).c_str() : "", s.micro,
                s.zero, recompute_name(s.recompute));
  return b;
}

std::string layout_text(const validation::published_run& r) {
  std::string t = "tp" + std::to_string(r.tp) + (r.sp == 1 ? "+sp" : "") + (r.cp > 1 ? " cp" + std::to_string(r.cp) : "") + " pp" +
                  std::to_string(r.pp) + " dp" + std::to_string(r.dp);
  t += r.zero >= 0 ? " z" + std::to_string(r.zero) : " z?";
  t += r.micro > 0 ? " b" + std::to_string(r.micro) : " b?";
  t += " B" + std::to_string(r.batch) + " s" + std::to_string(r.seq);
  t += r.recompute < 0 ? " rc?" : std::string(" ") + recompute_name(static_cast<recompute_kind>(r.recompute));
  if (r.flash) t += " flash";
  return t;
}
std::string metric_text(validation::metric k, double v) {
  char b[64];
  switch (k) {
    case validation::metric::tflops_megatron: std::snprintf(b, sizeof b, "%.0f TFLOP/s", v); break;
    case validation::metric::step_seconds: std::snprintf(b, sizeof b, "%.2f s/iter", v); break;
    case validation::metric::tokens_per_gpu: std::snprintf(b, sizeof b, "%.0f tok/s/GPU", v); break;
    case validation::metric::mfu: std::snprintf(b, sizeof b, "%.1f%% MFU", 100 * v); break;
  }
  return b;
}
// What the model chose where the source is silent (micro-batch, schedule, ZeRO, recompute, sp).
std::string picked_text(const validation::published_run& r, const strategy_desc& s) {
  std::string t;
  if (r.micro < 0) t += "b" + std::to_string(s.micro) + " ";
  if (s.pp > 1) t += s.schedule == schedule_kind::interleaved ? "V" + std::to_string(s.chunks) + " " : "1f1b ";
  if (r.zero < 0) t += "z" + std::to_string(s.zero) + " ";
  if (r.recompute < 0) {
    t += std::string(recompute_name(s.recompute)) + " ";
    if (s.recompute == recompute_kind::full && s.recompute_layers > 0)  // partial: k blocks a chunk
      t += "(" + std::to_string(s.recompute_layers) + " a chunk) ";
  }
  if (r.sp < 0 && s.tp > 1) t += s.sequence_parallel ? "+sp " : "no sp ";
  return t.empty() ? "—" : t;
}

int print_published() {
  using namespace validation;
  const std::vector<published_run> runs = published_runs();
  std::vector<row_result> res;
  std::printf("| # | source | model | GPUs | cluster, stack | published layout | published | predicted | error | model's pick (unpublished) | search's free choice | its gain |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const published_run& r = runs[i];
    res.push_back(evaluate(r));
    const row_result& x = res.back();
    std::string pred = "—", err = "—", pick = "—", own = "—", gain = "—";
    if (!x.expressible) pred = "not priced: " + x.why;
    else if (!x.fits) pred = "INFEASIBLE: " + x.why;
    else {
      pred = metric_text(r.kind, x.predicted);
      char b[32];
      std::snprintf(b, sizeof b, "%+.1f%%%s", 100 * x.error, r.calibration_row ? " (calibration row)" : "");
      err = b;
      pick = picked_text(r, x.pinned.strategy);
      if (x.free_found) {
        own = text(x.free.strategy) + (x.free.strategy.flash ? " flash" : "");
        std::snprintf(b, sizeof b, "%.2fx", x.gain);
        gain = b;
      }
    }
    std::printf("| %zu | %s, %s | %s | %zu | %s%s, %s | %s | %s | %s | %s | %s | %s | %s |\n", i + 1, r.source, r.where, r.model,
                r.gpus, r.cluster, r.inter_gbps > 0 ? " (slower NICs)" : "", r.stack, layout_text(r).c_str(),
                metric_text(r.kind, r.value).c_str(), pred.c_str(), err.c_str(), pick.c_str(), own.c_str(), gain.c_str());
  }
  std::printf("\nStack factors fitted on their calibration rows (stack_profile.hpp holds them rounded):\n\n");
  for (const published_run& r : runs) {
    if (!r.calibration_row) continue;
    const calibration k = calibrate_row(r);
    std::printf("* %s: gemm %.3f from %s %s, %zu GPUs (Megatron constants predicted %.0f tokens/s, measured %.0f)\n", r.stack,
                k.factor, r.model, r.where, r.gpus, k.predicted_before, k.measured);
  }
  const summary s = summarise(runs, res);
  std::printf("\n%zu rows from %zu sources priced (%zu rows in all; %zu not expressible, %zu calibration row(s) not counted); "
              "%zu feasible published runs called infeasible. Median |error| %.1f%%, mean %.1f%%, worst %.1f%%.\n",
              s.priced, s.sources, s.rows, s.not_expressible, s.rows - s.not_expressible - s.counted, s.infeasible,
              100 * s.median_abs, 100 * s.mean_abs, 100 * s.worst_abs);
  std::printf("\nBy source (median |error|, worst):\n\n");
  std::vector<std::string> seen;
  for (const published_run& r : runs) {
    if (std::find(seen.begin(), seen.end(), r.source) != seen.end()) continue;
    seen.emplace_back(r.source);
    std::vector<published_run> sub;
    std::vector<row_result> subr;
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (std::string(runs[i].source) == r.source) sub.push_back(runs[i]), subr.push_back(res[i]);
    const summary t = summarise(sub, subr);
    std::printf("* %s: %zu priced, median %.1f%%, worst %.1f%%%s\n", r.source, t.priced, 100 * t.median_abs, 100 * t.worst_abs,
                t.not_expressible ? (", " + std::to_string(t.not_expressible) + " not expressible").c_str() : "");
  }
  return 0;
}
}  // namespace

// `planner_validation row N`: one published row in full — its source, the layout priced, the step
// by bottleneck, the prediction and the search's free choice.
int print_row(std::size_t n) {
  using namespace validation;
  const std::vector<published_run> runs = published_runs();
  if (n == 0 || n > runs.size()) {
    std::fprintf(stderr, "planner_validation: row %zu does not exist (1..%zu)\n", n, runs.size());
    return 2;
  }
  const published_run& r = runs[n - 1];
  const row_result x = evaluate(r);
  std::printf("row %zu: %s, %s: %s on %zu GPUs (%s), stack %s\npublished layout: %s\npublished: %s\nnote: %s\n", n, r.source, r.where,
              r.model, r.gpus, r.cluster, r.stack, layout_text(r).c_str(), metric_text(r.kind, r.value).c_str(), r.note);
  if (!x.expressible || !x.fits) {
    std::printf("%s\n", x.why.c_str());
    return 0;
  }
  std::printf("priced as: %s%s\n", text(x.pinned.strategy).c_str(), x.pinned.strategy.flash ? " flash" : "");
  for (const cost_item& i : x.pinned.cost.items)
    if (i.seconds > 0) std::printf("  %-32s %10.4f s\n", cost_part_name(i.part), i.seconds);
  std::printf("  %-32s %10.4f s\nmemory per GPU %.2f GB\npredicted: %s (%+.1f%%)\n", "step", x.pinned.cost.step_seconds,
              static_cast<double>(x.pinned.cost.memory.total()) / 1e9, metric_text(r.kind, x.predicted).c_str(), 100 * x.error);
  if (x.free_found)
    std::printf("search's free choice: %s, step %.4f s (%.2fx)\n", text(x.free.strategy).c_str(), x.free.cost.step_seconds, x.gain);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "published") return print_published();
  if (argc > 2 && std::string(argv[1]) == "row") return print_row(static_cast<std::size_t>(std::strtoul(argv[2], nullptr, 10)));
  std::printf("| params | heads | hidden | layers | TP | PP | GPUs | batch | published TFLOP/s | predicted | error | micro-batch, schedule (model's pick at the published split) | search's own choice (same cost model) | its step vs published split |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double sum = 0, worst = 0;
  for (const row& r : table1) {
    const model_desc md = gpt_desc(r.l, r.h, r.heads, 51200, 2048, 0, 1);
    const cluster c = presets::a100_80gb(r.gpus / 8);
    const auto pub = search<1>(md, {r.batch, 2048}, c, published(r));
    if (!pub.found()) {
      std::printf("| %.1fB | ... | does not fit |\n", r.billions);
      continue;
    }
    const double predicted = paper_flops(r) / pub.best().cost.step_seconds / static_cast<double>(r.gpus) / 1e12;
    const double err = 100 * (predicted - r.tflops) / r.tflops;
    sum += std::fabs(err), worst = std::max(worst, std::fabs(err));
    search_options free{};
    free.job = megatron_2021_job();
    const auto own = search<1>(md, {r.batch, 2048}, c, free);
    const strategy_desc& p = pub.best().strategy;
    std::printf("| %.1fB | %zu | %zu | %zu | %zu | %zu | %zu | %zu | %.0f | %.0f | %+.1f%% | b=%zu, %s%s | %s | %.2fx faster |\n", r.billions,
                r.heads, r.h, r.l, r.tp, r.pp, r.gpus, r.batch, r.tflops, predicted, err, p.micro,
                p.pp == 1 ? "no pipeline" : schedule_name(p.schedule),
                p.pp > 1 && p.schedule == schedule_kind::interleaved ? (" V=" + std::to_string(p.chunks)).c_str() : "",
                own.found() ? text(own.best().strategy).c_str() : "none fits",
                own.found() ? pub.best().cost.step_seconds / own.best().cost.step_seconds : 0.0);
  }
  std::printf("\nmean |error| %.1f%%, worst %.1f%%\n\n", sum / 10, worst);

  // ---- 8TP/(nX): GPT-3 175B (tp 8, pp 8, 1024 A100, batch 1536) on 300B tokens; 1T on 450B ----
  constexpr row gpt3{175.0, 96, 12288, 96, 8, 8, 1024, 1536, 140};  // GPT-3 (not a Table 1 row): tp 8, pp 8
  std::printf("| model | GPUs | tokens | X TFLOP/s | 8TP/(nX) | X predicted | run-level model, no failures | vs paper's days |\n|---|---|---|---|---|---|---|---|\n");
  for (int k = 0; k < 2; ++k) {
    const row& r = k == 0 ? gpt3 : table1[9];
    const model_desc md = gpt_desc(r.l, r.h, r.heads, 51200, 2048, 0, 1);
    const std::size_t gpus = k == 0 ? 1024 : 3072, batch = k == 0 ? 1536 : 3072;
    const double tokens = k == 0 ? 300e9 : 450e9, paper_x = k == 0 ? 140e12 : 163e12, paper_days = k == 0 ? 34 : 84;
    cluster c = presets::a100_80gb(gpus / 8);
    c.failures_per_node_day = 0;
    const search_options o = published(r);
    const auto res = search<1>(md, {batch, 2048}, c, o);
    if (!res.found()) continue;
    const run_cost run = estimate_run(md, res.best().cost, batch * 2048, tokens, gpus, c);
    const double formula = narayanan_training_seconds(tokens, static_cast<double>(md.params()), static_cast<double>(gpus), paper_x) / 86400;
    std::printf("| %s | %zu | %.0fB | %.0f (paper) | %.1f days | %.0f (model) | %.1f days | %+.1f%% |\n",
                k == 0 ? "GPT-3 175B" : "1T", gpus, tokens / 1e9, paper_x / 1e12, formula, run.flops_per_gpu / 1e12, run.days,
                100 * (run.days - paper_days) / paper_days);
  }

  // ---- this machine: bench_parallel_step (docs/benchmarks.md) ----
  struct bench {
    const char* name;
    std::size_t tp, pp, dp, b, m;
    schedule_kind k;
    std::size_t v, zero;
    bool sp;
    double ms;
  };
  constexpr auto I = schedule_kind::one_f_one_b;
  constexpr bench rows[] = {{"single", 1, 1, 1, 16, 1, I, 1, 0, false, 308.1},
                            {"dp (zero 0)", 1, 1, 2, 8, 1, I, 1, 0, false, 321.7},
                            {"zero1", 1, 1, 2, 8, 1, I, 1, 1, false, 394.0},
                            {"zero2", 1, 1, 2, 8, 1, I, 1, 2, false, 262.1},
                            {"zero3", 1, 1, 2, 8, 1, I, 1, 3, false, 303.6},
                            {"tp2", 2, 1, 1, 16, 1, I, 1, 0, false, 273.1},
                            {"tp2 + sp", 2, 1, 1, 16, 1, I, 1, 0, true, 148.0},
                            {"dp2 x tp2", 2, 1, 2, 8, 1, I, 1, 0, false, 147.4},
                            {"pp2 gpipe, 4 micro-batches", 1, 2, 1, 4, 4, schedule_kind::gpipe, 1, 0, false, 308.8},
                            {"pp2 1F1B, 4 micro-batches", 1, 2, 1, 4, 4, I, 1, 0, false, 328.4},
                            {"pp2 interleaved (V=2), 4 micro-batches", 1, 2, 1, 4, 4, schedule_kind::interleaved, 2, 0, false, 340.3},
                            {"dp2 x pp2 1F1B", 1, 2, 2, 2, 4, I, 1, 0, false, 555.7}};
  const model_desc md = gpt_desc(4, 128, 4, 256, 64);
  const cluster c = presets::cpu_mpi();
  job_options o{};
  o.precision = full_f32();
  std::printf("\n| strategy | ranks | measured ms/step | predicted | error |\n|---|---|---|---|---|\n");
  int within = 0;
  for (const bench& r : rows) {
    strategy_desc s{};
    s.tp = r.tp, s.pp = r.pp, s.dp = r.dp, s.micro = r.b, s.microbatches = r.m, s.schedule = r.k, s.chunks = r.v, s.zero = r.zero,
    s.sequence_parallel = r.sp;
    const double ms = estimate_step(md, 64, s, c, o).step_seconds * 1e3, err = 100 * (ms - r.ms) / r.ms;
    within += std::fabs(err) <= 25;
    std::printf("| %s | %zu | %.1f | %.1f | %+.1f%% |\n", r.name, s.gpus(), r.ms, ms, err);
  }
  std::printf("\n%d of 12 rows within 25%%\n", within);
  std::printf("\n");
  return print_published();
}
