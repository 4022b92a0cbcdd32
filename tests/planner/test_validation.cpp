// Narayanan et al. 2021 (SC21, arXiv 2104.04473), Table 1: the model predicts every published
// per-GPU throughput within ±15% with the published split (tp, pp, GPUs, batch), full
// recomputation, interleaved 1F1B or 1F1B, micro-batch and chunks chosen by the search.
// docs/planner_validation.md lists the same rows with their errors.
#include <weft/planner/run_cost.hpp>
#include <weft/planner/search.hpp>

#include <catch2/catch.hpp>

#include <cstdio>

using namespace weft::planner;

namespace {
struct row {
  double billions;
  std::size_t heads, h, l, tp, pp, gpus, batch;
  double tflops;  // published, per GPU
};
// Transcribed from Table 1 (sequence 2048, vocabulary 51200, A100-80GB, DGX A100 nodes).
constexpr row table1[] = {{1.7, 24, 2304, 24, 1, 1, 32, 512, 137},       {3.6, 32, 3072, 30, 2, 1, 64, 512, 138},
                          {7.5, 32, 4096, 36, 4, 1, 128, 512, 142},      {18.4, 48, 6144, 40, 8, 1, 256, 1024, 135},
                          {39.1, 64, 8192, 48, 8, 2, 512, 1536, 138},    {76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140},
                          {145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148}, {310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155},
                          {529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163}, {1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163}};

// Megatron-LM 2021 as it ran: full recomputation, no ZeRO, no sequence parallelism, unfused
// softmax, gradient all-reduce after backward (not overlapped), dropout (1-byte masks).
search_options megatron_2021(const row& r) {
  search_options o{};
  o.fixed_tp = r.tp, o.fixed_pp = r.pp;
  o.fix_recompute = true, o.recompute = recompute_kind::full;
  o.fix_zero = true, o.zero = 0;
  o.allow_gpipe = false, o.allow_sequence_parallel = false;
  o.job.fused_attention = false, o.job.overlap_grad_reduce = false;
  return o;
}
// Their FLOP count per iteration (Section 5.1), with recomputation.
double paper_flops(const row& r) {
  const double s = 2048, v = 51200, l = static_cast<double>(r.l), h = static_cast<double>(r.h);
  return 96.0 * static_cast<double>(r.batch) * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}
}  // namespace

TEST_CASE("Narayanan et al. 2021 Table 1 within 15%", "[planner][validation]") {
  for (const row& r : table1) {
    const model_desc md = gpt_desc(r.l, r.h, r.heads, 51200, 2048, 0, 1);
    const auto res = search<1>(md, {r.batch, 2048}, presets::a100_80gb(r.gpus / 8), megatron_2021(r));
    REQUIRE(res.found());
    const double predicted = paper_flops(r) / res.best().cost.step_seconds / static_cast<double>(r.gpus) / 1e12;
    INFO(r.billions << "B: predicted " << predicted << " TFLOP/s, published " << r.tflops);
    CHECK(predicted == Approx(r.tflops).epsilon(0.15));
  }
}

TEST_CASE("the run-level model reproduces 8TP/(nX)", "[planner][validation]") {
  // GPT-3 175B on 300B tokens with 1024 A100 at the model's own throughput, no failures: the
  // run model's days equal the formula's at that throughput (8 = 2·(1 + 2 + 1), recompute).
  const model_desc md = gpt_desc(96, 12288, 96, 51200, 2048, 0, 1);
  cluster c = presets::a100_80gb(128);
  c.failures_per_node_day = 0;
  search_options o{};
  o.fixed_tp = 8, o.fixed_pp = 8, o.fix_recompute = true, o.recompute = recompute_kind::full, o.fix_zero = true;
  o.allow_sequence_parallel = false, o.job.fused_attention = false, o.job.overlap_grad_reduce = false;
  const auto res = search<1>(md, {1536, 2048}, c, o);
  REQUIRE(res.found());
  const run_cost run = estimate_run(md, res.best().cost, 1536 * 2048, 300e9, 1024, c);
  const double x = run.flops_per_gpu;  // hardware FLOP/s per GPU, recomputation counted
  const double formula_days = narayanan_training_seconds(300e9, static_cast<double>(md.params()), 1024, x) / 86400;
  CHECK(run.days == Approx(formula_days).epsilon(0.05));
  CHECK(x / 1e12 == Approx(140).epsilon(0.15));  // the paper's 140 TFLOP/s
  CHECK(run.days == Approx(34).epsilon(0.15));   // the paper's ~34 days
}
