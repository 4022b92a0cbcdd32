#pragma once
// ---- published training runs, with their layouts and measured throughput, and the planner's
// prediction of each with the published layout pinned ----
// The data of docs/planner_validation.md's "Published runs" table: planner_validation prints the
// table from it and tests/planner/test_published_runs.cpp re-runs every row and checks the error
// bounds the page states. Every row names its source (paper and table, or repository and file);
// where a source leaves a choice open (micro-batch, schedule, recompute) the row says so and the
// search picks it, shown in the table. Nothing here is fitted per row: the only fitted numbers are
// the `deepspeed` and `fsdp-h100` stacks' GEMM factors, each from the one row marked as its
// calibration row (left out of the statistics).
#include <weft/planner/run_cost.hpp>
#include <weft/planner/search.hpp>
#include <weft/planner/stack_profile.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace weft::planner::validation {

/// What the source publishes.
enum class metric : unsigned char {
  tflops_megatron,  ///< TFLOP/s per GPU, Narayanan et al.'s count with recomputation: 96·B·s·l·h²·(1 + s/6h + V/16lh)
  step_seconds,     ///< seconds per iteration
  tokens_per_gpu,   ///< tokens per second per GPU
  mfu               ///< model FLOPs utilisation against the bf16 dense peak (6N + 12·l·h·s per token)
};

/// -1 in an int field: the source does not say; the search chooses.
struct published_run {
  const char* source;  ///< citation key (the page's source list)
  const char* where;   ///< table / figure / file
  const char* model;
  bool llama;  ///< llama_desc (SwiGLU, GQA, untied) or gpt_desc (GELU, tied, learned positions)
  std::size_t layers, width, heads, kv_heads, ffn, vocab, mask_bytes;
  const char* cluster;  ///< preset
  double inter_gbps;    ///< per-GPU inter-node GB/s when the cluster's differs from the preset (0: preset)
  std::size_t gpus, tp, pp, dp;
  int zero, micro;  ///< -1: not published
  std::size_t batch, seq;
  int recompute;  ///< 0 none, 1 selective, 2 full, -1 not published
  int sp;         ///< sequence parallelism: 0/1, -1 not published
  int schedule;   ///< 0 1F1B only (no interleaving), 1 interleaved (depth not published), -1 not published
  bool flash;          ///< flash-attention kernels (fused, row statistics kept)
  bool fused;          ///< fused softmax without (s, s) traffic (true with flash)
  bool overlap;        ///< gradient reduction / ZeRO-3 collectives overlapped with compute
  bool fsdp_units;     ///< ZeRO-3 holds per-block units as FSDP / DeepSpeed do (else weft's windows)
  metric kind;
  double value;
  const char* stack;     ///< stack profile (stack_profile.hpp)
  bool calibration_row;  ///< the row the stack's factor was fitted on (not counted in the statistics)
  const char* note;
  std::size_t cp = 1;    ///< context-parallel ranks (GPUs = tp·cp·pp·dp)
  std::size_t first_stage_layers = 0, last_stage_layers = 0;  ///< uneven stages (0: even)
};

constexpr metric TF = metric::tflops_megatron, SEC = metric::step_seconds, TOK = metric::tokens_per_gpu, MFU = metric::mfu;

// Narayanan et al. 2021, Table 2: GPT-3 175B and 530B, ZeRO-3 without model parallelism
// (DeepSpeed) against PTD-P (Megatron-LM), A100-80GB, sequence 2048, vocabulary 51200.
inline published_run narayanan_t2(const char* m, std::size_t l, std::size_t h, std::size_t a, std::size_t gpus,
                                  std::size_t tp, std::size_t pp, bool zero3, int micro, std::size_t batch, double tflops) {
  return {"narayanan2021", "Table 2", m, false, l, h, a, a, 4 * h, 51200, 1, "a100-80gb", 0, gpus, tp, pp,
          gpus / (tp * pp), zero3 ? 3 : 0, micro, batch, 2048, 2, 0, -1, false, false, zero3, zero3, TF, tflops,
          zero3 ? "deepspeed" : "megatron", false,
          zero3 ? "ZeRO-3 (DeepSpeed), no model parallelism, micro-batch as published, no accumulation"
                : "PTD-P (Megatron-LM), micro-batch 1"};
}
// Korthikanti et al. 2022, Tables 3 and 5: one model replica (dp 1), A100-80GB, seq 2048, vocab 51200;
// the iteration time with full recomputation and with "present work" (sequence parallelism + selective).
inline published_run korthikanti(const char* m, std::size_t l, std::size_t h, std::size_t a, std::size_t tp, std::size_t pp,
                                 std::size_t batch, int micro, bool present, double seconds) {
  return {"korthikanti2022", "Table 5", m, false, l, h, a, a, 4 * h, 51200, 1, "a100-80gb", 0, tp * pp, tp, pp, 1, 0, micro,
          batch, 2048, present ? 1 : 2, present ? 1 : 0, -1, false, false, false, false, SEC, seconds, "megatron", false,
          present ? "sequence parallelism + selective recompute" : "full recompute, no sequence parallelism"};
}
// MosaicML llm-foundry, scripts/train/benchmarking/README.md: MPT (GPT-style, ALiBi, vocab 50368)
// under Composer with PyTorch FSDP FULL_SHARD over all GPUs, flash attention, bf16 (amp).
inline published_run mpt(const char* m, std::size_t l, std::size_t h, std::size_t a, const char* cl, std::size_t gpus,
                         std::size_t seq, int micro, std::size_t batch, bool ckpt, double tok, bool calib = false) {
  const bool h100 = std::string(cl) == "h100-sxm";
  return {"llmfoundry", h100 ? "README, H100 80GB BF16" : "README, A100 80GB", m, false, l, h, a, a, 4 * h, 50368, 0, cl, 0,
          gpus, 1, 1, gpus, 3, micro, batch, seq, ckpt ? 2 : 0, 0, -1, true, true, true, true, TOK, tok,
          h100 ? "fsdp-h100" : "megatron", calib, ckpt ? "FULL_SHARD, activation checkpointing" : "FULL_SHARD, no checkpointing"};
}
// torchtitan, docs/performance.md (FSDP2 on 64 A100-80GB, local batch as given, SDPA flash attention).
inline published_run titan(const char* m, std::size_t l, std::size_t h, std::size_t a, std::size_t kv, std::size_t ffn,
                           std::size_t vocab, std::size_t seq, int micro, int rc, double wps, const char* note) {
  return {"torchtitan", "docs/performance.md", m, true, l, h, a, kv, ffn, vocab, 0, "a100-80gb", 0, 64, 1, 1, 64, 3, micro,
          64 * static_cast<std::size_t>(micro), seq, rc, 0, -1, true, true, true, true, TOK, wps, "megatron", false, note};
}

/// The rows. Values transcribed from the sources named; see docs/planner_validation.md for the list.
inline std::vector<published_run> published_runs() {
  std::vector<published_run> r;
  // ---- Narayanan et al. 2021 (SC21), Table 2 ----
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 384, 1, 1, true, 4, 1536, 144));
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 768, 1, 1, true, 2, 1536, 88));
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 1536, 1, 1, true, 1, 1536, 44));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 640, 1, 1, true, 4, 2560, 138));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 1120, 1, 1, true, 2, 2240, 98));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 2240, 1, 1, true, 1, 2240, 48));
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 384, 8, 12, false, 1, 1536, 153));
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 768, 8, 12, false, 1, 1536, 149));
  r.push_back(narayanan_t2("GPT 175B", 96, 12288, 96, 1536, 8, 12, false, 1, 1536, 141));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 560, 8, 35, false, 1, 2240, 171));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 1120, 8, 35, false, 1, 2240, 167));
  r.push_back(narayanan_t2("GPT 530B", 105, 20480, 128, 2240, 8, 35, false, 1, 2240, 159));
  // ---- Korthikanti et al. 2022, Table 5 (configurations of Table 3) ----
  r.push_back(korthikanti("GPT 22B", 48, 6144, 64, 8, 1, 4, -1, false, 1.42));
  r.push_back(korthikanti("GPT 22B", 48, 6144, 64, 8, 1, 4, -1, true, 1.10));
  r.push_back(korthikanti("GPT 175B", 96, 12288, 96, 8, 8, 64, 1, false, 18.13));
  r.push_back(korthikanti("GPT 175B", 96, 12288, 96, 8, 8, 64, 1, true, 13.75));
  r.push_back(korthikanti("GPT 530B", 105, 20480, 128, 8, 35, 280, 1, false, 49.05));
  r.push_back(korthikanti("GPT 530B", 105, 20480, 128, 8, 35, 280, 1, true, 37.83));
  r.push_back(korthikanti("GPT 1T", 128, 25600, 160, 8, 64, 512, 1, false, 94.42));
  r.push_back(korthikanti("GPT 1T", 128, 25600, 160, 8, 64, 512, 1, true, 71.49));
  // ---- Smith et al. 2022 (MT-NLG 530B): DeepSpeed pipeline (1F1B) + Megatron tensor parallelism, ZeRO-1 ----
  for (auto [gpus, tf] : {std::pair<std::size_t, double>{2240, 126}, {2800, 121}, {3360, 113}})
    r.push_back({"smith2022", "Section 2.4", "MT-NLG 530B", false, 105, 20480, 128, 128, 81920, 51200, 1,
                 "a100-80gb", 0, gpus, 8, 35, gpus / 280, 1, 1, 1920, 2048, 2, 0, 0, false, false, false, false, TF, tf,
                 "deepspeed", gpus == 2240, "tp 8, pp 35, batch 1920, micro-batch 1, full recompute"});
  // ---- BigScience BLOOM 176B: Megatron-DeepSpeed, tp 4, pp 12, dp 8, ZeRO-1, 384 A100-80GB on Jean Zay
  // (4 x 100 Gb/s Omni-Path a node: 6.25 GB/s a GPU) ----
  r.push_back({"bloom2022", "paper + BigScience training page", "BLOOM 176B", false, 70, 14336, 112, 112, 57344, 250880, 1,
               "a100-80gb", 6.25, 384, 4, 12, 8, 1, 2, 2048, 2048, 2, 0, 0, false, false, false, false, TF, 150, "deepspeed",
               false, "70 layers on 12 stages: 5 on the first and the last (each with an embedding), 6 on the others, "
               "as DeepSpeed's type:transformer|embedding partition gives (assumed); micro-batch 2, full recompute",
               1, 5, 5});
  // ---- OPT-175B (Zhang et al. 2022): Metaseq FSDP + Megatron tensor parallelism 8, 992 A100-80GB ----
  r.push_back({"zhang2022", "Section 2.4", "OPT 175B", false, 96, 12288, 96, 96, 49152, 50272, 1, "a100-80gb", 0, 992, 8, 1,
               124, 3, -1, 992, 2048, 2, 0, -1, false, false, true, true, TF, 147, "megatron", false,
               "batch '2M tokens' taken as 992 sequences (8 a data-parallel rank); full recompute assumed"});
  // ---- Llama 3 405B (Dubey et al. 2024), Table 4: tp 8, pp 16, FSDP over dp, seq 8192, 16M tokens a batch ----
  r.push_back({"llama3", "Table 4", "Llama 3 405B", true, 126, 16384, 128, 8, 53248, 128256, 0, "h100-sxm", 0, 8192, 8, 16,
               64, -1, 1, 2048, 8192, -1, 1, 1, true, true, true, true, MFU, 0.43, "megatron", false,
               "126 layers on 16 stages, one fewer on the first and the last (7, 14 x 8, 7), interleaved; "
               "MFU against 989 TFLOP/s", 1, 7, 7});
  r.push_back({"llama3", "Table 4", "Llama 3 405B", true, 126, 16384, 128, 8, 53248, 128256, 0, "h100-sxm", 0, 16384, 8, 16,
               128, -1, 1, 2048, 8192, -1, 1, 1, true, true, true, true, MFU, 0.41, "megatron", false,
               "126 layers on 16 stages, one fewer on the first and the last (7, 14 x 8, 7), interleaved; "
               "MFU against 989 TFLOP/s", 1, 7, 7});
  r.push_back({"llama3", "Table 4", "Llama 3 405B", true, 126, 16384, 128, 8, 53248, 128256, 0, "h100-sxm", 0, 16384, 8, 16,
               8, -1, 1, 128, 131072, -1, 1, 1, true, true, true, true, MFU, 0.38, "megatron", false,
               "context parallelism 16 at sequence 131072; dp 8 (the PDF prints 4, which gives neither 16,384 GPUs nor 16M "
               "tokens); 126 layers on 16 stages (7, 14 x 8, 7), interleaved", 16, 7, 7});
  // ---- MosaicML llm-foundry (MPT), A100 80GB ----
  r.push_back(mpt("MPT 1B", 24, 2048, 16, "a100-80gb", 8, 2048, 14, 448, false, 20513));
  r.push_back(mpt("MPT 3B", 32, 2560, 20, "a100-80gb", 8, 2048, 10, 160, false, 10811));
  r.push_back(mpt("MPT 7B", 32, 4096, 32, "a100-80gb", 8, 2048, 6, 96, false, 4641));
  r.push_back(mpt("MPT 7B", 32, 4096, 32, "a100-80gb", 8, 4096, 16, 256, true, 3684));
  r.push_back(mpt("MPT 13B", 40, 5120, 40, "a100-80gb", 8, 2048, 2, 48, false, 2262));
  r.push_back(mpt("MPT 13B", 40, 5120, 40, "a100-80gb", 8, 8192, 5, 120, true, 1795));
  r.push_back(mpt("MPT 30B", 48, 7168, 56, "a100-80gb", 8, 2048, 3, 504, true, 916));
  r.push_back(mpt("MPT 30B", 48, 7168, 56, "a100-80gb", 8, 8192, 1, 168, true, 574));
  // ---- MosaicML llm-foundry (MPT), H100 80GB ----
  r.push_back(mpt("MPT 7B", 32, 4096, 32, "h100-sxm", 8, 2048, 6, 48, false, 10643));
  r.push_back(mpt("MPT 1B", 24, 2048, 16, "h100-sxm", 8, 2048, 14, 112, false, 45455));
  r.push_back(mpt("MPT 13B", 40, 5120, 40, "h100-sxm", 8, 2048, 2, 16, false, 4792, true));
  r.push_back(mpt("MPT 13B", 40, 5120, 40, "h100-sxm", 64, 2048, 2, 128, false, 4800));
  r.push_back(mpt("MPT 30B", 48, 7168, 56, "h100-sxm", 8, 2048, 3, 504, true, 2002));
  r.push_back(mpt("MPT 30B", 48, 7168, 56, "h100-sxm", 32, 2048, 14, 1344, true, 2308));
  r.push_back(mpt("MPT 70B", 80, 8192, 64, "h100-sxm", 64, 2048, 8, 2048, true, 1039));
  // ---- torchtitan on 64 A100-80GB (FSDP2) ----
  r.push_back(titan("Llama 3 8B", 32, 4096, 32, 8, 14336, 128256, 8192, 1, 0, 2973,
                    "selective op checkpointing (matmul outputs kept): priced as none"));
  r.push_back(titan("Llama 3 70B", 80, 8192, 64, 8, 28672, 128256, 8192, 1, 2, 331, "full checkpointing"));
  r.push_back(titan("Llama 2 13B", 40, 5120, 40, 40, 13824, 32000, 4096, 2, 0, 2162, "no checkpointing"));
  r.push_back(titan("Llama 2 70B", 80, 8192, 64, 8, 28672, 32000, 4096, 2, 2, 353, "full checkpointing"));
  return r;
}

/// Narayanan et al.'s FLOPs per iteration, with recomputation (Section 5.1).
inline double megatron_flops(const published_run& r) {
  const double s = static_cast<double>(r.seq), v = static_cast<double>(r.vocab), l = static_cast<double>(r.layers),
               h = static_cast<double>(r.width);
  return 96.0 * static_cast<double>(r.batch) * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}

inline model_desc model_of(const published_run& r) {
  return r.llama ? llama_desc(r.layers, r.width, r.heads, r.kv_heads, r.vocab, r.seq, r.ffn)
                 : gpt_desc(r.layers, r.width, r.heads, r.vocab, r.seq, r.ffn, r.mask_bytes);
}

/// The cluster as published (nominal: utilisation is against its peak).
inline cluster cluster_of(const published_run& r) {
  cluster c = find_preset(r.cluster, (r.gpus + 7) / 8).value;
  if (r.inter_gbps > 0) c.inter_bandwidth = r.inter_gbps * 1e9;
  return c;
}

inline job_options job_of(const published_run& r) {
  job_options j{};
  j.fused_attention = r.fused || r.flash;
  j.overlap_grad_reduce = r.overlap;
  // Megatron-LM sends 1/t of a pipeline activation and all-gathers it on arrival (Narayanan et
  // al. 2021, Section 4.1); DeepSpeed's pipeline engine sends the whole (not assumed otherwise).
  j.scatter_gather_p2p = std::string(r.stack) == "megatron";
  return j;
}

/// How the row's ZeRO-3 holds and gathers: DeepSpeed's of 2021 a parameter tensor at a time
/// (zero3_buffers::per_tensor: one collective and one buffer a tensor), FSDP a unit (block) at a
/// time, else weft's windows.
inline zero3_buffers zero3_of(const published_run& r) {
  if (std::string(r.stack) == "deepspeed" && r.zero == 3) return zero3_buffers::per_tensor;
  return r.fsdp_units ? zero3_buffers::per_layer_units : zero3_buffers::weft;
}

/// Context parallelism as search limits, where the cost model has it (search_options::fixed_cp).
template <class O>
bool pin_cp(O& o, std::size_t cp, bool pin) {
  if constexpr (requires { o.fixed_cp = cp; o.max_cp = cp; }) {
    if (cp > 1) (pin ? o.fixed_cp : o.max_cp) = cp;
    return true;
  } else {
    return cp == 1;
  }
}

/// The published layout as search limits: what the source gives is pinned, the rest searched.
inline search_options pinned_options(const published_run& r) {
  search_options o{};
  o.job = job_of(r);
  o.flash = r.flash;
  o.fixed_tp = r.tp, o.fixed_pp = r.pp, o.fixed_dp = r.dp, o.fixed_ep = 1;
  pin_cp(o, r.cp, true);
  o.first_stage_layers = r.first_stage_layers, o.last_stage_layers = r.last_stage_layers;
  o.zero3_holds = zero3_of(r);
  if (r.micro > 0) o.fixed_micro = static_cast<std::size_t>(r.micro), o.max_micro = std::max<std::size_t>(o.max_micro, o.fixed_micro);
  if (r.zero >= 0) o.fix_zero = true, o.zero = static_cast<std::size_t>(r.zero);
  if (r.recompute >= 0) o.fix_recompute = true, o.recompute = static_cast<recompute_kind>(r.recompute);
  // recompute not published: the search's whole space, partial recomputation included (the
  // fewest blocks a chunk that fit, as Megatron's --recompute-num-layers)
  else o.partial_recompute = true;
  if (r.sp >= 0) o.fix_sequence_parallel = true, o.sequence_parallel = r.sp == 1;
  if (r.schedule == 0) o.allow_interleaved = false;
  if (r.schedule == 1) o.fix_schedule = true, o.schedule = schedule_kind::interleaved;
  o.allow_gpipe = false;
  return o;
}

/// The search's own choice: the same model, batch, GPUs and stack, every split open.
inline search_options free_options(const published_run& r) {
  search_options o{};
  o.job = job_of(r);
  o.flash = r.flash;
  o.fixed_ep = 1;
  pin_cp(o, r.cp, false);  // the search may try context parallelism up to the published degree
  o.zero3_holds = zero3_of(r);
  // a run published with uneven stages: the search may split any depth unevenly too (⌈depth/pp⌉
  // blocks a middle stage, the rest on the first and the last; search_options::uneven_stages)
  o.uneven_stages = r.first_stage_layers != 0 || r.last_stage_layers != 0;
  o.partial_recompute = true;  // the whole space: partial recomputation too
  return o;
}

struct row_result {
  bool expressible = true;  ///< the cost model can state the layout (e.g. no uneven stages)
  std::string why;          ///< when not expressible, or not fitting
  bool fits = false;        ///< a pinned strategy fits in memory
  candidate pinned{};
  double predicted = 0;     ///< in the row's metric
  double error = 0;         ///< predicted throughput / published throughput − 1
  bool free_found = false;
  candidate free{};
  double gain = 0;          ///< pinned step / free step
};

/// The prediction in the row's metric from a step.
inline double metric_of(const published_run& r, const model_desc& md, const step_cost& st) {
  switch (r.kind) {
    case metric::tflops_megatron: return megatron_flops(r) / st.step_seconds / static_cast<double>(r.gpus) / 1e12;
    case metric::step_seconds: return st.step_seconds;
    case metric::tokens_per_gpu:
      return static_cast<double>(r.batch * r.seq) / st.step_seconds / static_cast<double>(r.gpus);
    case metric::mfu: {
      const cluster c = cluster_of(r);
      return estimate_run(md, st, r.batch * r.seq, 1e12, r.gpus, c).mfu;
    }
  }
  return 0;
}


/// Whether a row is priced as published without the search: its micro-batch is not one the
/// search tries (1, 2, 4, 8) and nothing else is left open.
inline bool direct(const published_run& r) {
  const bool searchable = r.micro <= 0 || ((r.micro & (r.micro - 1)) == 0 && r.micro <= 8);
  return !searchable && r.cp == 1 && r.zero >= 0 && r.recompute >= 0 && (r.sp >= 0 || r.tp == 1) && r.pp == 1;
}
inline strategy_desc published_strategy(const published_run& r) {
  strategy_desc s{};
  s.tp = r.tp, s.pp = r.pp, s.dp = r.dp, s.zero = static_cast<std::size_t>(r.zero), s.sequence_parallel = r.sp == 1;
  s.micro = static_cast<std::size_t>(r.micro), s.microbatches = r.batch / (r.dp * s.micro);
  s.recompute = static_cast<recompute_kind>(r.recompute), s.flash = r.flash;
  if (s.zero == 3) s.zero3_holds = zero3_of(r);
  return s;
}

inline row_result evaluate(const published_run& r) {
  row_result out;
  const model_desc md = model_of(r);
  search_options probe{};
  if (!pin_cp(probe, r.cp, true)) {
    out.expressible = false;
    out.why = "context parallelism not expressible";
    return out;
  }
  if (r.layers % r.pp != 0 && r.first_stage_layers == 0 && r.last_stage_layers == 0) {
    out.expressible = false;
    out.why = std::to_string(r.layers) + " layers on " + std::to_string(r.pp) + " stages: uneven stages not expressible";
    return out;
  }
  const stack_profile prof = find_stack(r.stack).value;
  const cluster c = with_stack(cluster_of(r), prof);
  const batch_desc b{r.batch, r.seq};
  if (direct(r)) {
    // every choice published and the micro-batch outside the search's 1, 2, 4, 8: price it as given
    const strategy_desc s = published_strategy(r);
    const step_cost st = estimate_step(md, r.seq, s, c, job_of(r));
    if (!st.fits) {
      out.why = "does not fit: needs " + std::to_string(static_cast<double>(st.memory.total()) / 1e9).substr(0, 5) + " GB";
      return out;
    }
    out.pinned = {s, st};
  } else {
    const auto pub = search<1>(md, b, c, pinned_options(r));
    if (!pub.found()) {
      out.why = "does not fit: the leanest needs " + std::to_string(pub.leanest_bytes / 1e9).substr(0, 5) + " GB";
      return out;
    }
    out.pinned = pub.best();
  }
  out.fits = true;
  out.predicted = metric_of(r, md, out.pinned.cost);
  out.error = r.kind == metric::step_seconds ? r.value / out.predicted - 1 : out.predicted / r.value - 1;
  const auto own = search<1>(md, b, c, free_options(r));
  if (own.found()) {
    out.free_found = true;
    out.free = own.best();
    out.gain = out.pinned.cost.step_seconds / out.free.cost.step_seconds;
  }
  return out;
}

/// The published figure as tokens/s of the whole cluster.
inline double published_tokens_per_second(const published_run& r) {
  const double tokens = static_cast<double>(r.batch * r.seq), n = static_cast<double>(r.gpus);
  switch (r.kind) {
    case metric::tflops_megatron: return tokens / (megatron_flops(r) / (r.value * 1e12 * n));
    case metric::step_seconds: return tokens / r.value;
    case metric::tokens_per_gpu: return r.value * n;
    case metric::mfu: return r.value * n * cluster_of(r).peak_flops_16 / model_of(r).flops_per_token(r.seq);
  }
  return 0;
}

/// The stack's GEMM factor fitted on row `r` (stack_profile.hpp's calibrate), from the Megatron
/// constants (every factor 1), with the layout the row is priced with.
inline calibration calibrate_row(published_run r) {
  r.stack = "megatron";
  const row_result x = evaluate(r);
  if (!x.fits) return {};
  const stack_profile start = stacks::megatron();
  return calibrate(model_of(r), {r.batch, r.seq}, x.pinned.strategy, cluster_of(r), job_of(r), start,
                   published_tokens_per_second(r), stack_factor::gemm);
}

/// Statistics over the rows that count (expressible, not a calibration row).
struct summary {
  std::size_t rows = 0, counted = 0, priced = 0, infeasible = 0, not_expressible = 0, sources = 0;
  double median_abs = 0, mean_abs = 0, worst_abs = 0;
};
inline summary summarise(const std::vector<published_run>& runs, const std::vector<row_result>& res) {
  summary s{};
  std::vector<double> errs;
  std::vector<std::string> srcs;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ++s.rows;
    if (!res[i].expressible) {
      ++s.not_expressible;
      continue;
    }
    if (runs[i].calibration_row) continue;
    ++s.counted;
    if (!res[i].fits) {
      ++s.infeasible;
      continue;
    }
    ++s.priced;
    errs.push_back(std::fabs(res[i].error));
    if (std::find(srcs.begin(), srcs.end(), runs[i].source) == srcs.end()) srcs.emplace_back(runs[i].source);
  }
  s.sources = srcs.size();
  if (!errs.empty()) {
    std::sort(errs.begin(), errs.end());
    const std::size_t n = errs.size();
    s.median_abs = n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
    for (double e : errs) s.mean_abs += e / static_cast<double>(n);
    s.worst_abs = errs.back();
  }
  return s;
}

}  // namespace weft::planner::validation
