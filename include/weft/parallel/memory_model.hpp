#pragma once
// ---- the per-rank memory accounting of a parallel strategy ----
// Pure constexpr arithmetic on the types: nothing is allocated, so it also prices models far
// too big to instantiate arenas for (GPT-3 175B, 1T). Two published models:
//
// Model states — ZeRO (Rajbhandari et al. 2020, Section 3.1 and Figure 1). With mixed
// precision and Adam, Ψ parameters take Ψ·(2 + 2 + K) bytes: 16-bit parameters and gradients
// and K = 12 bytes of optimizer state (32-bit master copy, momentum, variance). Sharded over
// Nd data-parallel ranks:
//   stage 0  (2 + 2 + K)·Ψ        stage 1 (P_os)    2Ψ + 2Ψ + K·Ψ/Nd
//   stage 2 (P_os+g)  2Ψ + (2 + K)·Ψ/Nd           stage 3 (P_os+g+p)  (2 + 2 + K)·Ψ/Nd
// generalised to weft's precisions through state_bytes: precision<T> keeps parameters,
// gradients and both AdamW moments in T and has no master copy (f32: 4 + 4 + 8 bytes);
// precision<T, Master> is mixed precision (bf16/f32: 2 + 2 + 4 + 8, ZeRO's K = 12). A shard
// is ceil(Ψ/Nd) elements (the flat buffer is padded to Nd equal parts). Ψ is what one
// model-parallel rank holds (model_partition): its stage's blocks, sharded or replicated
// across tensor-parallel ranks by role (norms, row biases and positions whole on every rank),
// plus embeddings on the first stage and the final norm and head on the last.
//
// Activations — Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Section 4 and Table 2. Bytes kept per transformer layer for a
// micro-batch of b sequences of s tokens, width h, a heads, tensor-parallel degree t, with
// 16-bit activations and 1-byte dropout masks:
//   no parallelism                       sbh·(34 + 5as/h)
//   tensor parallel                      sbh·(10 + 24/t + 5as/(ht))
//   tensor + sequence parallel           sbh/t·(34 + 5as/h)
//   tensor parallel + selective          sbh·(10 + 24/t)
//   tensor + sequence + selective        sbh·34/t
//   full recompute                       2sbh (the layer input only)
// weft states the same count term by term (layer_activation_bytes), so that it holds for
// any element size e, for models without dropout (mask bytes 0: weft's own layers have
// none), for grouped-query attention (K and V are kv_heads·head_dim wide) and for SwiGLU
// MLPs (3·ffn kept instead of GELU's 2·ffn). With full recompute and sequence parallelism
// the kept input is the sequence shard: 2sbh/t (Table 2 lists 2sbh, without sp).
// A stage keeps these for its layers times the activation sets in flight: gpipe M,
// 1F1B min(P − s, M) on stage s (P on the first), interleaved<V> up to
// 2(P − 1) + (V − 1)P + 1 sets of depth/(P·V) layers — Korthikanti's
// L·(1 + (P − 1)/(P·V)) on the first stage. The sets are counted by walking each stage's
// compute order as make_schedule writes it (equal to the schedule simulation's
// peak_activations; tests/parallel/test_memory_model.cpp checks this for many sizes), not
// by running the simulation, which would cost seconds of compile time for 35 or 64 stages.
// Section 4.4 ("total activations memory") adds, on the first stage, the input embedding's
// dropout mask, sbh/t per micro-batch in flight (sbhp/t for 1F1B), and on the last stage the
// final layernorm's and the head's inputs and the 32-bit logits of the loss, 4sbh/t·(1 + v/h);
// both are counted here (embedding_bytes, output_bytes) with the same generalisations.
// Mixtures of experts (moe_gpt, moe_llama: a moe_mlp in place of every block's MLP) keep what
// the layer lays out, not a dense MLP's inner activations: for N tokens the router's probs (N, E)
// and gates (N, k), the N·k routed rows through the experts' hidden width (pre-activations and
// activations) and back (outputs), the int32 routing, the shared expert's; under expert
// parallelism (ep_moe_mlp) the receive-side buffers of ep·N·k rows instead (moe_kept_bytes: the
// arena's counts). Their states under ZeRO shard over dp, experts and the rest alike (one
// expert group's ranks hold the same dense states: expert_parallel_local in data_parallel_step).
// Working buffers — what weft's executors hold whole on top of ZeRO's partition
// (zero_working_bytes): under ZeRO-2 and -3 the gradients backward writes, and under ZeRO-3
// the gathered parameters. On a single-rank or tensor-parallel local step both are held layer
// by layer: the layers outside the block stack, and two one-block windows (parameters: the
// block in use and the next, prefetched; gradients: the block backward writes and the one being
// reduce-scattered into the shards, as the paper reduces bucket by bucket during backward); a
// tp rank's block is its shard of one block. A pipeline stage (and an expert-parallel rank)
// holds its whole gradient and gathered parameter blocks (zero_held_elements).
// stage_memory::working_bytes, counted in total();
// model_state_bytes() stays ZeRO's.
// Communication buffers — the temporaries the MPI library allocates inside data_parallel_step's
// collectives (comm_buffer_bytes): Open MPI 4.1's non-blocking all-reduce holds one of each
// in-flight bucket's size, and data_parallel_step keeps at most gradient_buckets_in_flight
// buckets in flight (ZeRO-0/1); its reduce-scatter holds the input piece plus up to three
// blocks of piece/dp (at most another piece: 2× the piece at dp 2 and 3, 1.75× at 4, 1.375× at
// 8, measured), and ZeRO-2/3 reduce-scatter one piece of bucket_bytes at a time.
// stage_memory::comm_bytes, counted in total() but not in allocated_bytes() (the step's own
// buffers: the arena and the shards). Without them a rank whose share is small measured
// 1.24 × the plan (docs/benchmarks.md).
// Not counted: workspace, a pipeline stage's outputs and input gradients in flight, the
// tensor-parallel collectives' temporaries (an activation's size), fragmentation. A pipeline
// stage's own messages hold no library buffers (sends and receives go straight from and into
// its arena, and the tied-embedding gradient sum crosses through its idle activation slots,
// pipeline_step::sum_tied_gradients: an in-place all-reduce of the tied copy had Open MPI 4.1
// touch a temporary of half the copy at 2 ranks, 12 MiB for GPT-2-small's token table).
#include "weft/core/constant.hpp"        // dynamic
#include "weft/parallel/partition.hpp"   // model_partition
#include "weft/parallel/schedule.hpp"    // schedule_kind, detail::tag_kind, detail::warmup
#include "weft/parallel/strategy.hpp"    // parallel_strategy, recompute_kind

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>

namespace weft {

// ---- model states ----

/// Bytes per parameter of each model state.
struct state_bytes {
  std::size_t params = 4;   ///< the working copy (16-bit with mixed precision)
  std::size_t grads = 4;    ///< its gradient
  std::size_t master = 0;   ///< a higher-precision copy the optimizer updates (mixed precision only)
  std::size_t moments = 8;  ///< AdamW's first and second moments
  /// ZeRO's K: optimizer state per parameter (master copy and moments).
  constexpr std::size_t optimizer() const noexcept { return master + moments; }
  constexpr std::size_t total() const noexcept { return params + grads + optimizer(); }
};

/// state_bytes of precision<T> (Master = T: no master copy) and precision<T, Master>.
template <class T, class Master = T>
inline constexpr state_bytes state_bytes_for =
    std::is_same_v<T, Master> ? state_bytes{sizeof(T), sizeof(T), 0, 2 * sizeof(T)}
                              : state_bytes{sizeof(T), sizeof(T), sizeof(Master), 2 * sizeof(Master)};

/// Model-state bytes of one rank.
struct model_state_bytes {
  std::size_t params = 0;
  std::size_t grads = 0;
  std::size_t optimizer = 0;
  constexpr std::size_t total() const noexcept { return params + grads + optimizer; }
};

/// ZeRO's model states of a rank holding `psi` parameters, sharded over `nd` data-parallel
/// ranks by stage `zero_stage` (0: none, 1: optimizer state, 2: + gradients, 3: + parameters).
constexpr model_state_bytes zero_model_states(std::size_t psi, const state_bytes& b, std::size_t zero_stage,
                                              std::size_t nd) noexcept {
  const std::size_t shard = nd <= 1 ? psi : (psi + nd - 1) / nd;
  return {(zero_stage >= 3 ? shard : psi) * b.params, (zero_stage >= 2 ? shard : psi) * b.grads,
          (zero_stage >= 1 ? shard : psi) * b.optimizer()};
}

/// Elements of the parameter block (ZeRO-3) or of the gradient block (ZeRO-2 and 3) a rank of
/// `psi` parameters holds whole at once. Layer by layer (a single-rank or tensor-parallel local
/// step, whose block stack is `blocks` blocks of `block` elements on this rank, blocks >= 2):
/// the layers before and after the stack and two windows of one block (parameters: the block
/// in use and the next, prefetched; gradients: the block being written and the one being
/// reduce-scattered; plan<>::windowed_params, windowed_grads, and tensor_parallel_plan's).
/// Otherwise (a pipeline stage, an expert-parallel rank, or no block stack): all of them.
constexpr std::size_t zero_held_elements(std::size_t psi, std::size_t block, std::size_t blocks,
                                         bool layer_by_layer) noexcept {
  return layer_by_layer && blocks >= 2 && blocks * block <= psi ? psi - blocks * block + 2 * block : psi;
}

/// Bytes of the full-size buffers weft's steps hold beside ZeRO's shards (see the top of this
/// file): under ZeRO-2/3 the gradients backward writes, and under ZeRO-3 the gathered
/// parameters (`held` elements of each: zero_held_elements; all `psi` by default). The local
/// arena keeps them; data_parallel_step adds the shards.
constexpr std::size_t zero_working_bytes(std::size_t psi, const state_bytes& b, std::size_t zero_stage,
                                         std::size_t held = static_cast<std::size_t>(-1)) noexcept {
  const std::size_t h = std::min(psi, held);
  return (zero_stage >= 2 ? h * b.grads : 0) + (zero_stage >= 3 ? h * b.params : 0);
}

// ---- communication buffers ----

/// Gradient buckets data_parallel_step lets reduce at once (ZeRO-0/1): the next bucket waits
/// for the one this many before it. One constant for the step and the plan, which counts an
/// MPI temporary of each in-flight bucket (comm_buffer_bytes).
inline constexpr std::size_t gradient_buckets_in_flight = 2;

/// Bytes of collective temporaries data_parallel_step can make the MPI library hold at once,
/// for a rank of `psi` parameters with gradients of `grad_bytes` bytes an element, ZeRO stage
/// `zero_stage`, `dp` data-parallel ranks and buckets of `bucket_bytes` (cut as the step cuts
/// them: whole elements, at least one). 0 without data parallelism.
///   ZeRO-0/1  min(buckets, gradient_buckets_in_flight) buckets: Open MPI's iallreduce keeps a
///             bucket-sized temporary per request until it completes
///   ZeRO-2/3  one reduce-scatter piece of a bucket at a time: Open MPI 4.1's reduce-scatter
///             holds piece + min(piece, 3·piece/dp) (measured peak RSS, dp = 2, 3, 4, 8);
///             layer by layer (`window_block` > 0: the elements of one block of the stack) a
///             block's gradient window is one reduce-scatter, one at a time, so the piece is
///             the larger of the two
constexpr std::size_t comm_buffer_bytes(std::size_t psi, std::size_t grad_bytes, std::size_t zero_stage, std::size_t dp,
                                        std::size_t bucket_bytes, std::size_t window_block = 0) noexcept {
  if (dp <= 1 || psi == 0 || grad_bytes == 0) return 0;
  const std::size_t per = std::max<std::size_t>(1, bucket_bytes / grad_bytes);  // elements of one bucket
  if (zero_stage <= 1) return std::min(psi, gradient_buckets_in_flight * per) * grad_bytes;
  const std::size_t piece = std::min(psi, std::max(per, window_block)), block = (piece + dp - 1) / dp;
  return (piece + std::min(piece, 3 * block)) * grad_bytes;
}

// ---- activations of one transformer layer ----

/// What the activation count of one layer depends on.
struct layer_activation_dims {
  std::size_t seq = 0;            ///< s
  std::size_t micro = 0;          ///< b
  std::size_t width = 0;          ///< h
  std::size_t heads = 0;          ///< a
  std::size_t kv_heads = 0;       ///< key/value heads (a without grouped-query attention)
  std::size_t ffn = 0;            ///< MLP hidden width (4h for GPT)
  bool gated = false;             ///< SwiGLU: keeps 3·ffn per token (gate|up and their product), GELU 2·ffn
  std::size_t element_bytes = 2;  ///< e: bytes of a kept activation
  std::size_t mask_bytes = 0;     ///< bytes of a dropout mask element; 0 without dropout
  // ---- a mixture of experts in place of the MLP (moe_mlp; experts = 0: a dense MLP) ----
  std::size_t experts = 0;        ///< E
  std::size_t top_k = 0;          ///< k: routed rows per token
  std::size_t expert_in = 0;      ///< rows of an expert's first matrix: ffn (GELU) or 2·ffn (SwiGLU)
  std::size_t ep = 1;             ///< expert-parallel ranks (ep_moe_mlp): receive buffers of ep·N·k rows
  std::size_t shared_kept = 0;    ///< elements the shared expert keeps per token (0 without one)
  std::size_t head_dim = 0;       ///< elements of an attention head (0: width / heads)
};

namespace detail {
constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return (a + b - 1) / b; }
}  // namespace detail

/// Bytes a mixture of experts keeps for `tokens` tokens (one micro-batch's rows on a rank): what
/// moe_mlp::kept_layout (ep = 1) and moe_expert_parallel::kept_layout (ep > 1) lay out, with
/// N = tokens, R = N·k routed rows and, under expert parallelism, RM = ep·R rows a rank may receive:
///   ep = 1   probs (N, E), gates (N, k), expert pre-activations (R, expert_in), activations (R, ffn),
///            outputs (R, C);                 int32 routing 3R + E + 1
///   ep > 1   probs, gates, outputs back home (R, C), rows received (RM, C), pre-activations
///            (RM, expert_in), activations (RM, ffn); int32 routing 3R + (E + 1) + 2·ep + ep·El + ep·(El + 1)
/// plus the shared expert's kept elements. The routing is counted at max(e, 4) bytes an entry: the
/// arena keeps each in one element slot (the host layers need elements of at least 4 bytes), a
/// device keeps int32s; for e >= 4 the count is the arena's, kept_count · e, exactly.
constexpr std::size_t moe_kept_bytes(const layer_activation_dims& d, std::size_t tokens) noexcept {
  const std::size_t n = tokens, e = d.element_bytes, c = d.width, k = d.top_k, E = d.experts;
  const std::size_t ep = d.ep == 0 ? 1 : d.ep, el = E / ep, r = n * k, rm = ep * r;
  const std::size_t routing = n * E + n * k;  // probs, gates
  std::size_t values = 0, ints = 0;
  if (ep == 1) {
    values = routing + r * d.expert_in + r * d.ffn + r * c;
    ints = 3 * r + E + 1;
  } else {
    values = routing + r * c + rm * c + rm * d.expert_in + rm * d.ffn;
    ints = 3 * r + (E + 1) + 2 * ep + ep * el + ep * (el + 1);
  }
  return (values + n * d.shared_kept) * e + ints * std::max<std::size_t>(e, 4);
}

/// Bytes one layer keeps for backward, on one of `tp` tensor-parallel ranks (Korthikanti et al.
/// 2022, Table 2, term by term; see the top of this file). `flash`: the attention keeps each row's
/// log-sum-exp (32 bits at least) and a copy of its output instead of the probabilities
/// (the flash_attention option; model/flash_attention.hpp).
constexpr std::size_t layer_activation_bytes(const layer_activation_dims& d, std::size_t tp, bool sequence_parallel,
                                             recompute_kind rc, bool flash = false) noexcept {
  const std::size_t s = d.seq, b = d.micro, h = d.width, e = d.element_bytes;
  const std::size_t s_rank = sequence_parallel ? detail::ceil_div(s, tp) : s;  // tokens of a rank's sequence shard
  if (rc == recompute_kind::full) return s_rank * b * h * e;                   // the layer's input
  const std::size_t head_dim = d.head_dim ? d.head_dim : h / d.heads;
  // Per token, not split by tp (unless sp): the two layernorm inputs, the inputs of the QKV and
  // first MLP projections (e each), the dropout masks after attention and after the MLP.
  const std::size_t whole = 4 * h * e + 2 * h * d.mask_bytes;
  // Per token, split by tp along heads / ffn: Q, K, V, the output projection's input, the MLP's
  // inner activations (GELU: its input and output; SwiGLU: gate|up and their product).
  // A mixture of experts has no tensor-parallel cut: its inner activations are moe_kept_bytes.
  const std::size_t mlp_inner = d.experts > 0 ? 0 : (d.gated ? 3 : 2) * detail::ceil_div(d.ffn, tp);
  const std::size_t split = (detail::ceil_div(d.heads, tp) * head_dim + 2 * detail::ceil_div(d.kv_heads, tp) * head_dim +
                             detail::ceil_div(d.heads, tp) * head_dim + mlp_inner) *
                            e;
  // Per (sequence, head, query, key): the softmax output, with dropout also its dropped copy and mask.
  const std::size_t score = e + (d.mask_bytes > 0 ? e + d.mask_bytes : 0);
  const std::size_t heads_rank = detail::ceil_div(d.heads, tp);
  const std::size_t scores = flash ? heads_rank * s * b * (std::max<std::size_t>(e, 4) + head_dim * e)
                             : rc == recompute_kind::selective ? 0
                                                                : heads_rank * s * s * b * score;
  // The experts are held whole by every tensor-parallel rank (tp_shard replicates a mixture of
  // experts; it has no sequence-parallel form), which routes all the micro-batch's tokens.
  // Selective recomputation keeps them (it drops the attention scores only).
  const std::size_t moe = d.experts > 0 ? moe_kept_bytes(d, s * b) : 0;
  return s_rank * b * whole + s * b * split + scores + moe;
}

/// Bytes a stage keeps once under full recomputation beside its layers' inputs: the plan's arena
/// holds one block's kept buffers, shared by the copies that are re-run one at a time. The dense
/// count leaves that block out (Korthikanti's 2sbh per layer); a mixture of experts' part of it is
/// counted (moe_kept_bytes), since its buffers (ep·N·k received rows under expert parallelism)
/// can outweigh every layer's input together. 0 for a dense layer or another policy.
constexpr std::size_t recompute_buffer_bytes(const layer_activation_dims& d, recompute_kind rc) noexcept {
  return rc == recompute_kind::full && d.experts > 0 ? moe_kept_bytes(d, d.seq * d.micro) : 0;
}

// ---- activation sets in flight ----

namespace detail {
// Walks stage `st`'s computes in the order make_schedule writes them (warm-up forwards, then
// one forward and one backward, then the remaining backwards; the chunk of the k-th forward
// is (k mod P·V) / P, backwards visit the chunks in reverse) and returns the most sets held at
// once; counting only chunk `only` when it is < V.
constexpr std::size_t peak_sets(schedule_kind kind, std::size_t p, std::size_t m, std::size_t v, std::size_t st,
                                std::size_t only) noexcept {
  if (kind != schedule_kind::interleaved) v = 1;
  const std::size_t total = m * v, warm = warmup(kind, st, p, m, v), steady = total - warm;
  const auto counts = [&](std::size_t k, bool fwd) {
    if (only >= v) return true;
    const std::size_t c = (k % (p * v)) / p;
    return (fwd ? c : v - 1 - c) == only;
  };
  std::size_t held = 0, peak = 0;
  const auto forward = [&](std::size_t k) {
    if (counts(k, true)) peak = std::max(peak, ++held);
  };
  const auto backward = [&](std::size_t k) {
    if (counts(k, false)) --held;
  };
  for (std::size_t k = 0; k < warm; ++k) forward(k);
  for (std::size_t k = 0; k < steady; ++k) forward(warm + k), backward(k);
  for (std::size_t k = steady; k < total; ++k) backward(k);
  return peak;
}
}  // namespace detail

/// Most activation sets (one micro-batch through one model chunk) stage `stage` holds at once
/// under schedule `kind` with P stages, M micro-batches, V chunks — the simulation's
/// schedule_report::peak_activations.
constexpr std::size_t peak_activation_sets(schedule_kind kind, std::size_t p, std::size_t m, std::size_t v,
                                           std::size_t stage) noexcept {
  return detail::peak_sets(kind, p, m, v, stage, static_cast<std::size_t>(-1));
}
/// The same, counting only the sets of chunk `chunk` (the first chunk's input, the last one's output).
constexpr std::size_t peak_chunk_sets(schedule_kind kind, std::size_t p, std::size_t m, std::size_t v,
                                      std::size_t stage, std::size_t chunk) noexcept {
  return detail::peak_sets(kind, p, m, v, stage, chunk);
}

// ---- the plan of one stage ----

/// The per-rank memory of one pipeline stage, in bytes (parameters in elements).
struct stage_memory {
  std::size_t stage = 0;
  std::size_t params = 0;          ///< parameter elements one rank of the stage holds (before ZeRO)
  std::size_t param_bytes = 0;     ///< model states after ZeRO sharding ...
  std::size_t grad_bytes = 0;
  std::size_t optimizer_bytes = 0;
  std::size_t working_bytes = 0;       ///< whole gradient / gathered parameter buffers (zero_working_bytes)
  std::size_t comm_bytes = 0;          ///< the MPI library's collective temporaries at once (comm_buffer_bytes)
  std::size_t layers = 0;              ///< transformer layers on the stage (all chunks)
  std::size_t activation_sets = 0;     ///< (micro-batch, chunk) sets in flight at the peak
  std::size_t layer_bytes = 0;         ///< one layer, one micro-batch (layer_activation_bytes)
  std::size_t activation_bytes = 0;    ///< layer_bytes · layers per chunk · activation_sets (+ recompute_buffer_bytes)
  std::size_t embedding_bytes = 0;     ///< first stage: the input embedding's dropout masks in flight
  std::size_t output_bytes = 0;        ///< last stage: final norm and head inputs, 32-bit logits
  constexpr std::size_t model_state_bytes() const noexcept { return param_bytes + grad_bytes + optimizer_bytes; }
  constexpr std::size_t activations_total() const noexcept { return activation_bytes + embedding_bytes + output_bytes; }
  /// What the step itself allocates (arena and shards: resident_bytes()); total() less comm_bytes.
  constexpr std::size_t allocated_bytes() const noexcept { return model_state_bytes() + working_bytes + activations_total(); }
  constexpr std::size_t total() const noexcept { return allocated_bytes() + comm_bytes; }
};

namespace detail {
template <class M>
constexpr std::size_t kv_heads_of() {
  if constexpr (requires { M::kv_heads; }) return M::kv_heads;
  else return M::heads;
}
template <class M>
constexpr std::size_t ffn_of() {
  if constexpr (requires { M::ffn; }) return M::ffn;
  else return 4 * M::width;
}
// Keys a query attends to at most in a sequence of S: the model's sliding window
// (llama_config/gpt_config<…, sliding_window<>>) when it is shorter, else S.
template <class M, std::size_t S>
constexpr std::size_t attention_span_of() {
  if constexpr (requires { M::config::sliding_window; })
    return M::config::sliding_window != 0 && M::config::sliding_window < S ? M::config::sliding_window : S;
  else return S;
}
// Keys the queries of all the model's layers see together, per query position, in a sequence of
// S: depth · attention_span_of<M, S>() for a model whose layers are alike; a model whose config
// names `global_layers` among its windowed ones (gemma3: every pattern-th block attends to the
// whole sequence) counts those at S and the others at the window.
template <class M, std::size_t S>
constexpr std::size_t attention_keys_of() {
  if constexpr (requires { M::config::global_layers; })
    return (M::depth - M::config::global_layers) * attention_span_of<M, S>() + M::config::global_layers * S;
  else return M::depth * attention_span_of<M, S>();
}
// Elements of an attention head: the model's head_dim (llama_config<…, head_dim<>>), else width / heads.
template <class M>
constexpr std::size_t head_dim_of() {
  if constexpr (requires { M::head_dim; }) return M::head_dim;
  else return M::width / M::heads;
}
template <class M>
constexpr std::size_t dropout_mask_bytes_of() {
  if constexpr (requires { M::dropout_mask_bytes; }) return M::dropout_mask_bytes;
  else return 0;
}

// The mixture of experts of a model family built around one (moe_gpt, moe_llama: `moe_type`, one
// per block), as moe_mlp<…> or as one expert-parallel rank's ep_moe_mlp<moe_mlp<…>, EP>.
// Other models (dense, or a composition of one's own) report none: their MLPs count as dense.
struct moe_shape {
  std::size_t layers = 0;        ///< moe layers (one per block)
  std::size_t experts = 0;       ///< E
  std::size_t local_experts = 0; ///< experts one rank holds (E/EP)
  std::size_t top_k = 0, expert_in = 0, ffn = 0, width = 0;
  std::size_t ep = 1;            ///< EP of the layer's form
  std::size_t shared_kept = 0;   ///< the shared expert's kept elements per token
  bool gated = false;            ///< SwiGLU experts
};
template <class M>
constexpr moe_shape moe_shape_of() {
  if constexpr (requires { typename M::moe_type; M::depth; }) {
    using L = typename M::moe_type;
    moe_shape m{};
    m.layers = M::depth;
    m.experts = L::experts, m.top_k = L::top_k, m.expert_in = L::expert_in, m.ffn = L::ffn, m.width = L::width;
    if constexpr (requires { L::local_experts; L::ep; }) m.local_experts = L::local_experts, m.ep = L::ep;
    else m.local_experts = L::experts;
    m.gated = L::expert_in != L::ffn;
    m.shared_kept = L::shared_type::template kept_count<1, 1>;
    return m;
  } else {
    return {};
  }
}
}  // namespace detail

/// `Model` as trained with dropout (Megatron-LM's GPT-3): the accounting counts MaskBytes-byte
/// masks (after the embedding, the attention probabilities, the attention output and the MLP).
/// weft's own layers have no dropout; this wrapper exists to price the published configurations.
template <class Model, std::size_t MaskBytes = 1>
struct with_dropout_masks : Model {
  static constexpr std::size_t dropout_mask_bytes = MaskBytes;
};

/// The per-rank memory of `Model` on micro-batches `Batch` under `Strategy`, with element
/// type `T` (parameters, gradients, activations) and optimizer type `Master`; `Flash`: attention
/// keeps row statistics (the flash_attention option, in the strategy or on the plan).
template <class Model, class Batch, parallel_strategy Strategy, class T, class Master = T, bool Flash = Strategy::flash>
struct memory_model {
  using partition = model_partition<Model, Strategy::tp>;
  static constexpr std::size_t tp = Strategy::tp, pp = Strategy::pp, chunks = Strategy::chunks;
  static constexpr std::size_t microbatches = Strategy::microbatches;
  static constexpr schedule_kind kind = detail::tag_kind<typename Strategy::schedule_type>::value;
  static constexpr bool sp = Strategy::sequence_parallel;
  static constexpr state_bytes bytes = state_bytes_for<T, Master>;
  /// The data-parallel degree the compile-time numbers assume: the mesh's, or 1 when it is
  /// dynamic (ZeRO then saves nothing: an upper bound; call stage(s, dp) with the real one).
  static constexpr std::size_t assumed_dp = Strategy::dp == dynamic ? 1 : Strategy::dp;

  /// The model's mixture of experts (layers == 0 for a dense model).
  static constexpr detail::moe_shape moe = detail::moe_shape_of<Model>();
  static constexpr layer_activation_dims dims{Batch::length,
                                              Batch::sequences,
                                              Model::width,
                                              Model::heads,
                                              detail::kv_heads_of<Model>(),
                                              detail::ffn_of<Model>(),
                                              partition::gated_mlp,
                                              sizeof(T),
                                              detail::dropout_mask_bytes_of<Model>(),
                                              moe.experts,
                                              moe.top_k,
                                              moe.expert_in,
                                              moe.ep,
                                              moe.shared_kept,
                                              detail::head_dim_of<Model>()};
  /// Bytes one layer keeps per micro-batch on one rank.
  static constexpr bool flash = Flash;
  static constexpr std::size_t layer_bytes = layer_activation_bytes(dims, tp, sp, Strategy::recompute_policy, flash);
  /// Transformer layers per model chunk (a stage holds `chunks` of them).
  static constexpr std::size_t layers_per_chunk = Model::depth / (pp * chunks);

  /// The memory of stage `s` when the data-parallel degree is `dp`.
  static constexpr stage_memory stage(std::size_t s, std::size_t dp = assumed_dp) noexcept {
    stage_memory m{};
    m.stage = s;
    m.params = partition::stage_params(s, pp);  // `Model` is the rank's: E/ep experts per moe layer
    // ZeRO shards over the dp group, experts and the rest alike (the step is data_parallel_step
    // around expert_parallel_local: the dense states are replicated over the ep ranks of a group).
    const model_state_bytes st = zero_model_states(m.params, bytes, Strategy::zero_stage, dp);
    m.param_bytes = st.params;
    m.grad_bytes = st.grads;
    m.optimizer_bytes = st.optimizer;
    // ZeRO-2/3 layer by layer over the block stack of a single rank or of a tensor-parallel
    // shard (plan<>::windowed_*, tensor_parallel_plan::windowed_*): one block is its elements
    // on one tp rank. A pipeline stage, an expert-parallel rank and a local step a strategy part
    // wraps (strategy<>::wraps_local_step) hold whole.
    constexpr bool layer_by_layer =
        pp == 1 && moe.ep <= 1 && !Strategy::wraps_local_step && partition::has_blocks && partition::blocks >= 2;
    m.working_bytes = zero_working_bytes(m.params, bytes, Strategy::zero_stage,
                                         zero_held_elements(m.params, partition::block.per_rank, partition::blocks, layer_by_layer));
    m.comm_bytes = comm_buffer_bytes(m.params, bytes.grads, Strategy::zero_stage, dp, Strategy::bucket_bytes,
                                     layer_by_layer ? partition::block.per_rank : 0);
    m.layers = layers_per_chunk * chunks;
    m.activation_sets = peak_activation_sets(kind, pp, microbatches, chunks, s);
    m.layer_bytes = layer_bytes;
    m.activation_bytes = layer_bytes * layers_per_chunk * m.activation_sets + recompute_buffer_bytes(dims, Strategy::recompute_policy);
    const std::size_t rows = (sp ? detail::ceil_div(dims.seq, tp) : dims.seq) * dims.micro;  // tokens kept whole
    if (s == 0)
      m.embedding_bytes = rows * dims.width * dims.mask_bytes * peak_chunk_sets(kind, pp, microbatches, chunks, 0, 0);
    if (s + 1 == pp) {
      const std::size_t logit_bytes = std::max<std::size_t>(sizeof(T), 4);  // the loss runs in 32 bits at least
      const std::size_t per_micro = 2 * rows * dims.width * sizeof(T) +
                                    dims.seq * dims.micro * detail::ceil_div(Model::vocab_size, tp) * logit_bytes;
      m.output_bytes = per_micro * peak_chunk_sets(kind, pp, microbatches, chunks, s, chunks - 1);
    }
    return m;
  }

  /// Every stage, at the assumed data-parallel degree.
  static constexpr std::array<stage_memory, pp> stages = [] {
    std::array<stage_memory, pp> a{};
    for (std::size_t s = 0; s < pp; ++s) a[s] = stage(s);
    return a;
  }();
  /// The stage with the most bytes per rank (the first on ties).
  static constexpr std::size_t peak_stage = [] {
    std::size_t k = 0;
    for (std::size_t s = 1; s < pp; ++s)
      if (stages[s].total() > stages[k].total()) k = s;
    return k;
  }();
  /// Bytes per rank: the largest stage's total.
  static constexpr std::size_t bytes_per_rank = stages[peak_stage].total();
};

}  // namespace weft
