#pragma once
// ---- per-rank memory of a strategy, from values ----
// The same accounting as memory_model<Model, Batch, Strategy, T, Master>::stage (ZeRO's
// model states, Korthikanti's activations, the schedule's sets in flight), on a model_desc
// instead of a type: the functions of parallel/memory_model.hpp are called, not restated.
// Only the first and the last stage are priced: the first holds the embeddings and the most
// activation sets, the last the head and the logits; a middle stage holds fewer of both,
// so the peak is one of these two (tests/planner/test_memory_cost.cpp checks the numbers
// against plan<...>::memory_per_rank, with and without flash_attention; tests/planner/test_moe_search.cpp
// for mixtures of experts, with and without expert parallelism).
#include "weft/parallel/memory_model.hpp"  // zero_model_states, comm_buffer_bytes, layer_activation_bytes, peak_activation_sets, stage_memory
#include "weft/planner/model_desc.hpp"     // model_desc, strategy_desc, precision_desc

#include <algorithm>
#include <cstddef>

namespace weft::planner {

/// Activation sets in flight that the memory depends on (a walk of the schedule, done once
/// per (schedule, P, M, V) by the search and shared by the strategies that differ otherwise).
struct activation_sets {
  std::size_t first = 0;        ///< stage 0, all chunks
  std::size_t first_input = 0;  ///< stage 0, chunk 0 (the embedding's output)
  std::size_t last = 0;         ///< stage P − 1, all chunks
  std::size_t last_output = 0;  ///< stage P − 1, chunk V − 1 (the head's inputs and logits)
};

namespace detail {
// Sets of all chunks stage `st` holds at its peak, in closed form: the walk of peak_sets holds
// its warm-up forwards, then one more during the steady phase (a forward before each
// backward) when there is one. Equal to peak_activation_sets (tests/planner/test_memory_cost.cpp
// checks many sizes) at O(1) instead of O(M·V): the search asks for thousands of them.
constexpr std::size_t peak_sets_closed(schedule_kind kind, std::size_t pp, std::size_t m, std::size_t v, std::size_t st) noexcept {
  if (kind != schedule_kind::interleaved) v = 1;
  const std::size_t warm = weft::detail::warmup(kind, st, pp, m, v);
  return warm + (m * v > warm ? 1 : 0);
}
// The sets of chunk `only` stage `st` holds at its peak (peak_chunk_sets), walking the warm-up and
// at most one period of the steady phase instead of all M·V steps: in the steady phase the k-th
// step runs forward warm + k and backward k, whose chunks repeat with period P·V, each period
// holding P forwards and P backwards of every chunk — so the held count returns to where it was
// and the rest of the steady phase repeats the first period; the cool-down only releases.
// Equal to the walk (tests/planner/test_cost_terms.cpp checks many sizes), at O(P·V) steps: the
// search asks for thousands of them, and the walk was most of auto_strategy's constexpr budget.
constexpr std::size_t peak_chunk_sets_fast(schedule_kind kind, std::size_t p, std::size_t m, std::size_t v, std::size_t st,
                                           std::size_t only) noexcept {
  if (kind != schedule_kind::interleaved) v = 1;
  const std::size_t total = m * v, warm = weft::detail::warmup(kind, st, p, m, v), steady = total - warm;
  const std::size_t period = p * v, walk = steady < period ? steady : period;
  std::size_t held = 0, peak = 0;
  for (std::size_t k = 0; k < warm; ++k)
    if ((k % period) / p == only && ++held > peak) peak = held;
  for (std::size_t k = 0; k < walk; ++k) {
    if (((warm + k) % period) / p == only && ++held > peak) peak = held;
    if (v - 1 - (k % period) / p == only) --held;
  }
  return peak;
}
}  // namespace detail

constexpr activation_sets sets_in_flight(schedule_kind kind, std::size_t pp, std::size_t m, std::size_t v) noexcept {
  if (kind != schedule_kind::interleaved) v = 1;
  const std::size_t first = detail::peak_sets_closed(kind, pp, m, v, 0), last = detail::peak_sets_closed(kind, pp, m, v, pp - 1);
  if (v == 1) return {first, first, last, last};  // one chunk: the chunk's sets are all the sets
  return {first, detail::peak_chunk_sets_fast(kind, pp, m, v, 0, 0), last, detail::peak_chunk_sets_fast(kind, pp, m, v, pp - 1, v - 1)};
}
constexpr activation_sets sets_in_flight(const strategy_desc& s) noexcept {
  return sets_in_flight(s.schedule, s.pp, s.microbatches, s.schedule == schedule_kind::interleaved ? s.chunks : 1);
}

/// memory_model::stage(st, dp) for the model, sequence length, strategy and precision given as values.
constexpr stage_memory stage_memory_of(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                       const precision_desc& p, const activation_sets& sets, std::size_t st) noexcept {
  const std::size_t v = s.schedule == schedule_kind::interleaved ? s.chunks : 1;
  // context parallelism: a rank keeps s/cp tokens of each sequence (its attention blockwise, as
  // ring attention's flash kernels run it), and ZeRO shards over the dp·cp ranks that share the
  // parameters
  if (s.cp > 1) seq = weft::detail::ceil_div(seq, s.cp);
  const std::size_t shards = s.dp * s.cp;
  const layer_activation_dims dims{seq,           s.micro,      md.width,     md.heads, md.kv_heads,
                                   md.ffn,        md.gated,     p.element_bytes, md.mask_bytes,
                                   md.experts,    md.top_k,     md.expert_in, s.ep,     md.shared_kept,
                                   md.head_dim};
  stage_memory m{};
  m.stage = st;
  // E/ep experts per moe_mlp under expert parallelism; uneven stages: the stage's own blocks
  m.params = s.uneven() ? md.stage_params(st, s.pp, s.tp, s.ep, s.stage_layers(md.depth, st))
                        : md.stage_params(st, s.pp, s.tp, s.ep);
  // ZeRO shards over dp, experts and the rest alike (memory_model: the dense states are
  // replicated over the ep ranks of an expert group).
  const model_state_bytes ms = zero_model_states(m.params, p.states, s.zero, shards);
  m.param_bytes = ms.params;
  m.grad_bytes = ms.grads;
  m.optimizer_bytes = ms.optimizer;
  // ZeRO-2/3 layer by layer over the block stack of a single rank or a tensor-parallel shard
  // (one block: its elements on one tp rank); a pipeline stage holds whole.
  // FSDP / DeepSpeed units (zero3_buffers::per_layer_units): one unit per block at any pipeline
  // depth; the gathered parameters of the block computing and `prefetch` ahead, the gradients of
  // two blocks (one written by backward, one being reduce-scattered), beside the stage's layers
  // outside the block stack (embeddings, head: the root unit, held whole).
  // DeepSpeed's per-tensor ZeRO-3 (zero3_buffers::per_tensor): the same, a tensor for a block.
  const bool tensors = s.zero >= 3 && s.zero3_holds == zero3_buffers::per_tensor && shards > 1;
  const bool units = (s.zero >= 3 && s.zero3_holds == zero3_buffers::per_layer_units && shards > 1) || tensors;
  const std::size_t stage_blocks = s.stage_layers(md.depth, st);
  const bool layer_by_layer = units ? stage_blocks >= 2 : s.pp == 1 && s.ep == 1 && md.depth >= 2;
  const std::size_t block = units ? md.rank_block_params(s.tp, s.ep) : md.block.per_rank(s.tp);
  if (units && layer_by_layer && stage_blocks * block <= m.params) {
    const std::size_t root = m.params - stage_blocks * block;
    const std::size_t gathered = std::min(stage_blocks, s.prefetch + 1), grads = std::min<std::size_t>(stage_blocks, 2);
    const std::size_t piece = tensors ? std::min(block, md.largest_block_tensor(s.tp)) : block;
    m.working_bytes = (root + gathered * piece) * p.states.params + (root + grads * piece) * p.states.grads;
  } else {
    m.working_bytes = zero_working_bytes(m.params, p.states, s.zero,
                                         zero_held_elements(m.params, block, md.depth, layer_by_layer));
  }
  m.comm_bytes = comm_buffer_bytes(m.params, p.states.grads, s.zero, shards, s.bucket_bytes,
                                   layer_by_layer ? block : 0);
  // uneven stages: the stage's own blocks, in v chunks of ⌈blocks/v⌉ at most (the largest priced)
  const std::size_t per_chunk = s.chunk_layers(md.depth, st, v);
  m.layers = s.uneven() ? s.stage_layers(md.depth, st) : per_chunk * v;
  m.activation_sets = st == 0 ? sets.first : sets.last;
  // flash: row log-sum-exp and an output copy instead of the probabilities (a selective policy
  // then keeps what none keeps; full keeps the layer inputs either way)
  m.layer_bytes = layer_activation_bytes(dims, s.tp, s.sequence_parallel, s.recompute, s.flash);
  if (md.dense_layers > 0 && md.experts > 0 && md.depth > 0) {
    // dense first blocks (with_shared_and_dense): the mean of a dense and a moe block's
    layer_activation_dims dense = dims;
    dense.experts = 0, dense.top_k = 0, dense.expert_in = 0, dense.shared_kept = 0, dense.ffn = md.dense_ffn;
    dense.gated = md.expert_in == 2 * md.ffn;
    const std::size_t d = layer_activation_bytes(dense, s.tp, s.sequence_parallel, s.recompute, s.flash);
    m.layer_bytes = (md.dense_layers * d + (md.depth - md.dense_layers) * m.layer_bytes) / md.depth;
  }
  const std::size_t rc_layers = s.recomputed_layers(per_chunk);
  if (s.recompute == recompute_kind::full && rc_layers < per_chunk) {
    // partial recomputation: rc_layers blocks keep their input, the others all they compute
    const std::size_t kept = layer_activation_bytes(dims, s.tp, s.sequence_parallel, recompute_kind::none, s.flash);
    const std::size_t chunk = rc_layers * m.layer_bytes + (per_chunk - rc_layers) * kept;
    m.layer_bytes = per_chunk ? chunk / per_chunk : 0;  // the mean a block (the report's)
    m.activation_bytes = chunk * m.activation_sets + (rc_layers ? recompute_buffer_bytes(dims, s.recompute) : 0);
  } else {
    m.activation_bytes = m.layer_bytes * per_chunk * m.activation_sets + recompute_buffer_bytes(dims, s.recompute);
  }
  const std::size_t rows = (s.sequence_parallel ? weft::detail::ceil_div(seq, s.tp) : seq) * s.micro;
  if (st == 0) m.embedding_bytes = rows * md.width * md.mask_bytes * sets.first_input;
  if (st + 1 == s.pp) {
    const std::size_t logit_bytes = std::max<std::size_t>(p.element_bytes, 4);
    const std::size_t per_micro = 2 * rows * md.width * p.element_bytes + seq * s.micro * weft::detail::ceil_div(md.vocab, s.tp) * logit_bytes;
    m.output_bytes = per_micro * sets.last_output;
  }
  return m;
}

/// The stage with the most bytes per rank (first or last) — memory_model::bytes_per_rank.
constexpr stage_memory peak_stage_memory(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                         const precision_desc& p, const activation_sets& sets) noexcept {
  const stage_memory first = stage_memory_of(md, seq, s, p, sets, 0);
  if (s.pp == 1) return first;
  const stage_memory last = stage_memory_of(md, seq, s, p, sets, s.pp - 1);
  const stage_memory& edge = last.total() > first.total() ? last : first;
  if (!s.uneven() || s.pp < 3) return edge;
  // uneven stages: a middle one may hold more blocks; stage 1 holds the most sets among them
  const std::size_t v = s.schedule == schedule_kind::interleaved ? s.chunks : 1;
  const std::size_t sets1 = peak_activation_sets(s.schedule, s.pp, s.microbatches, v, 1);
  const stage_memory mid = stage_memory_of(md, seq, s, p, activation_sets{sets1, sets1, sets1, sets1}, 1);
  return mid.total() > edge.total() ? mid : edge;
}
constexpr stage_memory peak_stage_memory(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                         const precision_desc& p = {}) noexcept {
  return peak_stage_memory(md, seq, s, p, sets_in_flight(s));
}

/// The memory of any stage `st` (the explorer's per-stage table).
constexpr stage_memory stage_memory_at(const model_desc& md, std::size_t seq, const strategy_desc& s,
                                       const precision_desc& p, std::size_t st) noexcept {
  const std::size_t v = s.schedule == schedule_kind::interleaved ? s.chunks : 1;
  const std::size_t all = peak_activation_sets(s.schedule, s.pp, s.microbatches, v, st);
  const activation_sets sets{all, peak_chunk_sets(s.schedule, s.pp, s.microbatches, v, st, 0), all,
                             peak_chunk_sets(s.schedule, s.pp, s.microbatches, v, st, v - 1)};
  return stage_memory_of(md, seq, s, p, sets, st);
}

/// Memory one device would need to train the model alone (tp = pp = dp = 1), with recompute `rc`
/// (and flash attention when `flash`).
constexpr stage_memory single_device_memory(const model_desc& md, std::size_t seq, std::size_t micro,
                                            recompute_kind rc = recompute_kind::none, const precision_desc& p = {},
                                            bool flash = false) noexcept {
  strategy_desc s{};
  s.micro = micro;
  s.recompute = rc;
  s.flash = flash;
  return peak_stage_memory(md, seq, s, p);
}

}  // namespace weft::planner
