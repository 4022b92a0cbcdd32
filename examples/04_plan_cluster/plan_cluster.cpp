/*
 * plan_cluster — "why distribute, and how": the planner's cost model at run time.
 *
 * Give it a model (a preset or GPT/LLaMA dimensions), a global batch and sequence, a token
 * budget and a cluster (a preset, nodes, overrides); optionally pin parts of the strategy.
 * It prints what one GPU would need and why it does not fit, the strategy the search picks
 * (the same constexpr search auto_strategy runs at compile time) with its per-GPU memory
 * and the bottleneck breakdown of a step, throughput, MFU, time, cost, failures and the
 * checkpoint interval, the ranked alternatives, and scaling out (1..N nodes) beside one
 * hypothetical monolithic machine. --json writes all of it as one object, --html FILE a
 * self-contained report with SVG charts.
 *
 *   plan_cluster --model llama2-70b --cluster h100-sxm --nodes 8 --global-batch 1024 --seq 4096 --tokens 2e12
 *   plan_cluster --layers 24 --width 2048 --heads 16 --vocab 50304 --seq 2048 --global-batch 256 \
 *                --cluster a100-80gb --nodes 2 --tp 2 --pp 2 --recompute selective --json
 *   plan_cluster --model mixtral-8x7b --cluster h100-sxm --nodes 4 --global-batch 512 --seq 4096 --pp 1
 * A mixture-of-experts model (a mixtral preset, or --experts E [--top-k K] on a family's
 * dimensions) adds expert parallelism (ep) to the search. --flash prices every strategy with
 * the flash_attention option (row statistics instead of probabilities, the scores recomputed).
 */
#include <weft/parallel/schedule.hpp>      // make_schedule (run time)
#include <weft/parallel/schedule_svg.hpp>  // write_schedule_svg
#include <weft/planner.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace weft::planner;
using weft::recompute_kind;
using weft::schedule_kind;
using weft::stage_memory;

namespace {

// ---- command line ----

struct bad_input {
  std::string what;
};

struct options {
  std::map<std::string, std::string> values;  // --name value
  bool has(const std::string& k) const { return values.count(k) > 0; }
  std::string str(const std::string& k, const std::string& d) const { return has(k) ? values.at(k) : d; }
  double num(const std::string& k, double d) const {
    if (!has(k)) return d;
    const std::string& v = values.at(k);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !std::isfinite(x) || x < 0) throw bad_input{"--" + k + " needs a non-negative number, got '" + v + "'"};
    return x;
  }
  std::size_t count(const std::string& k, std::size_t d) const {
    const double x = num(k, static_cast<double>(d));
    if (x != std::floor(x) || x > 1e15) throw bad_input{"--" + k + " needs a whole number, got '" + values.at(k) + "'"};
    return static_cast<std::size_t>(x);
  }
};

const std::vector<std::string> value_options = {
    "model", "family", "layers", "width", "heads", "kv-heads", "ffn", "vocab", "seq", "global-batch", "micro-batch", "tokens",
    "cluster", "nodes", "gpus-per-node", "price", "failures-per-node-day", "memory-gb", "tflops", "inter-gbps", "islands",
    "island-gbps", "tp", "pp", "dp", "ep", "experts", "top-k", "zero", "schedule", "interleave", "recompute", "max-nodes", "top", "html",
    "mono-memory-gb", "mono-tflops", "mono-bandwidth-tbs", "mono-price", "mono-lead-days", "lead-days", "precision",
    "nvlink-gbps", "fp8-tflops", "cp", "max-cp", "prefetch", "zero3-buffers", "recompute-layers", "first-stage-layers",
    "last-stage-layers", "allocator-overhead", "framework-gb", "shared-ffn", "dense-layers", "dense-ffn",
    "stack", "calibrate", "calibrate-factor"};
const std::vector<std::string> flag_options = {"sp", "no-sp", "json", "no-scaling", "no-overlap", "unfused-attention",
                                               "flash", "help", "scatter-gather", "partial-recompute", "f32-grads",
                                               "dropout", "fp8", "expert-pipeline", "uneven-stages"};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw bad_input{"unexpected argument '" + a + "' (options start with --; see --help)"};
    a = a.substr(2);
    if (std::find(flag_options.begin(), flag_options.end(), a) != flag_options.end()) {
      o.values[a] = "1";
    } else if (std::find(value_options.begin(), value_options.end(), a) != value_options.end()) {
      if (i + 1 >= argc) throw bad_input{"--" + a + " needs a value"};
      o.values[a] = argv[++i];
    } else {
      throw bad_input{"unknown option --" + a + " (see --help)"};
    }
  }
  return o;
}

const char* usage =
    "plan_cluster: plan the training of a transformer LM on a cluster\n"
    "  model:    --model gpt2-small|gpt2-xl|gpt3-175b|llama-7b|llama-13b|llama2-70b|llama3-8b|llama3-70b|llama3-405b\n"
    "            |mixtral-8x7b|mixtral-8x22b (mixtures of experts)\n"
    "            or --family gpt|llama --layers --width --heads [--kv-heads] [--ffn] --vocab\n"
    "            [--experts E --top-k K: each MLP a mixture of E experts of width ffn, k per token]\n"
    "  job:      --seq --global-batch [--micro-batch] --tokens [--precision bf16|f32]\n"
    "            [--shared-ffn W (shared experts' width) --dense-layers D --dense-ffn W (dense first blocks)]\n"
    "  cluster:  --cluster a100-80gb|h100-sxm|h200|h800|b200|cpu-mpi --nodes [--gpus-per-node --price (USD/GPU-hour)\n"
    "            --failures-per-node-day --memory-gb --tflops --fp8-tflops --nvlink-gbps --inter-gbps (per GPU,\n"
    "            one direction) --islands --island-gbps]\n"
    "  fixed:    --tp --pp --dp --ep --zero --schedule 1f1b|gpipe|interleaved --interleave V --sp|--no-sp\n"
    "            --recompute none|selective|full --recompute-layers N (of a stage, with full) --partial-recompute\n"
    "            --cp N (context parallelism) --max-cp N --first-stage-layers N --last-stage-layers N --uneven-stages\n"
    "            --expert-pipeline (ep with pp > 1) --zero3-buffers weft|units|tensors --prefetch N (ZeRO-3)\n"
    "  stack:    --no-overlap (gradient reduction after backward) --unfused-attention (no flash attention)\n"
    "            --flash (the flash_attention option: row statistics kept, not probabilities; recompute none|full)\n"
    "            --scatter-gather (pipeline sends 1/t, Megatron's) --fp8 (linear layers at the FP8 peak)\n"
    "            --f32-grads (18 bytes a parameter) --dropout (1-byte masks) --allocator-overhead F --framework-gb G\n"
    "  profile:  --stack megatron|deepspeed|fsdp-h100 (efficiency profile, docs/planner.md)\n"
    "            --calibrate TOKENS_PER_S [--calibrate-factor gemm|comm|memory]: fit the profile's factor to one\n"
    "            measured step of the layout given by --tp --pp --dp [--micro-batch --zero --recompute ...]\n"
    "  compare:  --max-nodes N --lead-days D (cluster) --mono-memory-gb --mono-tflops --mono-bandwidth-tbs\n"
    "            --mono-price (USD/hour) --mono-lead-days;  --no-scaling\n"
    "  output:   --json (one JSON object on stdout) --html FILE --top K\n";

// ---- model presets ----

struct model_spec {
  std::string name, family;
  model_desc desc;
};

model_spec model_from(const options& o, std::size_t seq) {
  struct preset {
    const char* name;
    const char* family;
    std::size_t layers, width, heads, kv, ffn, vocab;
    std::size_t experts = 0, top_k = 0;  // a mixture of experts in every block (moe_llama: SwiGLU experts)
  };
  static const preset presets_[] = {
      {"gpt2-small", "gpt", 12, 768, 12, 12, 3072, 50304},      {"gpt2-xl", "gpt", 48, 1600, 25, 25, 6400, 50304},
      {"gpt3-175b", "gpt", 96, 12288, 96, 96, 49152, 51200},    {"llama-7b", "llama", 32, 4096, 32, 32, 11008, 32000},
      {"llama-13b", "llama", 40, 5120, 40, 40, 13824, 32000},   {"llama2-70b", "llama", 80, 8192, 64, 8, 28672, 32000},
      {"llama3-8b", "llama", 32, 4096, 32, 8, 14336, 128256},   {"llama3-70b", "llama", 80, 8192, 64, 8, 28672, 128256},
      {"llama3-405b", "llama", 126, 16384, 128, 8, 53248, 128256},
      {"mixtral-8x7b", "llama", 32, 4096, 32, 8, 14336, 32000, 8, 2},
      {"mixtral-8x22b", "llama", 56, 6144, 48, 8, 16384, 32768, 8, 2}};
  std::string family = o.str("family", "gpt");
  std::size_t layers = 0, width = 0, heads = 0, kv = 0, ffn = 0, vocab = 0, experts = 0, top_k = 0;
  std::string name = "custom";
  if (o.has("model")) {
    const std::string m = o.str("model", "");
    const preset* p = nullptr;
    for (const preset& q : presets_)
      if (m == q.name) p = &q;
    if (!p) throw bad_input{"unknown --model '" + m + "' (see --help for the presets)"};
    name = p->name, family = p->family, layers = p->layers, width = p->width, heads = p->heads, kv = p->kv, ffn = p->ffn,
    vocab = p->vocab, experts = p->experts, top_k = p->top_k;
  }
  if (o.has("kv-heads") && !o.has("family") && !o.has("model")) family = "llama";
  layers = o.count("layers", layers), width = o.count("width", width), heads = o.count("heads", heads);
  kv = o.count("kv-heads", kv == 0 ? heads : kv), ffn = o.count("ffn", ffn), vocab = o.count("vocab", vocab);
  if (family != "gpt" && family != "llama") throw bad_input{"--family must be gpt or llama, got '" + family + "'"};
  if (layers == 0 || width == 0 || heads == 0 || vocab == 0)
    throw bad_input{"give a --model preset or --layers, --width, --heads and --vocab (all at least 1)"};
  if (width % heads != 0) throw bad_input{"--width must be divisible by --heads"};
  if (kv == 0 || heads % kv != 0) throw bad_input{"--heads must be divisible by --kv-heads"};
  experts = o.count("experts", experts), top_k = o.count("top-k", top_k == 0 ? 2 : top_k);
  if (experts > 0 && (top_k == 0 || top_k > experts)) throw bad_input{"--top-k must be between 1 and --experts"};
  model_spec s{name, family, {}};
  if (experts == 0) {
    s.desc = family == "gpt" ? gpt_desc(layers, width, heads, vocab, seq, ffn) : llama_desc(layers, width, heads, kv, vocab, seq, ffn);
  } else {  // moe_gpt (GELU experts) or moe_llama (SwiGLU experts, Mixtral); ffn is an expert's width
    if (ffn == 0) ffn = family == "gpt" ? 4 * width : (8 * width / 3 + 63) / 64 * 64;
    s.desc = family == "gpt" ? moe_gpt_desc(layers, width, heads, vocab, seq, experts, top_k, ffn)
                             : moe_llama_desc(layers, width, heads, kv, vocab, seq, experts, top_k, ffn);
    s.family = "moe_" + family;
    const std::size_t dense = o.count("dense-layers", 0), shared = o.count("shared-ffn", 0);
    if (dense >= layers) throw bad_input{"--dense-layers must be fewer than --layers"};
    if (dense > 0 || shared > 0) s.desc = with_shared_and_dense(s.desc, shared, dense, o.count("dense-ffn", dense ? 4 * width : 0));
  }
  if (experts == 0 && (o.has("dense-layers") || o.has("shared-ffn")))
    throw bad_input{"--dense-layers and --shared-ffn describe a mixture of experts (--experts)"};
  if (o.has("dropout")) s.desc.mask_bytes = 1;  // dropout after attention and the MLP: 1-byte masks
  return s;
}

cluster cluster_from(const options& o, std::size_t nodes) {
  const std::string name = o.str("cluster", "h100-sxm");
  preset_lookup p = find_preset(name, nodes);
  if (!p.found) throw bad_input{"unknown --cluster '" + name + "' (a100-80gb, h100-sxm, h200, h800, b200, cpu-mpi)"};
  cluster c = p.value;
  c.gpus_per_node = o.count("gpus-per-node", c.gpus_per_node);
  if (c.gpus_per_node == 0) throw bad_input{"--gpus-per-node must be at least 1"};
  c.price_per_gpu_hour = o.num("price", c.price_per_gpu_hour);
  c.failures_per_node_day = o.num("failures-per-node-day", c.failures_per_node_day);
  if (o.has("memory-gb")) c.memory_bytes = o.num("memory-gb", 0) * 1e9;
  if (o.has("tflops")) c.peak_flops_16 = o.num("tflops", 0) * 1e12;
  if (o.has("inter-gbps")) c.inter_bandwidth = o.num("inter-gbps", 0) * 1e9;
  if (o.has("nvlink-gbps")) c.intra_bandwidth = o.num("nvlink-gbps", 0) * 1e9;
  if (o.has("fp8-tflops")) c.peak_flops_8 = o.num("fp8-tflops", 0) * 1e12;
  if (c.intra_bandwidth <= 0 || c.inter_bandwidth <= 0) throw bad_input{"--nvlink-gbps and --inter-gbps must be positive"};
  c.islands = o.count("islands", 1);
  if (c.islands == 0) throw bad_input{"--islands must be at least 1"};
  if (o.has("island-gbps")) c.island_bandwidth = o.num("island-gbps", 0) * 1e9;
  return c;
}

search_options search_from(const options& o, const precision_desc& p) {
  search_options s{};
  s.job.precision = p;
  s.job.overlap_grad_reduce = !o.has("no-overlap");     // a stack that reduces gradients after backward
  s.job.fused_attention = !o.has("unfused-attention");  // (s, s) scores through memory (no flash attention)
  // every strategy keeps row statistics instead of probabilities (a pinned selective recompute is none then)
  s.flash = o.has("flash");
  if (s.flash && o.has("unfused-attention")) throw bad_input{"--flash runs fused attention kernels; drop --unfused-attention"};
  s.fixed_tp = o.count("tp", 0), s.fixed_pp = o.count("pp", 0), s.fixed_dp = o.count("dp", 0), s.fixed_ep = o.count("ep", 0);
  s.fixed_micro = o.count("micro-batch", 0);
  if (s.fixed_micro > s.max_micro) s.max_micro = s.fixed_micro;
  if (o.has("zero")) {
    s.fix_zero = true, s.zero = o.count("zero", 0);
    if (s.zero > 3) throw bad_input{"--zero must be 0, 1, 2 or 3"};
  }
  if (o.has("schedule")) {
    const std::string k = o.str("schedule", "");
    s.fix_schedule = true;
    if (k == "1f1b") s.schedule = schedule_kind::one_f_one_b;
    else if (k == "gpipe") s.schedule = schedule_kind::gpipe;
    else if (k == "interleaved") s.schedule = schedule_kind::interleaved;
    else throw bad_input{"--schedule must be 1f1b, gpipe or interleaved, got '" + k + "'"};
  }
  if (o.has("interleave")) {
    s.fixed_chunks = o.count("interleave", 0);
    if (s.fixed_chunks < 2) throw bad_input{"--interleave needs V >= 2 model chunks per stage"};
    s.max_chunks = std::max(s.max_chunks, s.fixed_chunks);
    s.fix_schedule = true, s.schedule = schedule_kind::interleaved;
  }
  if (o.has("sp")) s.fix_sequence_parallel = true, s.sequence_parallel = true;
  if (o.has("no-sp")) s.fix_sequence_parallel = true, s.sequence_parallel = false;
  if (o.has("recompute")) {
    const std::string r = o.str("recompute", "");
    s.fix_recompute = true;
    if (r == "none") s.recompute = recompute_kind::none;
    else if (r == "selective") s.recompute = recompute_kind::selective;
    else if (r == "full") s.recompute = recompute_kind::full;
    else throw bad_input{"--recompute must be none, selective or full, got '" + r + "'"};
  }
  s.job.scatter_gather_p2p = o.has("scatter-gather");
  s.job.fp8 = o.has("fp8");
  s.job.allocator_overhead = o.num("allocator-overhead", 0);
  s.job.framework_bytes = o.num("framework-gb", 0) * 1e9;
  s.partial_recompute = o.has("partial-recompute");
  if (o.has("recompute-layers")) {
    s.recompute_layers = o.count("recompute-layers", 0);
    if (s.recompute_layers == 0) throw bad_input{"--recompute-layers needs at least 1 block"};
    if (s.fix_recompute && s.recompute != recompute_kind::full) throw bad_input{"--recompute-layers goes with --recompute full"};
    s.fix_recompute = true, s.recompute = recompute_kind::full;
  }
  s.fixed_cp = o.count("cp", 0), s.max_cp = o.count("max-cp", 1);
  if (o.has("cp") && s.fixed_cp == 0) throw bad_input{"--cp must be at least 1"};
  if (s.max_cp == 0) throw bad_input{"--max-cp must be at least 1"};
  s.first_stage_layers = o.count("first-stage-layers", 0), s.last_stage_layers = o.count("last-stage-layers", 0);
  s.uneven_stages = o.has("uneven-stages");  // where pp does not divide the depth: fewer blocks on the first and last
  s.allow_expert_pipeline = o.has("expert-pipeline") || (s.fixed_ep > 1 && s.fixed_pp > 1);
  if (o.has("zero3-buffers")) {
    const std::string z = o.str("zero3-buffers", "");
    if (z != "weft" && z != "units" && z != "tensors")
      throw bad_input{"--zero3-buffers must be weft, units or tensors, got '" + z + "'"};
    // tensors: DeepSpeed's ZeRO-3 of 2021, a collective and a buffer a parameter tensor
    s.zero3_holds = z == "units" ? zero3_buffers::per_layer_units : z == "tensors" ? zero3_buffers::per_tensor : zero3_buffers::weft;
  }
  s.prefetch = o.count("prefetch", 1);
  return s;
}

// ---- formatting ----

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}
std::string gb(double bytes) { return fmt("%.1f GB", bytes / 1e9); }
std::string money(double usd) {
  if (usd >= 1e6) return fmt("$%.2fM", usd / 1e6);
  if (usd >= 1e3) return fmt("$%.1fk", usd / 1e3);
  return fmt("$%.0f", usd);
}
std::string duration(double seconds) {
  if (seconds >= 86400) return fmt("%.1f days", seconds / 86400);
  if (seconds >= 3600) return fmt("%.1f h", seconds / 3600);
  if (seconds >= 60) return fmt("%.1f min", seconds / 60);
  return fmt("%.2f s", seconds);
}
std::string strategy_text(const strategy_desc& s) {
  std::string t = "tp " + std::to_string(s.tp) + (s.sequence_parallel ? "+sp" : "") + ", pp " + std::to_string(s.pp);
  if (s.pp > 1) t += std::string(" (") + schedule_name(s.schedule);
  if (s.pp > 1 && s.schedule == schedule_kind::interleaved) t += " V=" + std::to_string(s.chunks);
  t += std::string(s.pp > 1 ? ")" : "") + ", dp " + std::to_string(s.dp) + (s.ep > 1 ? ", ep " + std::to_string(s.ep) : "") + ", zero " + std::to_string(s.zero) + ", micro-batch " + std::to_string(s.micro) +
       " x " + std::to_string(s.microbatches) + ", recompute " + recompute_name(s.recompute);
  if (s.cp > 1) t += ", cp " + std::to_string(s.cp);
  if (s.uneven()) t += ", stages " + std::to_string(s.first_stage_layers) + "/.../" + std::to_string(s.last_stage_layers) + " blocks";
  if (s.recompute == recompute_kind::full && s.recompute_layers)  // recompute_layers counts a model chunk's blocks
    t += " (" + std::to_string(s.recompute_layers) +
         (s.pp > 1 && s.schedule == schedule_kind::interleaved ? " blocks a chunk)" : " blocks a stage)");
  if (s.flash) t += ", flash attention";
  return t;
}
std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (c == '\n') r += "\\n";
    else r += c;
  }
  return r;
}
std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", x);  // 9 digits: the breakdown's rounded parts add up to the step
  return b;
}

// ---- what the explorer computes ----

struct scaling_row {
  std::size_t nodes = 0;
  bool found = false;
  candidate best{};
  run_cost run{};
  double leanest = 0;
};

struct monolith {
  cluster machine{};
  double lead_days = 0;
  bool found = false;
  candidate best{};
  run_cost run{};
  double need = 0;
};

struct report {
  model_spec model;
  batch_desc batch{};
  double tokens = 0;
  precision_desc precision{};
  bool flash = false;  // --flash: every strategy with flash attention
  cluster c{};
  search_result<16> result{};
  std::size_t top = 5;
  stage_memory one_gpu{}, one_gpu_full{};
  std::vector<stage_memory> stages;
  run_cost run{};
  std::vector<scaling_row> scaling;
  monolith mono{};
  double lead_days = 0;
  stack_profile stack{};             // --stack: timing runs on with_stack(c, stack); MFU against c's peak
  std::optional<calibration> cal;    // --calibrate: the fit, and the layout it was fitted on
  stack_factor cal_factor = stack_factor::gemm;
  strategy_desc cal_strategy{};
};
std::string stack_json(const report& r);  // the stack profile and the calibration (--stack, --calibrate)

scaling_row scale_to(const report& r, const options& o, const search_options& so, std::size_t nodes) {
  scaling_row row;
  row.nodes = nodes;
  cluster c = cluster_from(o, nodes);
  const auto res = search<1>(r.model.desc, r.batch, with_stack(c, r.stack), so);
  row.leanest = res.leanest_bytes;
  if (!res.found()) return row;
  row.found = true;
  row.best = res.best();
  row.run = estimate_run(r.model.desc, row.best.cost, r.batch.tokens(), r.tokens, c.gpus(), c, r.precision);
  return row;
}

// ---- text output ----

void print_text(const report& r) {
  const model_desc& md = r.model.desc;
  const double limit = r.c.memory_bytes * r.c.usable_memory_fraction;
  std::printf("== job ==\n");
  std::printf("model %s (%s): %.2fB parameters, %zu layers, width %zu, %zu heads (%zu kv), ffn %zu, vocab %zu\n",
              r.model.name.c_str(), r.model.family.c_str(), static_cast<double>(md.params()) / 1e9, md.depth, md.width,
              md.heads, md.kv_heads, md.ffn, md.vocab);
  if (md.experts > 0)
    std::printf("mixture of experts: %zu experts of ffn %zu per block, top %zu; %.2fB expert parameters; the search tries ep "
                "(expert parallelism) dividing %zu\n",
                md.experts, md.ffn, md.top_k, static_cast<double>(md.expert_params) / 1e9, md.experts);
  std::printf("batch %zu sequences x %zu tokens = %zu tokens per step; %.3g tokens to train; %s%s\n", r.batch.sequences,
              r.batch.seq, r.batch.tokens(), r.tokens, r.precision.half() ? "bf16 with f32 master weights" : "f32",
              r.flash ? "; flash attention (row statistics, not probabilities)" : "");
  std::printf("cluster %s: %zu nodes x %zu GPUs = %zu GPUs, %.0f GB each (%.0f GB usable), %.0f TFLOP/s peak, $%.2f/GPU-hour%s\n",
              std::string(r.c.name).c_str(), r.c.nodes, r.c.gpus_per_node, r.c.gpus(), r.c.memory_bytes / 1e9, limit / 1e9,
              (r.precision.half() && !r.c.cpu ? r.c.peak_flops_16 : r.c.peak_flops_32) / 1e12, r.c.price_per_gpu_hour,
              r.c.islands > 1 ? (", " + std::to_string(r.c.islands) + " islands joined at " + fmt("%.2f", r.c.island_bandwidth / 1e9) + " GB/s per GPU").c_str() : "");

  std::printf("\n== one GPU alone (micro-batch 1) ==\n");
  const stage_memory& g = r.one_gpu;
  std::printf("parameters %s + gradients %s + optimizer state %s + activations %s = %s (full recompute: activations %s, total %s)\n",
              gb(static_cast<double>(g.param_bytes)).c_str(), gb(static_cast<double>(g.grad_bytes)).c_str(),
              gb(static_cast<double>(g.optimizer_bytes)).c_str(), gb(static_cast<double>(g.activations_total())).c_str(),
              gb(static_cast<double>(g.total())).c_str(), gb(static_cast<double>(r.one_gpu_full.activations_total())).c_str(),
              gb(static_cast<double>(r.one_gpu_full.total())).c_str());
  if (static_cast<double>(g.total()) <= limit)
    std::printf("fits one GPU: distributing is for speed, not memory\n");
  else if (static_cast<double>(g.model_state_bytes()) > limit)
    std::printf("does not fit: the model states alone (%s, %zu bytes per parameter) exceed the %s usable; they must be sharded (tp, pp, ZeRO) over at least %.0f GPUs\n",
                gb(static_cast<double>(g.model_state_bytes())).c_str(), r.precision.states.total(), gb(limit).c_str(),
                std::ceil(static_cast<double>(g.model_state_bytes()) / limit));
  else if (static_cast<double>(r.one_gpu_full.total()) <= limit)
    std::printf("does not fit as is: the activations push it over %s; full recomputation would fit, at about a third more compute\n",
                gb(limit).c_str());
  else
    std::printf("does not fit: even with full recomputation it needs %s of %s usable\n", gb(static_cast<double>(r.one_gpu_full.total())).c_str(),
                gb(limit).c_str());

  std::printf("\n== strategy on %zu GPUs ==\n", r.c.gpus());
  if (r.result.layouts == 0) {
    std::printf("no split of %zu GPUs into tp x pp x dp (x ep) divides the model (heads, kv heads, ffn, vocab, depth, experts) and the global batch of %zu%s\n",
                r.c.gpus(), r.batch.sequences, " with the choices pinned on the command line");
  } else if (!r.result.found()) {
    std::printf("no strategy fits: the leanest of %zu priced needs %s per GPU, %s usable: short by %s\n", r.result.evaluated,
                gb(r.result.leanest_bytes).c_str(), gb(limit).c_str(), gb(r.result.leanest_bytes - limit).c_str());
    for (const scaling_row& s : r.scaling)
      if (s.found) {
        std::printf("the smallest cluster in the scaling table that fits: %zu nodes (%zu GPUs)\n", s.nodes, s.nodes * r.c.gpus_per_node);
        break;
      }
  } else {
    const candidate& b = r.result.best();
    std::printf("chosen: %s\n", strategy_text(b.strategy).c_str());
    std::printf("(%zu strategies priced, %zu fit, over %zu splits)\n", r.result.evaluated, r.result.feasible, r.result.layouts);
    // working: ZeRO's whole-size gradient and gathered-parameter buffers; comm: the collectives'
    // temporaries in flight (gradient buckets). total = the columns before it.
    std::printf("\nper-GPU memory by pipeline stage (GB):\n  %5s %9s %9s %9s %9s %11s %9s %9s %9s\n", "stage", "params",
                "grads", "optimizer", "working", "activations", "comm", "total", "free");
    for (const stage_memory& m : r.stages)
      std::printf("  %5zu %9.2f %9.2f %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f\n", m.stage, m.param_bytes / 1e9,
                  m.grad_bytes / 1e9, m.optimizer_bytes / 1e9, m.working_bytes / 1e9, m.activations_total() / 1e9,
                  m.comm_bytes / 1e9, m.total() / 1e9, (limit - static_cast<double>(m.total())) / 1e9);
    // the terms beyond the plan's buffers (job_options: allocator fragmentation, framework bytes)
    std::printf("  + allocator overhead and framework: %.2f GB (peak stage needs %.2f GB of %.2f usable; %d-byte states a parameter)\n",
                b.cost.memory_overhead / 1e9, b.cost.memory_required() / 1e9, limit / 1e9, static_cast<int>(r.precision.states.total()));
    std::printf("\nstep %.3f s, by bottleneck:\n", b.cost.step_seconds);
    for (const cost_item& i : b.cost.items)
      std::printf("  %-30s %9.3f s %6.1f%%%s\n", cost_part_name(i.part), i.seconds, 100 * i.seconds / b.cost.step_seconds,
                  i.on == link_kind::none ? "" : (std::string("  on ") + link_name(i.on)).c_str());
    if (b.cost.dp_hidden_seconds > 0) std::printf("  (data-parallel comm hidden behind backward: %.3f s)\n", b.cost.dp_hidden_seconds);
    const run_cost& u = r.run;
    std::printf("\n== run ==\n");
    std::printf("%.0f tokens/s, MFU %.1f%% (hardware %.1f%%, %.0f TFLOP/s per GPU)\n", u.tokens_per_second, 100 * u.mfu, 100 * u.hfu,
                u.flops_per_gpu / 1e12);
    std::printf("train %s of compute; %s wall with checkpoints and failures; %.0f GPU-hours; %s\n", duration(u.train_seconds).c_str(),
                duration(u.wall_seconds).c_str(), u.gpu_hours, money(u.cost_usd).c_str());
    std::printf("failures: MTBF of the job %s, %.1f interruptions expected; checkpoint %s written in %s, every %.0f min (Young/Daly); lost to checkpoints %s, to failures %s\n",
                duration(u.mtbf_seconds).c_str(), u.expected_interruptions, gb(u.checkpoint_bytes).c_str(),
                duration(u.checkpoint_write_seconds).c_str(), u.checkpoint_interval_seconds / 60, duration(u.checkpoint_lost_seconds).c_str(),
                duration(u.failure_lost_seconds).c_str());
    std::printf("\nalternatives (fastest first):\n");
    for (std::size_t i = 1; i < r.result.count && i <= r.top; ++i) {
      const candidate& a = r.result.ranked[i];
      std::printf("  %5.3f s/step (+%4.1f%%) %5.1f GB  %s\n", a.cost.step_seconds,
                  100 * (a.cost.step_seconds / b.cost.step_seconds - 1), a.cost.memory.total() / 1e9, strategy_text(a.strategy).c_str());
    }
  }
  if (!r.scaling.empty()) {
    std::printf("\n== scaling out (%s nodes of %zu GPUs) ==\n", std::string(r.c.name).c_str(), r.c.gpus_per_node);
    std::printf("  %5s %6s %12s %8s %6s %7s %7s %7s %7s %7s %9s %11s  %s\n", "nodes", "GPUs", "tokens/s", "speedup", "eff", "bubble",
                "tp", "pp", "dp", "comp", "days", "cost", "strategy");
    const scaling_row* first = nullptr;
    for (const scaling_row& s : r.scaling) {
      if (!s.found) {
        std::printf("  %5zu %6zu   does not fit (needs %s per GPU)\n", s.nodes, s.nodes * r.c.gpus_per_node, gb(s.leanest).c_str());
        continue;
      }
      if (!first) first = &s;
      const double speed = s.run.tokens_per_second / first->run.tokens_per_second;
      const double eff = speed * static_cast<double>(first->nodes) / static_cast<double>(s.nodes);
      const step_cost& k = s.best.cost;
      auto pct = [&](cost_part p) { return 100 * k.seconds(p) / k.step_seconds; };
      std::printf("  %5zu %6zu %12.0f %7.2fx %5.0f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %9.1f %11s  %s\n", s.nodes,
                  s.nodes * r.c.gpus_per_node, s.run.tokens_per_second, speed, 100 * eff, pct(cost_part::bubble),
                  pct(cost_part::tensor_parallel), pct(cost_part::pipeline_p2p), pct(cost_part::data_parallel),
                  pct(cost_part::compute) + pct(cost_part::recompute), s.run.days, money(s.run.cost_usd).c_str(),
                  strategy_text(s.best.strategy).c_str());
    }
    const monolith& m = r.mono;
    std::printf("\n== one monolithic machine (hypothetical: %.0f GB, %.0f TFLOP/s, %.1f TB/s, $%.0f/hour, lead time %.0f days) ==\n",
                m.machine.memory_bytes / 1e9, m.machine.peak_flops_16 / 1e12, m.machine.memory_bandwidth / 1e12,
                m.machine.price_per_gpu_hour, m.lead_days);
    if (!m.found) {
      std::printf("does not fit: needs %s\n", gb(m.need).c_str());
    } else {
      std::printf("%.0f tokens/s, MFU %.1f%%, %.1f days to train, %s; done after %.1f days with the lead time\n",
                  m.run.tokens_per_second, 100 * m.run.mfu, m.run.days, money(m.run.cost_usd).c_str(), m.lead_days + m.run.days);
    }
    // the cluster of the scaling table that finishes first (lead time counted) and the cheapest
    const scaling_row* fastest = nullptr;
    const scaling_row* cheapest = nullptr;
    for (const scaling_row& s : r.scaling) {
      if (!s.found) continue;
      if (!fastest || s.run.days < fastest->run.days) fastest = &s;
      if (!cheapest || s.run.cost_usd < cheapest->run.cost_usd) cheapest = &s;
    }
    if (fastest) {
      const double cluster_done = r.lead_days + fastest->run.days;
      std::printf("cluster: %zu nodes done after %.1f days (lead time %.0f days), %s; cheapest: %zu nodes, %s\n", fastest->nodes,
                  cluster_done, r.lead_days, money(fastest->run.cost_usd).c_str(), cheapest->nodes, money(cheapest->run.cost_usd).c_str());
      if (m.found) {
        const double mono_done = m.lead_days + m.run.days;
        std::printf("verdict: %s finishes first (%.1f vs %.1f days); %s is cheaper (%s vs %s)\n",
                    cluster_done <= mono_done ? "the cluster" : "the monolithic machine", std::min(cluster_done, mono_done),
                    std::max(cluster_done, mono_done), cheapest->run.cost_usd <= m.run.cost_usd ? "the cluster" : "the monolithic machine",
                    money(std::min(cheapest->run.cost_usd, m.run.cost_usd)).c_str(),
                    money(std::max(cheapest->run.cost_usd, m.run.cost_usd)).c_str());
      } else {
        std::printf("verdict: only the cluster can train it\n");
      }
    }
  }
}

// ---- JSON ----

std::string strategy_json(const strategy_desc& s) {
  std::ostringstream j;
  j << "{\"tp\":" << s.tp << ",\"pp\":" << s.pp << ",\"dp\":" << s.dp << ",\"ep\":" << s.ep << ",\"zero\":" << s.zero << ",\"schedule\":\""
    << schedule_name(s.schedule) << "\",\"chunks\":" << (s.schedule == schedule_kind::interleaved ? s.chunks : 1)
    << ",\"micro_batch\":" << s.micro << ",\"microbatches\":" << s.microbatches << ",\"recompute\":\"" << recompute_name(s.recompute)
    << "\",\"sequence_parallel\":" << (s.sequence_parallel ? "true" : "false") << ",\"flash_attention\":" << (s.flash ? "true" : "false")
    << ",\"cp\":" << s.cp << ",\"recompute_layers\":" << s.recompute_layers << ",\"first_stage_layers\":" << s.first_stage_layers
    << ",\"last_stage_layers\":" << s.last_stage_layers << "}";
  return j.str();
}
std::string memory_json(const stage_memory& m) {
  std::ostringstream j;
  j << "{\"stage\":" << m.stage << ",\"params_bytes\":" << m.param_bytes << ",\"grads_bytes\":" << m.grad_bytes
    << ",\"optimizer_bytes\":" << m.optimizer_bytes << ",\"working_bytes\":" << m.working_bytes << ",\"comm_bytes\":" << m.comm_bytes
    << ",\"activations_bytes\":" << m.activations_total() << ",\"total_bytes\":" << m.total() << "}";
  return j.str();
}
std::string breakdown_json(const step_cost& c) {
  std::ostringstream j;
  j << "[";
  for (std::size_t i = 0; i < c.items.size(); ++i) {
    const cost_item& it = c.items[i];
    j << (i ? "," : "") << "{\"part\":\"" << cost_part_name(it.part) << "\",\"seconds\":" << num(it.seconds)
      << ",\"fraction\":" << num(it.seconds / c.step_seconds) << ",\"link\":\"" << link_name(it.on) << "\"}";
  }
  j << "]";
  return j.str();
}

void print_json(const report& r, std::ostream& os) {
  const bool ok = r.result.found();
  const candidate* b = ok ? &r.result.best() : nullptr;
  const model_desc& md = r.model.desc;
  os << "{\"model\":{\"name\":\"" << json_escape(r.model.name) << "\",\"family\":\"" << r.model.family << "\",\"params\":" << md.params()
     << ",\"layers\":" << md.depth << ",\"width\":" << md.width << ",\"heads\":" << md.heads << ",\"kv_heads\":" << md.kv_heads
     << ",\"ffn\":" << md.ffn << ",\"vocab\":" << md.vocab << ",\"experts\":" << md.experts << ",\"top_k\":" << md.top_k << "}";
  os << ",\"batch\":{\"sequences\":" << r.batch.sequences << ",\"seq\":" << r.batch.seq << "},\"tokens\":" << num(r.tokens);
  os << ",\"cluster\":{\"name\":\"" << r.c.name << "\",\"nodes\":" << r.c.nodes << ",\"gpus_per_node\":" << r.c.gpus_per_node
     << ",\"gpus\":" << r.c.gpus() << ",\"memory_bytes\":" << num(r.c.memory_bytes) << ",\"usable_bytes\":"
     << num(r.c.memory_bytes * r.c.usable_memory_fraction) << ",\"price_per_gpu_hour\":" << num(r.c.price_per_gpu_hour)
     << ",\"failures_per_node_day\":" << num(r.c.failures_per_node_day) << ",\"islands\":" << r.c.islands << "}";
  os << ",\"single_gpu_memory\":" << memory_json(r.one_gpu) << ",\"single_gpu_memory_full_recompute\":" << memory_json(r.one_gpu_full);
  os << ",\"feasible\":" << (ok ? "true" : "false") << ",\"splits\":" << r.result.layouts << ",\"evaluated\":" << r.result.evaluated << ",\"leanest_bytes\":" << num(r.result.leanest_bytes);
  if (ok) {
    const strategy_desc& s = b->strategy;
    os << ",\"strategy\":" << strategy_json(s);
    os << ",\"tp\":" << s.tp << ",\"pp\":" << s.pp << ",\"dp\":" << s.dp << ",\"ep\":" << s.ep << ",\"zero\":" << s.zero << ",\"schedule\":\""
       << schedule_name(s.schedule) << "\",\"interleave\":" << (s.schedule == schedule_kind::interleaved ? s.chunks : 1)
       << ",\"micro_batch\":" << s.micro << ",\"microbatches\":" << s.microbatches << ",\"recompute\":\"" << recompute_name(s.recompute)
       << "\",\"sequence_parallel\":" << (s.sequence_parallel ? "true" : "false") << ",\"flash_attention\":" << (s.flash ? "true" : "false");
    os << ",\"memory_per_gpu_bytes\":" << b->cost.memory.total() << ",\"memory_overhead_bytes\":" << num(b->cost.memory_overhead)
       << ",\"memory_required_bytes\":" << num(b->cost.memory_required()) << ",\"cp\":" << s.cp << ",\"memory_by_stage\":[";
    for (std::size_t i = 0; i < r.stages.size(); ++i) os << (i ? "," : "") << memory_json(r.stages[i]);
    os << "],\"step_seconds\":" << num(b->cost.step_seconds) << ",\"breakdown\":" << breakdown_json(b->cost)
       << ",\"dp_hidden_seconds\":" << num(b->cost.dp_hidden_seconds);
    const run_cost& u = r.run;
    os << ",\"mfu\":" << num(u.mfu) << ",\"hfu\":" << num(u.hfu) << ",\"tokens_per_second\":" << num(u.tokens_per_second)
       << ",\"train_days_compute\":" << num(u.train_seconds / 86400) << ",\"days_to_train\":" << num(u.days) << ",\"gpu_hours\":" << num(u.gpu_hours)
       << ",\"cost_usd\":" << num(u.cost_usd) << ",\"mtbf_hours\":" << num(u.mtbf_seconds / 3600) << ",\"expected_interruptions\":"
       << num(u.expected_interruptions) << ",\"checkpoint_seconds\":" << num(u.checkpoint_write_seconds) << ",\"checkpoint_interval_minutes\":"
       << num(u.checkpoint_interval_seconds / 60) << ",\"checkpoint_lost_hours\":" << num(u.checkpoint_lost_seconds / 3600)
       << ",\"failure_lost_hours\":" << num(u.failure_lost_seconds / 3600);
    os << ",\"alternatives\":[";
    for (std::size_t i = 1; i < r.result.count && i <= r.top; ++i) {
      const candidate& a = r.result.ranked[i];
      os << (i > 1 ? "," : "") << "{\"strategy\":" << strategy_json(a.strategy) << ",\"step_seconds\":" << num(a.cost.step_seconds)
         << ",\"memory_per_gpu_bytes\":" << a.cost.memory.total() << "}";
    }
    os << "]";
  } else {
    os << ",\"strategy\":null,\"memory_per_gpu_bytes\":null,\"step_seconds\":null,\"breakdown\":[],\"mfu\":null,\"tokens_per_second\":null"
          ",\"days_to_train\":null,\"gpu_hours\":null,\"cost_usd\":null,\"expected_interruptions\":null,\"checkpoint_interval_minutes\":null"
          ",\"alternatives\":[]";
  }
  os << ",\"scaling\":[";
  for (std::size_t i = 0; i < r.scaling.size(); ++i) {
    const scaling_row& s = r.scaling[i];
    os << (i ? "," : "") << "{\"nodes\":" << s.nodes << ",\"gpus\":" << s.nodes * r.c.gpus_per_node << ",\"feasible\":" << (s.found ? "true" : "false");
    if (s.found)
      os << ",\"tokens_per_second\":" << num(s.run.tokens_per_second) << ",\"days_to_train\":" << num(s.run.days) << ",\"cost_usd\":"
         << num(s.run.cost_usd) << ",\"mfu\":" << num(s.run.mfu) << ",\"strategy\":" << strategy_json(s.best.strategy)
         << ",\"breakdown\":" << breakdown_json(s.best.cost);
    os << "}";
  }
  os << "],\"monolithic\":{\"memory_bytes\":" << num(r.mono.machine.memory_bytes) << ",\"peak_flops\":" << num(r.mono.machine.peak_flops_16)
     << ",\"price_per_hour\":" << num(r.mono.machine.price_per_gpu_hour) << ",\"lead_days\":" << num(r.mono.lead_days)
     << ",\"feasible\":" << (r.mono.found ? "true" : "false");
  if (r.mono.found)
    os << ",\"tokens_per_second\":" << num(r.mono.run.tokens_per_second) << ",\"days_to_train\":" << num(r.mono.run.days)
       << ",\"cost_usd\":" << num(r.mono.run.cost_usd) << ",\"done_after_days\":" << num(r.mono.lead_days + r.mono.run.days);
  os << "},\"cluster_lead_days\":" << num(r.lead_days) << ",\"stack\":" << stack_json(r) << "}\n";
}

// ---- HTML with SVG charts ----

const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#ff9da7", "#bab0ac"};

std::string memory_svg(const report& r) {
  const double limit = r.c.memory_bytes * r.c.usable_memory_fraction;
  double top = r.c.memory_bytes;
  for (const stage_memory& m : r.stages) top = std::max(top, static_cast<double>(m.total()));
  const std::size_t n = r.stages.size();
  const double bar = std::max(6.0, std::min(40.0, 700.0 / static_cast<double>(n))), w = 80 + bar * 1.25 * static_cast<double>(n) + 160, h = 300;
  auto y = [&](double bytes) { return 260 - 230 * bytes / top; };
  std::ostringstream s;
  s << "<svg id=\"memory-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<text x=\"10\" y=\"16\" font-size=\"13\">Memory per GPU by pipeline stage (GB)</text>\n";
  const char* names[] = {"parameters", "gradients", "optimizer", "activations"};
  for (std::size_t i = 0; i < n; ++i) {
    const stage_memory& m = r.stages[i];
    const double parts[] = {static_cast<double>(m.param_bytes), static_cast<double>(m.grad_bytes), static_cast<double>(m.optimizer_bytes),
                            static_cast<double>(m.activations_total())};
    double acc = 0;
    const double x = 60 + bar * 1.25 * static_cast<double>(i);
    for (int k = 0; k < 4; ++k) {
      s << "<rect class=\"mem\" x=\"" << x << "\" y=\"" << y(acc + parts[k]) << "\" width=\"" << bar << "\" height=\"" << y(acc) - y(acc + parts[k])
        << "\" fill=\"" << palette[k] << "\"><title>stage " << m.stage << " " << names[k] << " " << fmt("%.2f", parts[k] / 1e9) << " GB</title></rect>\n";
      acc += parts[k];
    }
    if (n <= 16) s << "<text x=\"" << x + bar / 2 << "\" y=\"275\" text-anchor=\"middle\">" << m.stage << "</text>\n";
  }
  s << "<line x1=\"55\" x2=\"" << w - 150 << "\" y1=\"" << y(limit) << "\" y2=\"" << y(limit) << "\" stroke=\"#d62728\" stroke-dasharray=\"4 3\"/>\n"
    << "<text x=\"" << w - 148 << "\" y=\"" << y(limit) + 4 << "\">usable " << fmt("%.0f", limit / 1e9) << " GB</text>\n"
    << "<text x=\"10\" y=\"" << y(0) << "\">0</text><text x=\"10\" y=\"" << y(top) + 10 << "\">" << fmt("%.0f", top / 1e9) << "</text>\n";
  for (int k = 0; k < 4; ++k)
    s << "<rect x=\"" << w - 140 << "\" y=\"" << 40 + 16 * k << "\" width=\"10\" height=\"10\" fill=\"" << palette[k] << "\"/><text x=\""
      << w - 125 << "\" y=\"" << 49 + 16 * k << "\">" << names[k] << "</text>\n";
  s << "<text x=\"60\" y=\"292\">stage</text></svg>\n";
  return s.str();
}

std::string breakdown_svg(const step_cost& c) {
  const double w = 760, total = c.step_seconds;
  std::ostringstream s;
  s << "<svg id=\"breakdown-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << 70 + 16 * cost_parts
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"10\" y=\"16\" font-size=\"13\">One step, "
    << fmt("%.3f", total) << " s, by bottleneck</text>\n";
  double x = 10;
  for (std::size_t i = 0; i < c.items.size(); ++i) {
    const double wi = (w - 20) * c.items[i].seconds / total;
    s << "<rect class=\"part\" x=\"" << x << "\" y=\"26\" width=\"" << wi << "\" height=\"26\" fill=\"" << palette[i] << "\"><title>"
      << cost_part_name(c.items[i].part) << " " << fmt("%.3f", c.items[i].seconds) << " s</title></rect>\n";
    x += wi;
  }
  for (std::size_t i = 0; i < c.items.size(); ++i) {
    const cost_item& it = c.items[i];
    s << "<rect x=\"10\" y=\"" << 62 + 16 * i << "\" width=\"10\" height=\"10\" fill=\"" << palette[i] << "\"/><text x=\"26\" y=\""
      << 71 + 16 * i << "\">" << cost_part_name(it.part) << ": " << fmt("%.3f", it.seconds) << " s (" << fmt("%.1f", 100 * it.seconds / total)
      << "%)" << (it.on == link_kind::none ? "" : std::string(" on ") + link_name(it.on)) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string scaling_svg(const report& r) {
  std::vector<const scaling_row*> rows;
  for (const scaling_row& s : r.scaling)
    if (s.found) rows.push_back(&s);
  std::ostringstream s;
  const double w = 640, h = 320;
  s << "<svg id=\"scaling-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"10\" y=\"16\" font-size=\"13\">Scaling out: tokens/s by nodes (dashed: linear from the first that fits)</text>\n";
  if (rows.empty()) {
    s << "<text x=\"20\" y=\"60\">no node count of the table fits</text></svg>\n";
    return s.str();
  }
  const double n0 = static_cast<double>(rows.front()->nodes), t0 = rows.front()->run.tokens_per_second;
  const double nmax = static_cast<double>(rows.back()->nodes);
  double tmax = t0 * nmax / n0;
  for (const auto* q : rows) tmax = std::max(tmax, q->run.tokens_per_second);
  auto lx = [&](double nodes) { return 60 + 540 * (nmax > n0 ? std::log2(nodes / n0) / std::log2(nmax / n0) : 0.5); };
  auto ly = [&](double t) { return 280 - 250 * t / tmax; };
  s << "<line x1=\"" << lx(n0) << "\" y1=\"" << ly(t0) << "\" x2=\"" << lx(nmax) << "\" y2=\"" << ly(t0 * nmax / n0)
    << "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\" points=\"";
  for (const auto* q : rows) s << lx(static_cast<double>(q->nodes)) << "," << ly(q->run.tokens_per_second) << " ";
  s << "\"/>\n";
  for (const auto* q : rows)
    s << "<circle class=\"point\" cx=\"" << lx(static_cast<double>(q->nodes)) << "\" cy=\"" << ly(q->run.tokens_per_second)
      << "\" r=\"4\" fill=\"#4e79a7\"><title>" << q->nodes << " nodes: " << fmt("%.0f", q->run.tokens_per_second) << " tokens/s, "
      << fmt("%.1f", q->run.days) << " days, " << money(q->run.cost_usd) << "</title></circle>\n<text x=\"" << lx(static_cast<double>(q->nodes))
      << "\" y=\"298\" text-anchor=\"middle\">" << q->nodes << "</text>\n";
  s << "<text x=\"10\" y=\"" << ly(tmax) + 4 << "\">" << fmt("%.3g", tmax) << "</text><text x=\"10\" y=\"284\">0</text>"
    << "<text x=\"300\" y=\"314\">nodes</text></svg>\n";
  return s.str();
}

std::string pipeline_svg(const strategy_desc& st) {
  // The schedule the strategy runs (make_schedule at run time), drawn for up to 2·P micro-batches.
  if (st.pp > 32) return "<p>Pipeline of " + std::to_string(st.pp) + " stages: too many rows to draw.</p>\n";
  const std::size_t v = st.schedule == schedule_kind::interleaved ? st.chunks : 1;
  const std::size_t m = std::min(st.microbatches, std::max<std::size_t>(2 * st.pp, 2));
  std::ostringstream s;
  weft::svg_style style;
  style.max_width = 900;
  try {
    weft::write_schedule_svg(s, weft::make_schedule(st.schedule, st.pp, m, v), {}, style);
  } catch (const std::exception& e) {
    return std::string("<p>Pipeline schedule not drawn: ") + e.what() + "</p>\n";
  }
  std::string svg = s.str();
  const std::size_t open = svg.find("<svg");
  svg = svg.substr(open);
  svg.insert(4, " id=\"pipeline-chart\"");
  return "<p>Pipeline schedule: " + std::string(schedule_name(st.schedule)) + ", " + std::to_string(st.pp) + " stages, first " +
         std::to_string(m) + " of " + std::to_string(st.microbatches) + " micro-batches.</p>\n" + svg;
}

void write_html(const report& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw bad_input{"cannot write --html file '" + path + "'"};
  f << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>plan_cluster: " << r.model.name << " on " << r.c.gpus() << " "
    << r.c.name << "</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head><body>\n";
  f << "<h1>" << r.model.name << " (" << fmt("%.2f", static_cast<double>(r.model.desc.params()) / 1e9) << "B parameters) on "
    << r.c.nodes << " x " << r.c.gpus_per_node << " " << r.c.name << "</h1>\n";
  f << "<p>One GPU alone would need " << gb(static_cast<double>(r.one_gpu.total())) << " (model states "
    << gb(static_cast<double>(r.one_gpu.model_state_bytes())) << ", activations " << gb(static_cast<double>(r.one_gpu.activations_total()))
    << ") of " << gb(r.c.memory_bytes * r.c.usable_memory_fraction) << " usable.</p>\n";
  if (r.result.found()) {
    const candidate& b = r.result.best();
    const run_cost& u = r.run;
    f << "<h2>Chosen strategy</h2><p>" << strategy_text(b.strategy) << "</p>\n";
    f << "<table><tr><th>tokens/s</th><th>MFU</th><th>days</th><th>GPU-hours</th><th>cost</th><th>interruptions</th><th>checkpoint every</th></tr>"
      << "<tr><td>" << fmt("%.0f", u.tokens_per_second) << "</td><td>" << fmt("%.1f%%", 100 * u.mfu) << "</td><td>" << fmt("%.1f", u.days)
      << "</td><td>" << fmt("%.0f", u.gpu_hours) << "</td><td>" << money(u.cost_usd) << "</td><td>" << fmt("%.1f", u.expected_interruptions)
      << "</td><td>" << fmt("%.0f min", u.checkpoint_interval_seconds / 60) << "</td></tr></table>\n";
    f << "<h2>Memory per GPU</h2>\n" << memory_svg(r);
    f << "<h2>Step breakdown</h2>\n" << breakdown_svg(b.cost);
    f << "<h2>Pipeline timeline</h2>\n" << pipeline_svg(b.strategy);
    f << "<h2>Alternatives</h2><table><tr><th>s/step</th><th>GB/GPU</th><th>strategy</th></tr>\n";
    for (std::size_t i = 1; i < r.result.count && i <= r.top; ++i)
      f << "<tr><td>" << fmt("%.3f", r.result.ranked[i].cost.step_seconds) << "</td><td>"
        << fmt("%.1f", r.result.ranked[i].cost.memory.total() / 1e9) << "</td><td style=\"text-align:left\">"
        << strategy_text(r.result.ranked[i].strategy) << "</td></tr>\n";
    f << "</table>\n";
  } else {
    f << "<h2>No strategy fits</h2><p>The leanest needs " << gb(r.result.leanest_bytes) << " per GPU.</p>\n";
  }
  f << "<h2>Scaling out</h2>\n" << scaling_svg(r);
  f << "<table><tr><th>nodes</th><th>tokens/s</th><th>days</th><th>cost</th><th>strategy</th></tr>\n";
  for (const scaling_row& s : r.scaling)
    if (s.found)
      f << "<tr><td>" << s.nodes << "</td><td>" << fmt("%.0f", s.run.tokens_per_second) << "</td><td>" << fmt("%.1f", s.run.days) << "</td><td>"
        << money(s.run.cost_usd) << "</td><td style=\"text-align:left\">" << strategy_text(s.best.strategy) << "</td></tr>\n";
  f << "</table>\n<p>Monolithic machine: " << (r.mono.found ? fmt("%.1f days", r.mono.run.days) + " + " + fmt("%.0f", r.mono.lead_days) +
                                                                   " days lead time, " + money(r.mono.run.cost_usd)
                                                             : std::string("does not fit"))
    << ".</p>\n</body></html>\n";
}

// ---- the stack profile and --calibrate ----

// --stack NAME (default megatron); --calibrate T fits one factor of it to T tokens/s measured with
// the pinned layout (stack_profile.hpp's calibrate) and the rest of the report uses the fitted profile.
void calibrate_stack(report& r, const options& o, const search_options& so) {
  const std::string name = o.str("stack", "megatron");
  const profile_lookup p = find_stack(name);
  if (!p.found) throw bad_input{"unknown --stack '" + name + "' (megatron, deepspeed, fsdp-h100)"};
  r.stack = p.value;
  if (o.has("calibrate-factor") && !o.has("calibrate")) throw bad_input{"--calibrate-factor needs --calibrate TOKENS_PER_S"};
  if (!o.has("calibrate")) return;
  const double measured = o.num("calibrate", 0);
  if (!(measured > 0)) throw bad_input{"--calibrate needs the measured tokens/s of the whole cluster (> 0)"};
  if (so.fixed_tp == 0 || so.fixed_pp == 0 || so.fixed_dp == 0)
    throw bad_input{"--calibrate needs the measured layout: --tp, --pp and --dp (and what else the run pinned)"};
  const std::string f = o.str("calibrate-factor", "gemm");
  if (f == "gemm") r.cal_factor = stack_factor::gemm;
  else if (f == "comm") r.cal_factor = stack_factor::comm;
  else if (f == "memory") r.cal_factor = stack_factor::memory;
  else throw bad_input{"--calibrate-factor must be gemm, comm or memory, got '" + f + "'"};
  const auto pinned = search<1>(r.model.desc, r.batch, with_stack(r.c, r.stack), so);
  if (pinned.evaluated == 0)
    throw bad_input{"--calibrate: no strategy of the search's space has the layout given (micro-batches 1, 2, 4, 8; the "
                    "batch divisible by dp x micro-batch)"};
  if (!pinned.found()) throw bad_input{"--calibrate: the layout given does not fit in memory (" + gb(pinned.leanest_bytes) + " needed)"};
  r.cal_strategy = pinned.best().strategy;
  const calibration c = calibrate(r.model.desc, r.batch, r.cal_strategy, r.c, so.job, r.stack, measured, r.cal_factor);
  if (!c.ok)
    throw bad_input{"--calibrate: no " + f + " factor in [0.05, 4] reproduces " + fmt("%.6g", measured) + " tokens/s (the profile predicts " +
                    fmt("%.6g", c.predicted_before) + "; other terms bound the step)"};
  r.cal = c;
  r.stack = c.fitted;
}

std::string stack_json(const report& r) {
  std::string j = "{\"name\":\"" + std::string(r.stack.name) + "\",\"gemm\":" + num(r.stack.gemm) + ",\"comm\":" + num(r.stack.comm) +
                  ",\"memory\":" + num(r.stack.memory) + ",\"overhead_seconds\":" + num(r.stack.overhead) + ",\"calibration\":";
  if (!r.cal) return j + "null}";
  const calibration& c = *r.cal;
  return j + "{\"factor\":\"" + stack_factor_name(r.cal_factor) + "\",\"fitted\":" + num(c.factor) + ",\"measured_tokens_per_second\":" +
         num(c.measured) + ",\"predicted_before\":" + num(c.predicted_before) + ",\"predicted_after\":" + num(c.predicted_after) +
         ",\"strategy\":" + strategy_json(r.cal_strategy) + "}}";
}

void print_stack_text(const report& r) {
  std::printf("== stack ==\nprofile %s: gemm x%.3f, comm x%.3f, memory x%.3f, +%.3f s a step\n", std::string(r.stack.name).c_str(),
              r.stack.gemm, r.stack.comm, r.stack.memory, r.stack.overhead);
  if (!r.cal) return;
  const calibration& c = *r.cal;
  std::printf("calibrated on %s: measured %.6g tokens/s; before the fit %.6g (%+.1f%%); fitted %s factor %.4f gives %.6g\n",
              strategy_text(r.cal_strategy).c_str(), c.measured, c.predicted_before, 100 * (c.predicted_before / c.measured - 1),
              stack_factor_name(r.cal_factor), c.factor, c.predicted_after);
}

// ---- the whole report ----

int run(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (o.has("help")) {
    std::fputs(usage, stdout);
    return 0;
  }
  report r;
  r.batch.seq = o.count("seq", 2048);
  r.batch.sequences = o.count("global-batch", 512);
  if (r.batch.seq == 0 || r.batch.sequences == 0) throw bad_input{"--seq and --global-batch must be at least 1"};
  r.model = model_from(o, r.batch.seq);
  r.tokens = o.num("tokens", 20.0 * static_cast<double>(r.model.desc.params()));  // Chinchilla's 20 tokens per parameter
  const std::string prec = o.str("precision", o.str("cluster", "") == "cpu-mpi" ? "f32" : "bf16");
  if (prec != "bf16" && prec != "f32") throw bad_input{"--precision must be bf16 or f32"};
  r.precision = prec == "bf16" ? (o.has("f32-grads") ? mixed_bf16_f32_grads() : mixed_bf16()) : full_f32();
  const std::size_t nodes = o.count("nodes", 1);
  if (nodes == 0) throw bad_input{"--nodes must be at least 1"};
  r.c = cluster_from(o, nodes);
  r.top = o.count("top", 5);
  r.lead_days = o.num("lead-days", 7);
  const search_options so = search_from(o, r.precision);
  r.flash = so.flash;
  const std::size_t pinned_ep = (so.fixed_ep != 0 ? so.fixed_ep : 1) * (so.fixed_cp != 0 ? so.fixed_cp : 1);  // and cp
  if (so.fixed_dp != 0 && so.fixed_tp != 0 && so.fixed_pp != 0 && (r.model.desc.experts == 0 || so.fixed_ep != 0) &&
      so.fixed_dp * so.fixed_tp * so.fixed_pp * pinned_ep != r.c.gpus())
    throw bad_input{"--tp x --pp x --dp" + std::string(so.fixed_ep != 0 ? " x --ep" : "") + " = " +
                    std::to_string(so.fixed_dp * so.fixed_tp * so.fixed_pp * pinned_ep) + " GPUs, but the cluster has " +
                    std::to_string(r.c.gpus())};
  if (so.fixed_ep > 1 && !r.model.desc.ep_divides(so.fixed_ep))
    throw bad_input{"--ep " + std::to_string(so.fixed_ep) + " needs a mixture of experts whose expert count it divides (--experts)"};

  r.one_gpu = single_device_memory(r.model.desc, r.batch.seq, 1, recompute_kind::none, r.precision, so.flash);
  r.one_gpu_full = single_device_memory(r.model.desc, r.batch.seq, 1, recompute_kind::full, r.precision, so.flash);
  calibrate_stack(r, o, so);
  r.result = search<16>(r.model.desc, r.batch, with_stack(r.c, r.stack), so);
  if (r.result.found()) {
    const strategy_desc& s = r.result.best().strategy;
    for (std::size_t st = 0; st < s.pp; ++st) r.stages.push_back(stage_memory_at(r.model.desc, r.batch.seq, s, r.precision, st));
    r.run = estimate_run(r.model.desc, r.result.best().cost, r.batch.tokens(), r.tokens, r.c.gpus(), r.c, r.precision);
  }
  if (!o.has("no-scaling")) {
    // the node counts: powers of two up to --max-nodes (default: 4x the cluster), and the cluster's own
    const std::size_t max_nodes = o.count("max-nodes", std::max<std::size_t>(nodes * 4, 8));
    std::vector<std::size_t> counts;
    for (std::size_t n = 1; n <= max_nodes; n *= 2) counts.push_back(n);
    if (std::find(counts.begin(), counts.end(), nodes) == counts.end()) counts.push_back(nodes);
    std::sort(counts.begin(), counts.end());
    search_options free = so;  // scaling: the strategy is free, except the job's own pins of recompute/precision
    free.fixed_tp = free.fixed_pp = free.fixed_dp = free.fixed_ep = 0;
    for (std::size_t n : counts) r.scaling.push_back(scale_to(r, o, free, n));
    // one monolithic machine: one device with all the memory and compute
    r.mono.machine = presets::h100_sxm(1);
    r.mono.machine.name = "monolithic";
    r.mono.machine.gpus_per_node = 1;
    r.mono.machine.memory_bytes = o.num("mono-memory-gb", 2048) * 1e9;
    r.mono.machine.peak_flops_16 = r.mono.machine.peak_flops_32 = o.num("mono-tflops", 4000) * 1e12;
    r.mono.machine.memory_bandwidth = o.num("mono-bandwidth-tbs", 32) * 1e12;
    r.mono.machine.price_per_gpu_hour = o.num("mono-price", 60);
    r.mono.machine.failures_per_node_day = o.num("failures-per-node-day", llama3_failures_per_node_day);
    r.mono.lead_days = o.num("mono-lead-days", 180);
    const auto res = search<1>(r.model.desc, r.batch, r.mono.machine, free);
    r.mono.need = res.leanest_bytes;
    if (res.found()) {
      r.mono.found = true;
      r.mono.best = res.best();
      r.mono.run = estimate_run(r.model.desc, r.mono.best.cost, r.batch.tokens(), r.tokens, 1, r.mono.machine, r.precision);
    }
  }
  if (o.has("json")) print_json(r, std::cout);
  else print_stack_text(r), print_text(r);
  if (o.has("html")) write_html(r, o.str("html", ""));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const bad_input& e) {
    std::fprintf(stderr, "plan_cluster: %s\n", e.what.c_str());
    return 2;
  }
}
