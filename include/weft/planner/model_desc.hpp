#pragma once
// ---- the job as values: a model's dimensions and parameter split, the batch, a strategy ----
// The search and the explorer work on values, so that one constexpr code path serves
// auto_strategy<Model, Batch, Cluster> (compile time, from weft model types) and
// plan_cluster (run time, from command-line dimensions). describe<Model>() reads a weft
// model type through model_partition, so the counts are the plan's; gpt_desc and
// llama_desc state the same counts for the gpt<> and llama<> families from dimensions
// (tests/planner/test_model_desc.cpp checks both against model_partition).
#include "weft/parallel/expert_parallel.hpp"  // ep_facts
#include "weft/parallel/memory_model.hpp"  // state_bytes, detail::kv_heads_of, detail::ffn_of, detail::dropout_mask_bytes_of
#include "weft/parallel/partition.hpp"     // model_partition
#include "weft/parallel/schedule.hpp"      // schedule_kind
#include "weft/parallel/strategy.hpp"      // recompute_kind, single_rank_strategy

#include <cstddef>

namespace weft::planner {

using weft::recompute_kind;
using weft::schedule_kind;
using weft::stage_memory;

/// Parameter elements of a part of the model by tensor-parallel role.
struct param_count {
  std::size_t replicated = 0;  ///< held whole by every tensor-parallel rank (norms, row biases, positions)
  std::size_t sharded = 0;     ///< cut into tp shards (column, row, vocab)
  constexpr std::size_t total() const noexcept { return replicated + sharded; }
  /// Elements one of `tp` ranks holds (the cut axes divide evenly: the search only picks such tp).
  constexpr std::size_t per_rank(std::size_t tp) const noexcept { return replicated + (sharded + tp - 1) / tp; }
};

/// A decoder-only transformer LM as values.
struct model_desc {
  std::size_t depth = 0, width = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, context = 0;
  bool gated = false;          ///< SwiGLU MLP
  std::size_t mask_bytes = 0;  ///< dropout mask bytes per element (0: no dropout, weft's layers)
  param_count pre{}, block{}, post{};  ///< before the blocks, one block, after the blocks
  std::size_t tied_table = 0;          ///< elements of the embedding table a tied head multiplies by
  std::size_t lookup_params = 0;       ///< parameters only looked up (not multiplied)
  // ---- mixtures of experts (all 0 for a dense model) ----
  std::size_t moe_layers = 0;      ///< moe_mlp layers (one per block in moe_gpt / moe_llama)
  std::size_t expert_params = 0;   ///< elements of all experts of all moe_mlp layers (what expert parallelism splits)
  std::size_t routed_width = 0;    ///< elements a token sends to its experts, over all layers: Σ top_k · width
  // The shape of each moe_mlp (moe_gpt, moe_llama: the same one in every block; experts = 0
  // leaves the memory and compute of the MLP dense, with only the counts above).
  std::size_t experts = 0;         ///< E
  std::size_t top_k = 0;           ///< k: experts per token
  std::size_t expert_in = 0;       ///< rows of an expert's first matrix: ffn (GELU) or 2·ffn (SwiGLU)
  std::size_t shared_kept = 0;     ///< elements the shared expert keeps per token (0 without one)
  std::size_t shared_ffn = 0;      ///< hidden width of the shared experts every token of a moe block goes through (0: none)
  std::size_t dense_layers = 0;    ///< leading blocks with a dense MLP instead of a mixture (DeepSeek: the first 1–3)
  std::size_t dense_ffn = 0;       ///< their MLP's width (gated as the experts are), cut by tp
  std::size_t head_dim = 0;        ///< elements of an attention head (0: width / heads)
  std::size_t window = 0;          ///< sliding window of keys (0: none)
  /// Layers of a windowed model that attend to the whole sequence all the same (Gemma 3: every
  /// pattern-th; 0: the window applies to every layer).
  std::size_t global_layers = 0;

  /// Query heads times head size: the width attention works in (width unless head_dim is set).
  constexpr std::size_t attention_width() const noexcept { return head_dim ? heads * head_dim : width; }
  /// Keys a query attends to at most: the window when it is shorter than the sequence.
  constexpr std::size_t attention_span(std::size_t seq) const noexcept { return window && window < seq ? window : seq; }
  /// Keys a query attends to, averaged over the layers: attention_span for all but the
  /// global_layers, which see the whole sequence.
  constexpr double mean_attention_span(std::size_t seq) const noexcept {
    const std::size_t g = global_layers < depth ? global_layers : depth;
    return depth == 0 ? static_cast<double>(attention_span(seq))
                      : (static_cast<double>(depth - g) * static_cast<double>(attention_span(seq)) +
                         static_cast<double>(g) * static_cast<double>(seq)) / static_cast<double>(depth);
  }
  constexpr std::size_t params() const noexcept { return pre.total() + depth * block.total() + post.total(); }
  /// Expert parameter elements one of `ep` expert-parallel ranks of a stage of `pp` holds: the
  /// stage's moe_mlp layers (one per block: moe_layers / pp), E/ep experts each.
  constexpr std::size_t stage_expert_params(std::size_t pp, std::size_t ep = 1) const noexcept {
    if (moe_layers == 0) return 0;
    const std::size_t per_layer = expert_params / moe_layers;  // all E experts of one layer
    return moe_layers / pp * (ep > 1 ? per_layer / ep : per_layer);
  }
  /// Parameter elements one tensor-parallel rank of stage `s` of `pp` holds (model_partition::stage_params).
  /// With expert parallelism over `ep` ranks, a rank holds E/ep experts of each of its stage's
  /// moe_mlp layers (the experts are replicated over tp: their parameters are whole on every tp rank).
  /// `layers`: the stage's blocks when the stages are uneven (strategy_desc::stage_layers; default
  /// depth / pp).
  constexpr std::size_t stage_params(std::size_t s, std::size_t pp, std::size_t tp, std::size_t ep = 1,
                                     std::size_t layers = static_cast<std::size_t>(-1)) const noexcept {
    const bool even = layers == static_cast<std::size_t>(-1);
    std::size_t n = (even ? depth / pp : layers) * block.per_rank(tp);
    if (s == 0) n += pre.per_rank(tp);
    if (s + 1 == pp) n += post.per_rank(tp) + (pp > 1 ? (tied_table + tp - 1) / tp : 0);
    if (ep > 1 && even) n -= stage_expert_params(pp) - stage_expert_params(pp, ep);
    if (ep > 1 && !even && depth > 0) n -= layers * (stage_expert_params(1) - stage_expert_params(1, ep)) / depth;
    return n;
  }
  /// Parameter elements of one block on one rank: its tensor-parallel shard, and under expert
  /// parallelism E/ep experts of its mixture (averaged over the blocks when some are dense).
  /// Elements of a block's largest parameter tensor on one of `tp` ranks (zero3_buffers::per_tensor):
  /// GPT's fused QKV (h·3h) or an MLP matrix (h·f); Llama's Q (h·q) or one of its three MLP
  /// matrices (h·f); a mixture's expert matrix (h·expert_in).
  constexpr std::size_t largest_block_tensor(std::size_t tp) const noexcept {
    const std::size_t q = attention_width(), kv = kv_heads * (heads ? q / heads : 0);
    const std::size_t attn = (gated ? q : q + 2 * kv) * width;
    const std::size_t mlp = (experts > 0 ? expert_in : ffn) * width;
    return ((attn > mlp ? attn : mlp) + tp - 1) / tp;
  }
  constexpr std::size_t rank_block_params(std::size_t tp, std::size_t ep = 1) const noexcept {
    const std::size_t n = block.per_rank(tp);
    if (ep <= 1 || depth == 0) return n;
    return n - (stage_expert_params(1) - stage_expert_params(1, ep)) / depth;
  }
  /// Expert parameter elements one of `ep` expert-parallel ranks holds (one stage).
  constexpr std::size_t rank_expert_params(std::size_t ep) const noexcept { return stage_expert_params(1, ep); }
  /// Whether `ep` expert-parallel ranks can split the experts: a model with moe_mlp layers whose
  /// experts ep divides (ep = 1 always can).
  constexpr bool ep_divides(std::size_t ep) const noexcept {
    return ep == 1 || (moe_layers > 0 && experts > 0 && experts % ep == 0);
  }
  /// Expert parameters of one block a token does not use: E − k of each moe_mlp's E experts
  /// (moe_gpt::inactive_param_count / depth); 0 for a dense model.
  constexpr std::size_t block_inactive_params() const noexcept {
    return experts > 0 && moe_layers > 0 ? expert_params / moe_layers / experts * (experts - top_k) * moe_layers / depth : 0;
  }
  /// Model FLOPs per token of stage `s` before tensor-parallel division (comm_volume's count:
  /// 6 per multiplying parameter a token uses, 12·h·s per layer for attention).
  constexpr double stage_flops_per_token(std::size_t s, std::size_t pp, std::size_t seq) const noexcept {
    double f = static_cast<double>(depth / pp) * (6.0 * static_cast<double>(block.total() - block_inactive_params()) +
                                                  12.0 * static_cast<double>(attention_width()) * mean_attention_span(seq));
    if (s == 0) f += 6.0 * static_cast<double>(pre.total() - lookup_params - tied_table);
    if (s + 1 == pp) f += 6.0 * static_cast<double>(post.total() + tied_table);
    return f;
  }
  /// Model FLOPs per token of the whole model (PaLM's count, plan::flops_per_token; a mixture of
  /// experts counts the top-k experts a token uses, not all E: the plan's count includes them all).
  constexpr double flops_per_token(std::size_t seq) const noexcept {
    return 6.0 * static_cast<double>(params() - lookup_params - depth * block_inactive_params()) +
           12.0 * static_cast<double>(depth * attention_width()) * mean_attention_span(seq);
  }
};

/// gpt<gpt_config<...>>'s counts: learned positions, biases, GELU MLP, a head tied to wte.
constexpr model_desc gpt_desc(std::size_t depth, std::size_t width, std::size_t heads, std::size_t vocab,
                              std::size_t context, std::size_t ffn = 0, std::size_t mask_bytes = 0) noexcept {
  model_desc m{};
  if (ffn == 0) ffn = 4 * width;
  m.depth = depth, m.width = width, m.heads = heads, m.kv_heads = heads, m.ffn = ffn, m.vocab = vocab, m.context = context;
  m.mask_bytes = mask_bytes;
  const std::size_t h = width;
  m.pre = {context * h, vocab * h};  // positions whole on every rank; the token table vocab-parallel
  // ln_1, ln_2 (2h each), the two row-parallel biases (h each) whole; qkv (h·3h + 3h), proj (h·h), fc (h·f + f), proj (f·h) cut.
  m.block = {4 * h + 2 * h, 3 * h * h + 3 * h + h * h + h * ffn + ffn + ffn * h};
  m.post = {2 * h, 0};
  m.tied_table = vocab * h;
  m.lookup_params = context * h;
  return m;
}

/// llama<llama_config<...>>'s counts: RMSNorm, grouped-query attention without biases, SwiGLU, an
/// untied head (or, `tied`, one that multiplies by the token table: tie_word_embeddings<>).
constexpr model_desc llama_desc(std::size_t depth, std::size_t width, std::size_t heads, std::size_t kv_heads,
                                std::size_t vocab, std::size_t context, std::size_t ffn = 0, bool tied = false) noexcept {
  model_desc m{};
  if (kv_heads == 0) kv_heads = heads;
  if (ffn == 0) ffn = (8 * width / 3 + 63) / 64 * 64;
  m.depth = depth, m.width = width, m.heads = heads, m.kv_heads = kv_heads, m.ffn = ffn, m.vocab = vocab, m.context = context;
  m.gated = true;
  const std::size_t h = width, kv = kv_heads * (width / heads);
  m.pre = {0, vocab * h};
  m.block = {2 * h, h * h + 2 * h * kv + h * h + 3 * h * ffn};
  m.post = {h, tied ? 0 : vocab * h};
  m.tied_table = tied ? vocab * h : 0;
  m.lookup_params = tied ? 0 : vocab * h;
  return m;
}

namespace detail {
// One moe_mlp's counts, added to a dense family's description whose MLP it replaces: the layer's
// parameters are all replicated over tp (router E·h, experts E·(expert_in + ffn)·h, no biases).
constexpr void add_experts(model_desc& m, std::size_t experts, std::size_t top_k, std::size_t expert_ffn, bool swiglu) noexcept {
  const std::size_t h = m.width;
  m.ffn = expert_ffn;
  m.experts = experts, m.top_k = top_k, m.expert_in = swiglu ? 2 * expert_ffn : expert_ffn;
  m.moe_layers = m.depth;
  const std::size_t per_layer = experts * (m.expert_in * h + h * expert_ffn);
  m.expert_params = m.depth * per_layer;
  m.routed_width = m.depth * top_k * h;
  m.block.replicated += experts * h + per_layer;
  m.gated = false;  // no dense MLP left; the experts' kind is expert_in
}
}  // namespace detail

/// moe_gpt<gpt_config<...>, moe_mlp<width, experts, top_k, expert_ffn[, swiglu_experts]>>'s counts:
/// gpt<>'s attention, norms and tied head, each block's MLP a mixture of experts (no shared expert).
constexpr model_desc moe_gpt_desc(std::size_t depth, std::size_t width, std::size_t heads, std::size_t vocab,
                                  std::size_t context, std::size_t experts, std::size_t top_k, std::size_t expert_ffn,
                                  bool swiglu = false) noexcept {
  model_desc m = gpt_desc(depth, width, heads, vocab, context, expert_ffn);
  const std::size_t h = width;
  m.block = {4 * h + h, 3 * h * h + 3 * h + h * h};  // norms and the attention's row bias; qkv and proj cut
  detail::add_experts(m, experts, top_k, expert_ffn, swiglu);
  return m;
}

/// moe_llama<llama_config<...>, moe_mlp<width, experts, top_k, expert_ffn, swiglu_experts>>'s counts
/// (Mixtral: 8 experts, top 2): llama<>'s attention, norms and untied head, mixtures of experts as MLPs.
constexpr model_desc moe_llama_desc(std::size_t depth, std::size_t width, std::size_t heads, std::size_t kv_heads,
                                    std::size_t vocab, std::size_t context, std::size_t experts, std::size_t top_k,
                                    std::size_t expert_ffn, bool swiglu = true) noexcept {
  model_desc m = llama_desc(depth, width, heads, kv_heads, vocab, context, expert_ffn);
  const std::size_t h = width, kv = m.kv_heads * (width / heads);
  m.block = {2 * h, h * h + 2 * h * kv + h * h};
  detail::add_experts(m, experts, top_k, expert_ffn, swiglu);
  return m;
}

/// DeepSeek-style mixtures on a moe family's description (moe_llama_desc, moe_gpt_desc): every moe
/// block also runs `shared_ffn` of shared-expert width for every token (whole on each tp rank, as
/// weft's shared expert; gated like the routed experts), and the first `dense_layers` blocks have
/// a dense MLP of width `dense_ffn` (cut by tp) instead of a mixture. The per-block counts
/// (model_desc::block) become the mean over the blocks (rounded down): the planner prices a
/// uniform block, so a stage's parameters, time and activations are those of its share of
/// each kind, not of the blocks it really holds.
constexpr model_desc with_shared_and_dense(model_desc m, std::size_t shared_ffn, std::size_t dense_layers,
                                           std::size_t dense_ffn) noexcept {
  if (m.experts == 0 || m.moe_layers == 0 || dense_layers > m.depth) return m;
  const std::size_t h = m.width, L = m.depth, D = dense_layers, moe = L - D;
  const bool swiglu = m.expert_in == 2 * m.ffn;
  const std::size_t per_layer = m.expert_params / m.moe_layers;  // all E experts of one layer
  const std::size_t shared = (swiglu ? 3 : 2) * h * shared_ffn;
  const std::size_t moe_extra = m.experts * h + per_layer;  // router and experts, in block.replicated
  m.block.replicated = m.block.replicated - moe_extra + moe * (moe_extra + shared) / L;
  m.block.sharded += D * ((swiglu ? 3 : 2) * h * dense_ffn) / L;
  m.moe_layers = moe;
  m.expert_params = moe * per_layer;
  m.routed_width = moe * m.top_k * h;
  m.shared_ffn = shared_ffn, m.shared_kept = (swiglu ? 3 : 2) * shared_ffn;
  m.dense_layers = D, m.dense_ffn = dense_ffn;
  return m;
}

/// The counts of a weft model type, through model_partition (so they are the plan's).
template <class Model>
constexpr model_desc describe() noexcept {
  using part = model_partition<Model, 1>;
  model_desc m{};
  m.depth = Model::depth, m.width = Model::width, m.heads = Model::heads;
  m.kv_heads = weft::detail::kv_heads_of<Model>(), m.ffn = weft::detail::ffn_of<Model>();
  m.vocab = Model::vocab_size, m.context = Model::context_length;
  m.gated = part::gated_mlp;
  m.mask_bytes = weft::detail::dropout_mask_bytes_of<Model>();
  m.pre = {part::pre.replicated, part::pre.sharded};
  m.block = {part::block.replicated, part::block.sharded};
  m.post = {part::post.replicated, part::post.sharded};
  m.tied_table = part::tied_table;
  m.lookup_params = Model::lookup_param_count;
  m.moe_layers = ep_facts<Model, 1>::moe_layers;
  m.expert_params = ep_facts<Model, 1>::expert_elements;
  m.routed_width = ep_facts<Model, 1>::routed_elements;
  constexpr weft::detail::moe_shape moe = weft::detail::moe_shape_of<Model>();  // moe_gpt, moe_llama
  m.experts = moe.experts, m.top_k = moe.top_k, m.expert_in = moe.expert_in, m.shared_kept = moe.shared_kept;
  m.head_dim = weft::detail::head_dim_of<Model>();
  m.window = weft::detail::attention_span_of<Model, static_cast<std::size_t>(-1)>();
  if (m.window == static_cast<std::size_t>(-1)) m.window = 0;
  if constexpr (requires { Model::config::global_layers; }) m.global_layers = Model::config::global_layers;
  return m;
}

/// The optimizer step's batch: `sequences` sequences of `seq` tokens over all data-parallel ranks.
struct batch_desc {
  std::size_t sequences = 0;  ///< global batch
  std::size_t seq = 0;        ///< tokens per sequence
  constexpr std::size_t tokens() const noexcept { return sequences * seq; }
};

/// The global batch as a type, for auto_strategy: global_batch<512, 2048>.
template <std::size_t Sequences, std::size_t Seq>
struct global_batch {
  static constexpr batch_desc value{Sequences, Seq};
};

/// Element sizes of the training: bf16 with f32 master weights unless said otherwise.
struct precision_desc {
  state_bytes states{2, 2, 4, 8};  ///< ZeRO's 2 + 2 + K (K = 12)
  std::size_t element_bytes = 2;   ///< activations
  constexpr bool half() const noexcept { return element_bytes <= 2; }
};
constexpr precision_desc mixed_bf16() noexcept { return {}; }
constexpr precision_desc full_f32() noexcept { return {{4, 4, 0, 8}, 4}; }
/// bf16 with f32 main gradients, 18 bytes a parameter (2 + 4 + 4 + 8): Megatron-LM's
/// `--accumulate-allreduce-grads-in-fp32` (Megatron Core's distributed-optimizer guide: "bf16
/// parameters, fp32 gradients: 18, distributed 6 + 12/d"); the gradient collectives move 4 bytes.
constexpr precision_desc mixed_bf16_f32_grads() noexcept { return {{2, 4, 4, 8}, 2}; }

/// How ZeRO-3 holds the parameters it gathers (memory; the time is the same schedule).
enum class zero3_buffers : unsigned char {
  /// weft's data_parallel_step: with one stage (and no ep) the layers outside the block stack and
  /// two one-block windows (the block computing and the next, prefetched); under a pipeline or
  /// expert parallelism the whole stage gathered (docs/parallelism.md).
  weft,
  /// PyTorch FSDP / DeepSpeed ZeRO-3 with one unit per transformer block, at any pipeline depth:
  /// the layers outside the blocks, the block computing and `prefetch` blocks gathered ahead; the
  /// gradients of the block being reduce-scattered and the block writing its own.
  per_layer_units,
  /// DeepSpeed's ZeRO-3 as Narayanan et al. 2021 ran it (DeepSpeed 0.3): it gathers, re-gathers
  /// and reduce-scatters parameter by parameter — one collective a tensor
  /// (block_parameter_tensors: 12 a GPT block), each paying its ring's (n − 1)·α, the block's bytes
  /// in all — and so holds tensors, not blocks: the tensor computing and `prefetch` ahead (the
  /// largest of the block, largest_block_tensor, each), and two tensors' gradients; the layers
  /// outside the blocks as a unit.
  per_tensor
};

/// A parallel strategy as values (the fields of strategy<...> that change cost).
struct strategy_desc {
  std::size_t tp = 1, pp = 1, dp = 1;
  std::size_t zero = 0;
  bool sequence_parallel = false;
  schedule_kind schedule = schedule_kind::one_f_one_b;
  std::size_t chunks = 1;        ///< V of interleaved<V>
  std::size_t micro = 1;         ///< sequences per micro-batch (b)
  std::size_t microbatches = 1;  ///< per step (M); with pp == 1, gradient accumulation
  recompute_kind recompute = recompute_kind::none;
  /// flash_attention: every attention keeps its rows' log-sum-exp and output instead of the
  /// (b, a, s, s) probabilities, and backward recomputes the scores. Selective recompute has
  /// nothing left to drop under it: recompute selective with flash costs what none with flash does.
  bool flash = false;
  std::size_t ep = 1;            ///< expert-parallel ranks (between tp and dp in rank order; > 1 only for MoE models)
  /// Context-parallel ranks (ring attention, Megatron-LM's --context-parallel-size): each holds
  /// s/cp tokens of every sequence, passes its keys and values around the ring; between tp and ep
  /// in rank order (tp, cp, ep, dp, pp); the gradients are reduced (and ZeRO shards) over dp·cp.
  std::size_t cp = 1;
  std::size_t bucket_bytes = single_rank_strategy::bucket_bytes;  ///< data_parallel's gradient buckets (its default)
  /// Partial recomputation (with recompute full): the blocks of each model chunk (each stage
  /// when not interleaved) recomputed whole, the others keeping all they compute — Megatron-LM's
  /// `--recompute-method block --recompute-num-layers N`. 0: all of them (full recompute).
  std::size_t recompute_layers = 0;
  /// Uneven pipeline stages (Megatron-LM's --decoder-first-pipeline-num-layers and
  /// --decoder-last-pipeline-num-layers): the blocks of the first and of the last stage (0: as
  /// the others); the other stages split the rest evenly. With interleaving each stage's blocks
  /// form `chunks` model chunks as evenly as they go (chunk_layers).
  std::size_t first_stage_layers = 0, last_stage_layers = 0;
  constexpr bool uneven() const noexcept { return pp > 1 && (first_stage_layers != 0 || last_stage_layers != 0); }
  /// Blocks of each stage but a given first or last one.
  constexpr std::size_t middle_stage_layers(std::size_t depth) const noexcept {
    if (!uneven()) return depth / pp;
    const std::size_t given = first_stage_layers + last_stage_layers;
    const std::size_t rest = pp - (first_stage_layers ? 1 : 0) - (last_stage_layers ? 1 : 0);
    return rest == 0 || given > depth ? 0 : (depth - given) / rest;
  }
  /// Blocks of stage `st` (depth / pp unless uneven).
  constexpr std::size_t stage_layers(std::size_t depth, std::size_t st) const noexcept {
    if (st == 0 && first_stage_layers && pp > 1) return first_stage_layers;
    if (st + 1 == pp && last_stage_layers && pp > 1) return last_stage_layers;
    return middle_stage_layers(depth);
  }
  /// Whether the stages cover `depth` blocks: even (pp divides it), or the given first and last
  /// stages and an even split of the rest (every stage at least one block). Interleaved with
  /// uneven stages: the middle stages' blocks in `chunks` equal model chunks, the first's and the
  /// last's in `chunks` of ⌈blocks/chunks⌉ or one fewer (Llama 3 405B: 126 blocks on 16 stages,
  /// 7 on the first and the last, 8 on the others: V = 2 or 4).
  constexpr bool stages_cover(std::size_t depth) const noexcept {
    if (!uneven()) return depth % pp == 0;
    const std::size_t given = first_stage_layers + last_stage_layers;
    const std::size_t rest = pp - (first_stage_layers ? 1 : 0) - (last_stage_layers ? 1 : 0);
    if (given >= depth) return rest == 0 && given == depth;
    if (!(rest > 0 && (depth - given) % rest == 0)) return false;
    if (schedule == schedule_kind::interleaved && chunks > 1) {
      if (rest > 0 && middle_stage_layers(depth) % chunks != 0) return false;  // the middle stages' chunks even
      for (std::size_t st : {std::size_t{0}, pp - 1})
        if (stage_layers(depth, st) < chunks) return false;
    }
    return true;
  }
  /// Blocks of the largest model chunk of stage `st` (`v` chunks a stage): depth / (pp·v) when
  /// even, ⌈stage blocks / v⌉ when uneven.
  constexpr std::size_t chunk_layers(std::size_t depth, std::size_t st, std::size_t v) const noexcept {
    if (v == 0) v = 1;
    if (!uneven()) return depth / (pp * v);
    return (stage_layers(depth, st) + v - 1) / v;
  }
  /// Blocks of a chunk of `per_chunk` that recompute their forward (0 unless recompute full).
  constexpr std::size_t recomputed_layers(std::size_t per_chunk) const noexcept {
    if (recompute != recompute_kind::full) return 0;
    return recompute_layers == 0 || recompute_layers > per_chunk ? per_chunk : recompute_layers;
  }
  /// ZeRO-3: what the gathered parameters take in memory (weft's windows, or FSDP's units).
  zero3_buffers zero3_holds = zero3_buffers::weft;
  /// ZeRO-3: blocks gathered ahead of the one computing (weft and FSDP's BACKWARD_PRE: 1; 0: each
  /// gather waits for its layer and is exposed whole). Memory holds prefetch + 1 blocks (FSDP units).
  std::size_t prefetch = 1;
  constexpr std::size_t gpus() const noexcept { return tp * pp * dp * ep * cp; }
  friend constexpr bool operator==(const strategy_desc&, const strategy_desc&) = default;
};

constexpr const char* schedule_name(schedule_kind k) noexcept {
  return k == schedule_kind::gpipe ? "gpipe" : k == schedule_kind::one_f_one_b ? "1f1b" : "interleaved";
}
constexpr const char* recompute_name(recompute_kind k) noexcept {
  return k == recompute_kind::none ? "none" : k == recompute_kind::selective ? "selective" : "full";
}

}  // namespace weft::planner
