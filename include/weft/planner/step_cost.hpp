#pragma once
// ---- the time of one optimizer step, broken down by bottleneck ----
// One rank of the first pipeline stage (it holds the embeddings, the most activation sets
// and starts and ends the schedule), M micro-batches of b sequences of s tokens:
//
//   t_mb      = Σ_layers [ GEMMs fwd + 2·fwd (bwd) at gemm_efficiency(shape) · peak
//                         + elementwise bytes / memory bandwidth ]         (compute)
//   t_rc      = the recomputed forward: all of it (full), the attention core (selective); with
//               flash attention (strategy_desc::flash) also the scores Q·Kᵀ its backward
//               recomputes, half of the attention core's forward products (selective then adds
//               nothing: there are no probabilities left for it to drop)
//   t_tp      = 4 all-reduces of (s, b, h) per layer (6 with full recompute; with sequence
//               parallelism a reduce-scatter + all-gather each) on the tp axis's link
//   t_ep      = expert parallelism over ep ranks: per micro-batch 4 all-to-alls (dispatch and
//               combine, forward and backward; 6 with full recompute) of the b·s tokens' routed
//               rows through the stage's moe layers, b·s·Σ(top_k·h) elements, of which
//               (ep − 1)/ep leave the rank, on the ep axis's link (comm_volume's ep_bytes)
//   bubble    = (P − 1)/V · (t_mb + t_rc + t_tp)            (1F1B, interleaved; GPipe V = 1)
//   p2p       = 2·(M·V + P − 1) messages of (s, b, h)(/t with sp) on the pp axis's link; with
//               job_options::scatter_gather_p2p (Megatron-LM's default) 1/t of it without sp too,
//               plus an all-gather of (s, b, h) over the tp group on arrival
//   dp        = the ZeRO stage's collectives on the dp axis's link, minus what hides behind
//               compute: bucketed gradient reduction during the last micro-batch's backward
//               (every micro-batch's with ZeRO-2); ZeRO-3 layer by layer from its schedule
//               (zero3_schedule: per layer a gather behind the previous layer's forward, a
//               re-gather and a reduce-scatter behind the next layer's backward, exposed where
//               a layer's collectives outlast its compute); the all-gather of updated
//               parameters (ZeRO-1/2) after the optimizer stays exposed
//   optimizer = the AdamW pass over the rank's owned states, memory-bound
//   overhead  = data loading, launches, logging (the cluster's step_overhead_seconds)
//   step      = M·(t_mb + t_rc + t_tp + t_ep) + bubble + p2p + dp_exposed + optimizer + overhead
// With expert parallelism the rank holds E/ep experts per layer (memory and optimizer); the
// dense gradients are all-reduced over the expert group after each micro-batch's backward
// (behind the backwards), then data parallelism (and ZeRO's shards) runs over dp, as
// expert_parallel_local inside data_parallel_step does. A mixture of experts is whole on every tp
// rank (replicated, tp_shard): each tp rank routes all the micro-batch's tokens through the
// router and k experts a token, and exchanges them with the ep peers of its tp index.
//
// The GEMM shapes per layer and micro-batch (m = b·s tokens, t = tp, d = the head size, h/heads
// unless head_dim says, q = a·d, w = the keys a query sees: s, or a sliding window shorter than
// s when the attention is fused (flash-style kernels skip the blocks outside the band; an unfused
// one forms the whole (s, s) square and masks it)):
//   QKV (m, (q + 2·kv·d)/t, h), scores b·a/t × (s, w, d), context b·a/t × (s, d, w),
//   projection (m, h, q/t), MLP up (m, f/t (2f/t gated), h), down (m, h, f/t).
// Elementwise traffic per layer forward (read + write, e bytes each): norms, residuals and
// dropouts 12·h per token (÷t with sp), the MLP activation 4·f/t (6 gated), and, without a
// fused (flash) attention kernel, the softmax 4·s·a/t per token (never with the flash_attention
// option: its kernels keep the scores on chip). Backward moves twice that.
#include "weft/planner/cluster.hpp"          // cluster
#include "weft/planner/collective_cost.hpp"  // axis_link, all_reduce_seconds, ...
#include "weft/planner/gemm_efficiency.hpp"  // gemm_seconds, gemm_curve
#include "weft/planner/memory_cost.hpp"      // peak_stage_memory, activation_sets
#include "weft/planner/model_desc.hpp"       // model_desc, strategy_desc, precision_desc

#include <array>
#include <cstddef>

namespace weft::planner {

/// Parameter tensors of one block: a GPT block (gpt_desc: LayerNorm weight and bias twice, fused
/// QKV, projection and the two MLP matrices, each with a bias) 12; a Llama block (RMSNorm twice,
/// separate Q, K, V and output, gate, up, down, no biases) 9.
constexpr std::size_t block_parameter_tensors(const model_desc& md) noexcept { return md.gated ? 9 : 12; }

/// How the job runs, besides the strategy.
struct job_options {
  precision_desc precision{};
  bool fused_attention = true;      ///< flash-style kernels: no (s, s) scores in memory traffic (implied by strategy_desc::flash)
  bool overlap_grad_reduce = true;  ///< bucketed gradient reduction overlaps backward (DDP, Megatron-Core)
  /// Pipeline sends without sequence parallelism as Megatron-LM makes them (its default,
  /// `--no-scatter-gather-tensors-in-pipeline` turns it off): each tensor-parallel rank sends 1/t
  /// of the (s, b, h) activation and the receiving group all-gathers it over the tp link. Off:
  /// every tp rank sends it whole, as weft's pipeline does. (With sequence parallelism the
  /// activation is already split: 1/t either way, no gather.)
  bool scatter_gather_p2p = false;
  /// FP8 GEMMs (Transformer Engine's recipe): the linear layers' products (QKV, projection, MLP,
  /// experts) run at the cluster's dense FP8 peak (cluster::peak_flops_8; 16-bit where it has
  /// none) on the same efficiency curve; the attention core and the head stay 16-bit, and the
  /// parameters, gradients, activations and MFU's peak stay 16-bit as well.
  bool fp8 = false;
  // ---- memory beyond the plan's own buffers, as explicit terms (0: none; the cluster's
  // usable_memory_fraction still reserves its flat share for the runtime) ----
  /// Fraction of the allocated bytes (model states, working buffers, activations, communication
  /// buffers) an allocator loses to fragmentation and caching: PyTorch's caching allocator
  /// reserves more than it hands out (torch.cuda.memory_reserved over memory_allocated). Not
  /// weft's: its arena is planned whole at launch (0).
  double allocator_overhead = 0;
  /// Bytes per GPU a framework holds beside the step: CUDA context, NCCL channel buffers, cuBLAS
  /// and attention workspaces.
  double framework_bytes = 0;
};

/// The memory terms beyond the plan (job_options::allocator_overhead, framework_bytes) for a
/// stage of `m`: bytes per rank added to m.total() before the fit.
constexpr double memory_overhead_bytes(const stage_memory& m, const job_options& o) noexcept {
  return static_cast<double>(m.total()) * o.allocator_overhead + o.framework_bytes;
}

/// The parts of a step.
enum class cost_part : unsigned char {
  compute, recompute, tensor_parallel, expert_parallel, bubble, pipeline_p2p, data_parallel, optimizer, overhead,
  context_parallel  ///< ring attention's key/value passes not hidden behind the attention (strategy_desc::cp)
};
inline constexpr std::size_t cost_parts = 10;
constexpr const char* cost_part_name(cost_part p) noexcept {
  constexpr const char* names[] = {"compute", "recompute", "tensor-parallel comm", "expert-parallel all-to-all",
                                   "pipeline bubble", "pipeline p2p", "data-parallel comm (exposed)", "optimizer",
                                   "data loading and overhead", "context-parallel ring (exposed)"};
  return names[static_cast<std::size_t>(p)];
}

/// One line of the breakdown.
struct cost_item {
  cost_part part = cost_part::compute;
  double seconds = 0;
  link_kind on = link_kind::none;  ///< the link, for communication
};

/// The predicted step of one strategy.
struct step_cost {
  std::array<cost_item, cost_parts> items{};
  double step_seconds = 0;
  double dp_hidden_seconds = 0;  ///< data-parallel communication hidden behind backward
  double model_flops = 0;        ///< per step, all ranks (PaLM's count)
  double hardware_flops = 0;     ///< model_flops plus recomputation
  stage_memory memory{};         ///< the peak stage, per rank
  double memory_overhead = 0;    ///< allocator fragmentation and framework bytes (memory_overhead_bytes)
  double memory_limit = 0;       ///< bytes per rank the plan may use
  bool fits = false;
  /// What the peak stage needs with the overhead terms: memory.total() + memory_overhead.
  constexpr double memory_required() const noexcept { return static_cast<double>(memory.total()) + memory_overhead; }
  constexpr double seconds(cost_part p) const noexcept { return items[static_cast<std::size_t>(p)].seconds; }
};

namespace detail {

// Seconds of the GEMMs of one layer's forward for one micro-batch on one tensor-parallel rank;
// `attention_only`: the scores and context products alone (what selective recompute repeats).
// `keys`: the keys a query's products cover (layer_keys).
constexpr double layer_forward_gemm_seconds(const model_desc& md, std::size_t seq, const strategy_desc& s, double peak,
                                            const gemm_curve& c, bool attention_only, std::size_t keys,
                                            double linear_peak = 0) noexcept {
  // `linear_peak`: the rate of the linear layers' products (FP8: job_options::fp8), the attention
  // core's staying at `peak`; 0: `peak` for all
  const double lp = linear_peak > 0 ? linear_peak : peak;
  const double t = static_cast<double>(s.tp), h = static_cast<double>(md.width), sq = static_cast<double>(seq);
  const double q = static_cast<double>(md.attention_width()), w = static_cast<double>(keys);
  const double m = static_cast<double>(s.micro) * sq, d = q / static_cast<double>(md.heads);
  const double heads_rank = static_cast<double>(md.heads) / t;
  const double batched = static_cast<double>(s.micro) * heads_rank;
  double sec = gemm_seconds(sq, w, d, peak, c, batched) + gemm_seconds(sq, d, w, peak, c, batched);
  if (attention_only) return sec;
  const double kv = static_cast<double>(md.kv_heads) * d, f = static_cast<double>(md.ffn);
  sec += gemm_seconds(m, (q + 2 * kv) / t, h, lp, c);
  sec += gemm_seconds(m, h, q / t, lp, c);
  if (md.experts > 0) {
    // A mixture of experts, whole on every tp rank (tp_shard replicates it), for all the
    // micro-batch's tokens: the router (m, E, h), then k routed rows a token through an expert's
    // two matrices (E/ep experts per rank, but ep ranks' rows arrive: as many rows on average).
    const double rows = m * static_cast<double>(md.top_k);
    double moe = gemm_seconds(m, static_cast<double>(md.experts), h, peak, c);  // the router stays 16-bit
    moe += gemm_seconds(rows, static_cast<double>(md.expert_in), h, lp, c);
    moe += gemm_seconds(rows, h, f, lp, c);
    if (md.shared_ffn > 0) {  // shared experts: every token, whole on each tp rank
      const double sf = static_cast<double>(md.shared_ffn), gate = md.expert_in == 2 * md.ffn ? 2.0 : 1.0;
      moe += gemm_seconds(m, gate * sf, h, lp, c) + gemm_seconds(m, h, sf, lp, c);
    }
    if (md.dense_layers == 0 || md.depth == 0) return sec + moe;
    // dense first blocks: the mean block is (D·dense + (L − D)·moe) / L
    const double df = static_cast<double>(md.dense_ffn), gate = md.expert_in == 2 * md.ffn ? 2.0 : 1.0;
    const double dense = gemm_seconds(m, gate * df / t, h, lp, c) + gemm_seconds(m, h, df / t, lp, c);
    const double share = static_cast<double>(md.dense_layers) / static_cast<double>(md.depth);
    return sec + share * dense + (1 - share) * moe;
  }
  sec += gemm_seconds(m, (md.gated ? 2 : 1) * f / t, h, lp, c);
  sec += gemm_seconds(m, h, f / t, lp, c);
  return sec;
}

// Bytes of elementwise traffic of one layer's forward (see the top of the file).
constexpr double layer_forward_elementwise_bytes(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                                 const job_options& o, bool attention_only) noexcept {
  const double t = static_cast<double>(s.tp), h = static_cast<double>(md.width), e = static_cast<double>(o.precision.element_bytes);
  const double m = static_cast<double>(s.micro * seq);
  const bool fused = o.fused_attention || s.flash;  // the flash_attention option runs the flash kernels
  const double softmax = fused ? 0 : 4.0 * m * static_cast<double>(seq) * static_cast<double>(md.heads) / t * e;
  if (attention_only) return softmax;
  const double whole = 12.0 * h * e * (s.sequence_parallel ? m / t : m);
  // the MLP's activation; a mixture of experts': its routed rows (k a token, not cut by tp)
  const double moe_rows = m * static_cast<double>(md.top_k);
  double inner = md.experts > 0 ? 2.0 * moe_rows * static_cast<double>(md.expert_in + md.ffn) * e
                                : (md.gated ? 6.0 : 4.0) * m * static_cast<double>(md.ffn) / t * e;
  if (md.experts > 0 && md.shared_ffn > 0)
    inner += 2.0 * m * static_cast<double>((md.expert_in == 2 * md.ffn ? 3 : 2) * md.shared_ffn) * e;
  if (md.experts > 0 && md.dense_layers > 0 && md.depth > 0) {
    const double share = static_cast<double>(md.dense_layers) / static_cast<double>(md.depth);
    const double dense = (md.expert_in == 2 * md.ffn ? 6.0 : 4.0) * m * static_cast<double>(md.dense_ffn) / t * e;
    inner = share * dense + (1 - share) * inner;
  }
  return whole + inner + softmax;
}

constexpr double max0(double x) noexcept { return x > 0 ? x : 0; }

// The keys each query's attention products cover: a sliding window shorter than the sequence
// when the kernels are fused (they skip the band's outside), else the whole sequence; averaged
// over the layers (rounded up) where some see the whole sequence (model_desc::global_layers).
constexpr std::size_t layer_keys(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                 const job_options& o) noexcept {
  if (!(o.fused_attention || s.flash)) return seq;
  const double mean = md.mean_attention_span(seq);  // Gemma 3: its global layers at seq
  const auto keys = static_cast<std::size_t>(mean);
  return static_cast<double>(keys) < mean ? keys + 1 : keys;
}

// ZeRO-3 / FSDP per micro-batch, from its schedule, on one rank of a stage of `layers` blocks of
// `blk` elements (its tp shard, E/ep experts) and `root` elements outside them (embeddings, head,
// final norm):
//   forward:  the root unit's gather, then one all-gather of a block per layer (ring over dp:
//             (n − 1)·α + (n − 1)/n·S/β, S the block's 16-bit parameters); with prefetch ≥ 1 the
//             gather of layer i + 1 runs while layer i computes, so the first is exposed and each
//             other costs max(0, gather − forward of a layer);
//   backward: per layer a re-gather and the reduce-scatter of its gradients on the same links,
//             behind the backward of the next layer (2× forward, + the forward again under full
//             recompute); the first re-gather and the last reduce-scatter are exposed, then the
//             root unit's reduce-scatter;
//   prefetch = 0: every gather waits for its layer (exposed whole), reduce-scatters still overlap;
//   no overlap (job_options::overlap_grad_reduce off): everything exposed.
// Deeper prefetch does not change the steady state (one gather per layer's compute) — only memory.
// The per-collective latency, paid 3·layers times a micro-batch over rings of dp ranks, is what
// makes a large dp lose rate: at dp = 512 across nodes one gather carries 511·α. `tensors`
// collectives a block instead of one (zero3_buffers::per_tensor, DeepSpeed's ZeRO-3 of 2021):
// each of the three carries 1/tensors of the block's bytes and its own (n − 1)·α, so a layer
// pays 3·tensors latencies — 4·tensors when its forward is recomputed (a gather for the
// recomputation, DeepSpeed's module hooks releasing after every forward).
struct zero3_times {
  double total = 0;    ///< seconds of all ZeRO-3 collectives of one micro-batch
  double exposed = 0;  ///< of which not hidden behind compute
};
constexpr zero3_times zero3_schedule(const model_desc& md, const strategy_desc& s, double psi, double layer_fwd,
                                     double layer_rc, const precision_desc& p, const link_spec& dl, bool overlap,
                                     std::size_t tensors = 1) noexcept {
  if (tensors == 0) tensors = 1;
  zero3_times z{};
  if (s.dp <= 1) return z;
  const double layers = static_cast<double>(s.stage_layers(md.depth, 0));
  double blk = static_cast<double>(md.rank_block_params(s.tp, s.ep));
  if (blk * layers > psi) blk = psi / layers;
  const double root = psi - blk * layers;
  const double pb = static_cast<double>(p.states.params), gb = static_cast<double>(p.states.grads);
  // k collectives a block (job_options::zero3_granularity): the block's bytes in k pieces, each
  // paying the ring's latency
  const double k = static_cast<double>(tensors);
  const double ag = k * all_gather_seconds(blk * pb / k, s.dp, dl), rs = k * reduce_scatter_seconds(blk * gb / k, s.dp, dl);
  const double ag_root = all_gather_seconds(root * pb, s.dp, dl), rs_root = reduce_scatter_seconds(root * gb, s.dp, dl);
  // DeepSpeed's hooks (tensors > 1) gather a module's parameters before each of its forwards and
  // release them after: a recomputed forward (full recompute, under backward) gathers them once
  // more, and backward again — 3 gathers a recomputed layer where FSDP's unit, gathered once for
  // its backward with the recomputation inside, and weft's window take 2
  const double regather = tensors > 1 && layer_fwd > 0 ? layer_rc / layer_fwd * ag : 0;
  z.total = ag_root + rs_root + layers * (2 * ag + regather + rs);
  if (!overlap) {
    z.exposed = z.total;
    return z;
  }
  const double bwd = 2 * layer_fwd + layer_rc, rest = layers > 1 ? layers - 1 : 0;
  if (s.prefetch == 0) {
    z.exposed = ag_root + rs_root + layers * (2 * ag + regather) + rs + rest * max0(rs - bwd);
    return z;
  }
  z.exposed = ag_root + ag + rest * max0(ag - layer_fwd)           // forward
              + ag + regather + rest * max0(ag + regather + rs - bwd) + rs + rs_root;  // backward
  if (z.exposed > z.total) z.exposed = z.total;
  return z;
}

}  // namespace detail

/// The predicted step of strategy `s` for `md` at sequence length `seq` on cluster `c`
/// (`sets`: the schedule's activation sets, sets_in_flight(s)).
/// The same with the peak stage's memory already priced (`memory`: peak_stage_memory(md, seq, s,
/// o.precision, sets); the search has it at hand and saves the second walk).
constexpr step_cost estimate_step(const model_desc& md, std::size_t seq, const strategy_desc& s, const cluster& c,
                                  const job_options& o, const activation_sets& sets, const stage_memory& memory) noexcept {
  step_cost r{};
  const precision_desc& p = o.precision;
  r.memory = memory;
  // context parallelism: a rank computes s/cp tokens of each sequence (its queries against all
  // the keys, which the ring brings); the FLOPs and tokens stay the sequence's
  const std::size_t seq_all = seq;
  if (s.cp > 1) seq = seq / s.cp;
  r.memory_limit = c.memory_bytes * c.usable_memory_fraction;
  r.memory_overhead = memory_overhead_bytes(r.memory, o);
  r.fits = r.memory_required() <= r.memory_limit;

  const bool half = p.half() && !c.cpu;
  const double peak = half ? c.peak_flops_16 : c.peak_flops_32;
  const gemm_curve curve = c.cpu ? cpu_gemm_curve() : gpu_gemm_curve();
  const std::size_t v = s.schedule == schedule_kind::interleaved ? s.chunks : 1;
  // The stage that paces the pipeline: the last (its blocks and the head) unless uneven stages
  // make the first or a middle one slower (compared by blocks, a block's time being the same
  // everywhere, with the head as `head_blocks` of them).
  double layers = static_cast<double>(md.depth / s.pp);
  bool paced_by_last = true;
  const auto pace = [&](double head_blocks) {
    if (!s.uneven()) return;
    const double lf = static_cast<double>(s.stage_layers(md.depth, 0)), lm = static_cast<double>(s.middle_stage_layers(md.depth));
    const double ll = static_cast<double>(s.stage_layers(md.depth, s.pp - 1)) + head_blocks;
    const double most = lf > lm ? lf : lm;
    paced_by_last = ll >= most || s.pp == 1;
    layers = paced_by_last ? ll - head_blocks : (s.pp == 2 ? lf : most);
  };
  const double M = static_cast<double>(s.microbatches), P = static_cast<double>(s.pp), V = static_cast<double>(v);
  const double e = static_cast<double>(p.element_bytes);
  const double h = static_cast<double>(md.width), sq = static_cast<double>(seq), b = static_cast<double>(s.micro);
  const double t = static_cast<double>(s.tp);

  // ---- compute per micro-batch (fwd + bwd = 3 × fwd), and its recomputation ----
  const std::size_t keys = detail::layer_keys(md, seq_all, s, o);
  const double linear_peak = o.fp8 && half && c.peak_flops_8 > 0 ? c.peak_flops_8 : peak;
  const double fwd = detail::layer_forward_gemm_seconds(md, seq, s, peak, curve, false, keys, linear_peak) +
                     detail::layer_forward_elementwise_bytes(md, seq, s, o, false) / c.memory_bandwidth;
  const bool drops_scores = s.recompute == recompute_kind::selective && !s.flash;  // selective + flash = flash alone
  // the attention core again (selective recompute only: priced when used, the search calls this thousands of times)
  const double attn = drops_scores ? detail::layer_forward_gemm_seconds(md, seq, s, peak, curve, true, keys) +
                                         detail::layer_forward_elementwise_bytes(md, seq, s, o, true) / c.memory_bandwidth
                                   : 0;
  // The embedding is a look-up; the head's GEMM (m, vocab/t, h), forward and backward, runs on
  // the last stage, which it makes the slowest: the pipeline moves at that stage's pace.
  const double head_all = 3 * gemm_seconds(b * sq, static_cast<double>(md.vocab) / t, h, peak, curve);
  pace(fwd > 0 ? head_all / (3 * fwd) : 0);
  const double head = paced_by_last ? head_all : 0;
  const double t_mb = 3 * fwd * layers + head;
  // flash_attention: backward recomputes the scores Q·Kᵀ (and their softmax) from the rows'
  // log-sum-exp, on top of any policy (full re-runs a flash forward, whose backward recomputes
  // them too). Q·Kᵀ, (s, s, d), is one of the attention core's two forward products beside P·V,
  // (s, d, s): as many FLOPs, at the same efficiency (the curve is symmetric in m, n, k for both
  // device classes: m0 = n0 = k0), so half of the attention-only GEMM seconds. Assumed: the
  // softmax's exponentials are not priced (as in the forward) and run on the tile on chip, no
  // (s, s) traffic; the causal half is priced whole, like the forward's products.
  const double scores = s.flash ? detail::layer_forward_gemm_seconds(md, seq, s, peak, curve, true, keys) / 2 : 0;
  // full recompute re-runs the forward of rc_layers of the stage's blocks (all, unless partial:
  // strategy_desc::recompute_layers a chunk)
  // (uneven stages: the pacing stage's blocks in V chunks of ⌈layers/V⌉ at most, never more than it holds)
  const std::size_t chunk = s.uneven() ? (static_cast<std::size_t>(layers) + v - 1) / v : md.depth / (s.pp * v);
  double rc_layers = V * static_cast<double>(s.recomputed_layers(chunk));
  if (rc_layers > layers) rc_layers = layers;
  const double rc_share = layers > 0 ? rc_layers / layers : 0;
  const double t_rc = fwd * rc_layers + ((drops_scores ? attn : 0) + scores) * layers;

  // ---- tensor parallelism ----
  const link_spec tl = axis_link(c, s.tp, 1);
  const double act = sq * b * h * e;  // (s, b, h)
  const double per_ar = s.sequence_parallel ? 2 * reduce_scatter_seconds(act, s.tp, tl) : all_reduce_seconds(act, s.tp, tl);
  const double t_tp = (4 * layers + 2 * rc_layers) * per_ar;  // 6 a recomputed block

  // ---- context parallelism: ring attention (cp consecutive groups of tp ranks) ----
  // Per layer, cp − 1 ring steps pass a rank's K and V blocks, 2·b·(s/cp)·kv·d/t elements, to the
  // next rank while the attention of the block in hand computes (1/cp of the rank's attention
  // core); backward passes K, V and their gradients (twice the bytes) behind twice the compute.
  // Exposed: per step max(0, send − compute). A recomputed block runs the forward ring again.
  const link_spec cl = axis_link(c, s.cp, s.tp);
  double t_cp = 0;
  if (s.cp > 1) {
    const double cpn = static_cast<double>(s.cp);
    const double hd = static_cast<double>(md.attention_width()) / static_cast<double>(md.heads);
    const double kv_block = 2 * b * sq * static_cast<double>(md.kv_heads) * hd / t * e;
    const double core = detail::layer_forward_gemm_seconds(md, seq, s, peak, curve, true, keys);
    const double ring_fwd = (cpn - 1) * detail::max0(p2p_seconds(kv_block, cl) - core / cpn);
    const double ring_bwd = (cpn - 1) * detail::max0(p2p_seconds(2 * kv_block, cl) - 2 * core / cpn);
    t_cp = layers * (ring_fwd + ring_bwd) + rc_layers * ring_fwd;
  }

  // ---- expert parallelism: the all-to-alls of the routed rows (ep consecutive groups of tp ranks) ----
  // Each tp rank exchanges the micro-batch's rows with the ranks of the same tp index (the
  // mixture of experts is replicated over tp); a stage routes through its own moe_mlp layers only.
  const link_spec el = axis_link(c, s.ep, s.tp * s.cp);
  const double stage_share = layers / static_cast<double>(md.depth);
  const double routed = b * sq * static_cast<double>(md.routed_width) * stage_share * e;
  const double t_ep = (4 + 2 * rc_share) * all_to_all_seconds(routed, s.ep, el);

  // ---- pipeline ----
  const double per_mb = t_mb + t_rc + t_tp + t_ep + t_cp;
  // (P − 1) chunks' worth of a micro-batch: per_mb/V with even chunks; with uneven stages the
  // pacing stage's largest chunk, ⌈layers/V⌉ of its blocks
  const double bubble = (P - 1) * per_mb * (s.uneven() && layers > 0 ? static_cast<double>(chunk) / layers : 1 / V);
  const link_spec pl = axis_link(c, s.pp, s.tp * s.cp * s.ep * s.dp);
  const bool scatter = s.sequence_parallel || (o.scatter_gather_p2p && s.tp > 1);
  const double gather = o.scatter_gather_p2p && !s.sequence_parallel ? all_gather_seconds(act, s.tp, tl) : 0;
  const double p2p = s.pp > 1 ? 2 * (M * V + P - 1) * (p2p_seconds(scatter ? act / t : act, pl) + gather) : 0;

  // ---- data parallelism, and what hides behind backward ----
  // (the cp ranks of a group share the parameters: gradients are reduced over dp·cp ranks, which
  // are consecutive groups of tp ranks when ep = 1)
  strategy_desc sd = s;
  sd.dp = s.dp * s.cp;
  const std::size_t dpn = sd.dp;
  const link_spec dl = axis_link(c, dpn, s.tp * s.ep);
  const double psi = static_cast<double>(s.uneven() ? md.stage_params(0, s.pp, s.tp, s.ep, s.stage_layers(md.depth, 0))
                                                    : md.stage_params(0, s.pp, s.tp, s.ep));
  const double gb = psi * static_cast<double>(p.states.grads), pb = psi * static_cast<double>(p.states.params);
  double grad = 0, param = 0, window = 0;  // `window`: compute the gradient traffic may hide behind
  double z3_total = 0, z3_exposed = 0;     // ZeRO-3: its schedule's collectives, and what of them is exposed
  const double bwd_last = 2 * fwd * layers / V;  // the last micro-batch's backward through the stage's last chunk
  switch (s.zero) {
    case 0: grad = all_reduce_seconds(gb, dpn, dl), window = bwd_last; break;
    case 1: grad = reduce_scatter_seconds(gb, dpn, dl), param = all_gather_seconds(pb, dpn, dl), window = bwd_last; break;
    case 2:  // a reduce-scatter after every micro-batch's backward, behind the next one's
      grad = M * reduce_scatter_seconds(gb, dpn, dl), param = all_gather_seconds(pb, dpn, dl), window = M * 2 * fwd * layers;
      break;
    default: {  // ZeRO-3 from its schedule, layer by layer (detail::zero3_schedule)
      const detail::zero3_times z = detail::zero3_schedule(md, sd, psi, fwd, fwd * rc_share,
                                                           p, dl, o.overlap_grad_reduce,
                                                           s.zero3_holds == zero3_buffers::per_tensor
                                                               ? block_parameter_tensors(md) : 1);
      z3_total = M * z.total, z3_exposed = M * z.exposed;
      break;
    }
  }
  if (s.ep > 1) {
    // expert_parallel_local: the dense gradients (all but the rank's experts) are summed over the
    // expert group as each micro-batch's backward finishes them, behind that backward; then the
    // data-parallel collectives above, over dp, reduce (and under ZeRO shard) every parameter.
    const double dense = (psi - static_cast<double>(md.stage_expert_params(s.pp, s.ep))) * static_cast<double>(p.states.grads);
    grad += M * all_reduce_seconds(dense, s.ep, el);
    window = window > M * 2 * fwd * layers ? window : M * 2 * fwd * layers;
  }
  if (!o.overlap_grad_reduce) window = 0;
  // The updated parameters' all-gather (ZeRO-1/2) follows the optimizer: exposed.
  const double dp_exposed = detail::max0(grad - window) + param + z3_exposed;
  r.dp_hidden_seconds = grad + param + z3_total - dp_exposed;

  // ---- optimizer: read the gradient, read and write master and moments, write the parameter ----
  const double owned = s.zero >= 1 && dpn > 1 ? (psi + static_cast<double>(dpn) - 1) / static_cast<double>(dpn) : psi;
  const double opt_bytes = owned * static_cast<double>(p.states.grads + 2 * p.states.master + 2 * p.states.moments + p.states.params);
  const double optimizer = opt_bytes / c.memory_bandwidth;

  r.items = {cost_item{cost_part::compute, M * t_mb},
             cost_item{cost_part::recompute, M * t_rc},
             cost_item{cost_part::tensor_parallel, M * t_tp, tl.kind},
             cost_item{cost_part::expert_parallel, M * t_ep, el.kind},
             cost_item{cost_part::bubble, bubble},
             cost_item{cost_part::pipeline_p2p, p2p, pl.kind},
             cost_item{cost_part::data_parallel, dp_exposed, dl.kind},
             cost_item{cost_part::optimizer, optimizer},
             cost_item{cost_part::overhead, c.step_overhead_seconds},
             cost_item{cost_part::context_parallel, M * t_cp, cl.kind}};
  // Ranks oversubscribing shared cores run in turns: the work slows by ranks / cores, and a
  // rank idle in the bubble yields its core to a busy one (the bubble costs nothing).
  if (c.shared_cores > 0 && s.gpus() > c.shared_cores) {
    for (cost_item& i : r.items) i.seconds *= static_cast<double>(s.gpus()) / static_cast<double>(c.shared_cores);
    r.items[static_cast<std::size_t>(cost_part::bubble)].seconds = 0;
  }
  for (const cost_item& i : r.items) r.step_seconds += i.seconds;

  const double tokens = static_cast<double>(s.dp * s.ep * s.microbatches * s.micro * seq_all);  // every rank of an expert group brings its own
  r.model_flops = md.flops_per_token(seq_all) * tokens;
  // recomputed FLOPs per token: the forward (full) or the attention core, 4·q·w a layer (selective),
  // plus with flash the scores, 2·q·w a layer (q = heads · head size, w = the keys a query sees,
  // as the model FLOPs count them)
  const double qw = static_cast<double>(md.attention_width()) * md.mean_attention_span(seq_all);
  const double rc_per_token = (s.recompute == recompute_kind::full
                                   ? rc_share * static_cast<double>(md.depth) * (2.0 * static_cast<double>(md.block.total() - md.block_inactive_params()) + 4 * qw)
                                   : drops_scores ? static_cast<double>(md.depth) * 4 * qw : 0) +
                              (s.flash ? static_cast<double>(md.depth) * 2 * qw : 0);
  r.hardware_flops = r.model_flops + rc_per_token * tokens;
  return r;
}

constexpr step_cost estimate_step(const model_desc& md, std::size_t seq, const strategy_desc& s, const cluster& c,
                                  const job_options& o, const activation_sets& sets) noexcept {
  return estimate_step(md, seq, s, c, o, sets, peak_stage_memory(md, seq, s, o.precision, sets));
}

constexpr step_cost estimate_step(const model_desc& md, std::size_t seq, const strategy_desc& s, const cluster& c,
                                  const job_options& o = {}) noexcept {
  return estimate_step(md, seq, s, c, o, sets_in_flight(s));
}

}  // namespace weft::planner
