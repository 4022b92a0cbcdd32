#pragma once
// ---- bytes communicated and FLOPs per optimizer step, per rank ----
// comm_volume<Model, Batch, Strategy, T, Master>::stage(s, dp) counts what one rank of
// pipeline stage s sends in one optimizer step (M micro-batches of b sequences of s tokens)
// on each mesh axis, with ring collectives over n ranks (each rank sends (n − 1) chunks of
// 1/n of the buffer per reduce-scatter or all-gather, twice that per all-reduce; a buffer of
// x elements is padded to n·ceil(x/n)):
//
// * data parallel — the rank's parameters Ψ (model_partition: its stage and tensor shard):
//   zero<0>  one all-reduce of the gradients per step: 2(n − 1)/n·Ψ gradient bytes;
//   zero<1>  reduce-scatter of the gradients, all-gather of the updated parameters (ZeRO:
//            the same 2Ψ as plain data parallelism with 16-bit gradients and parameters);
//   zero<2>  the same, but the gradients are reduce-scattered after every micro-batch's
//            backward (a rank keeps only its gradient shard, so it cannot accumulate the rest);
//   zero<3>  per micro-batch the parameters are all-gathered for forward and again for
//            backward and the gradients reduce-scattered: 3Ψ, 1.5× plain data parallelism
//            (ZeRO Section 7.2.2), for M = 1.
// * tensor parallel — Megatron-LM: per layer and micro-batch two all-reduces of the (s, b, h)
//   activations in forward and two in backward (sequence parallel: all-gathers and
//   reduce-scatters of equal total volume); full recomputation repeats the forward's two.
//   Only the transformer layers are counted (not the vocabulary-parallel embedding and loss).
// * pipeline — per micro-batch and chunk boundary, one (s, b, h) activation forward and its
//   gradient backward (the sequence shard, 1/t of it, with sequence parallelism).
// * expert parallel (ep ranks, model/moe_expert_parallel.hpp) — per micro-batch and moe_mlp
//   layer, four all-to-alls of the b·s·k routed rows of width h: dispatch and combine in
//   forward, their gradients in backward (six with full recompute, whose forward runs again).
//   With balanced routing a rank keeps 1/ep of its rows and sends (ep − 1)/ep of them. The
//   per-expert row counts (ep·E/ep integers per dispatch) are not counted. Data parallelism
//   then sums the experts' gradients over the dp ranks of the same expert block and every
//   other gradient over all dp·ep ranks (expert_parallel_step): dp_bytes counts both rings.
//
// FLOPs follow PaLM's count, as plan::flops_per_token does: 6 per parameter that multiplies
// (embedding tables only looked up do not; a tied head multiplies by its table on the last
// stage) plus 12·h·s per layer for attention, per token; model FLOPs count that, hardware
// FLOPs add the recomputation (full: the layers' forward again, 2·Ψ_layer + 4·h·s per token;
// selective: the attention core, 4·h·s). Tensor parallelism divides a stage's FLOPs by t.
#include "weft/core/constant.hpp"          // dynamic
#include "weft/parallel/expert_parallel.hpp"  // ep_model_t, ep_facts
#include "weft/parallel/memory_model.hpp"  // detail::ceil_div, peak_activation_sets
#include "weft/parallel/partition.hpp"     // model_partition
#include "weft/parallel/schedule.hpp"      // schedule_kind, detail::tag_kind
#include "weft/parallel/strategy.hpp"      // parallel_strategy, recompute_kind

#include <array>
#include <cstddef>
#include <cstdint>

namespace weft {

// ---- ring collectives: bytes one of n ranks sends ----

/// Reduce-scatter (or all-gather) of `elements` elements of `bytes` bytes over `n` ranks.
constexpr std::uint64_t ring_reduce_scatter_bytes(std::uint64_t elements, std::uint64_t n, std::uint64_t bytes) noexcept {
  return n <= 1 ? 0 : (n - 1) * ((elements + n - 1) / n) * bytes;
}
/// All-gather: the same volume as reduce-scatter.
constexpr std::uint64_t ring_all_gather_bytes(std::uint64_t elements, std::uint64_t n, std::uint64_t bytes) noexcept {
  return ring_reduce_scatter_bytes(elements, n, bytes);
}
/// All-reduce: a reduce-scatter and an all-gather, 2(n − 1)/n of the buffer.
constexpr std::uint64_t ring_all_reduce_bytes(std::uint64_t elements, std::uint64_t n, std::uint64_t bytes) noexcept {
  return 2 * ring_reduce_scatter_bytes(elements, n, bytes);
}

/// What one rank of a stage sends and computes in one optimizer step.
struct step_volume {
  std::size_t stage = 0;
  std::uint64_t dp_bytes = 0;        ///< sent on the data-parallel axis
  std::uint64_t tp_bytes = 0;        ///< sent on the tensor-parallel axis
  std::uint64_t pp_bytes = 0;        ///< sent to the neighbouring stages (activations and gradients)
  std::uint64_t ep_bytes = 0;        ///< sent on the expert-parallel axis (the all-to-alls of routed rows)
  std::uint64_t model_flops = 0;     ///< PaLM's count, this rank's share
  std::uint64_t hardware_flops = 0;  ///< model_flops plus recomputation
};

/// Communication and FLOPs per step of `Model` under `Strategy` (see the top of this file).
template <class Model, class Batch, parallel_strategy Strategy, class T, class Master = T>
struct comm_volume {
  using partition = model_partition<Model, Strategy::tp>;
  static constexpr std::size_t tp = Strategy::tp, pp = Strategy::pp, chunks = Strategy::chunks, ep = ep_degree<Strategy>;
  static constexpr std::size_t microbatches = Strategy::microbatches;
  static constexpr bool sp = Strategy::sequence_parallel;
  static constexpr recompute_kind rc = Strategy::recompute_policy;
  static constexpr state_bytes bytes = state_bytes_for<T, Master>;
  static constexpr std::size_t assumed_dp = Strategy::dp == dynamic ? 1 : Strategy::dp;

  static constexpr std::uint64_t s = Batch::length, b = Batch::sequences, h = Model::width;
  static constexpr std::uint64_t attn_width = Model::heads * detail::head_dim_of<Model>();  // H·D: h unless head_dim is set
  static constexpr std::uint64_t span = detail::attention_span_of<Model, Batch::length>();  // keys per query: s, or the window
  /// Keys per query over all layers (depth · span, or Gemma 3's global layers at s and local ones at the window).
  static constexpr std::uint64_t keys = detail::attention_keys_of<Model, Batch::length>();
  /// Tokens one rank processes per step (each of M micro-batches of b·s).
  static constexpr std::uint64_t tokens_per_step = microbatches * b * s;
  /// Transformer layers per stage.
  static constexpr std::size_t layers_per_stage = Model::depth / pp;
  /// Bytes of one (s, b, h) activation.
  static constexpr std::uint64_t activation_message = s * b * h * sizeof(T);

  /// Bytes one rank of a stage holding `psi` parameters sends on the data-parallel axis of `n` ranks.
  static constexpr std::uint64_t data_parallel_bytes(std::uint64_t psi, std::size_t n) noexcept {
    switch (Strategy::zero_stage) {
      case 0: return ring_all_reduce_bytes(psi, n, bytes.grads);
      case 1: return ring_reduce_scatter_bytes(psi, n, bytes.grads) + ring_all_gather_bytes(psi, n, bytes.params);
      case 2:
        return microbatches * ring_reduce_scatter_bytes(psi, n, bytes.grads) + ring_all_gather_bytes(psi, n, bytes.params);
      default:
        return microbatches * (ring_reduce_scatter_bytes(psi, n, bytes.grads) + 2 * ring_all_gather_bytes(psi, n, bytes.params));
    }
  }

  // ---- expert parallelism (ep = 1: all zero) ----
  /// Parameter elements of one rank of the expert group: E/ep experts per moe_mlp.
  static constexpr std::uint64_t ep_rank_params = [] {
    if constexpr (ep == 1) return std::uint64_t{0};
    else return std::uint64_t{model_partition<ep_model_t<Model, ep>, 1>::stage_params(0, 1)};
  }();
  /// Of these, the experts' (the whole model holds ep times as many: whole - rank = (ep − 1)·experts).
  static constexpr std::uint64_t ep_expert_params = [] {
    if constexpr (ep == 1) return std::uint64_t{0};
    else return (model_partition<Model, 1>::stage_params(0, 1) - ep_rank_params) / (ep - 1);
  }();
  /// Bytes one rank sends in one all-to-all of its routed rows of one micro-batch, over all moe_mlp layers.
  static constexpr std::uint64_t ep_dispatch_bytes = [] {
    if constexpr (ep == 1) return std::uint64_t{0};
    else return b * s * ep_facts<Model, ep>::routed_elements * sizeof(T) * (ep - 1) / ep;
  }();
  /// Expert-parallel bytes per micro-batch: dispatch and combine, forward and backward (6 with full recompute).
  static constexpr std::uint64_t ep_bytes_per_micro = (rc == recompute_kind::full ? 6 : 4) * ep_dispatch_bytes;

  /// Tensor-parallel bytes of one layer and one micro-batch: 4 all-reduces of (s, b, h) (6 with full recompute).
  static constexpr std::uint64_t tp_bytes_per_layer =
      (rc == recompute_kind::full ? 6 : 4) * ring_all_reduce_bytes(s * b * h, tp, sizeof(T));

  /// Model FLOPs of stage `st` per token, before tensor-parallel division.
  static constexpr std::uint64_t stage_flops_per_token(std::size_t st) noexcept {
    // attention: the stage's share of all layers' keys (a stage's own mix of local and global
    // layers may differ by one global layer; the mean is counted)
    std::uint64_t f = layers_per_stage * 6 * partition::block.total + 12 * attn_width * keys * layers_per_stage / Model::depth;
    if (partition::has_blocks) {
      if (st == 0) f += 6 * (partition::pre.total - Model::lookup_param_count - partition::tied_table);
      if (st + 1 == pp) f += 6 * (partition::post.total + partition::tied_table);
    } else {
      f = 6 * (partition::whole.params.total - Model::lookup_param_count) + 12 * attn_width * keys;
    }
    return f;
  }
  /// Recomputation FLOPs of stage `st` per token.
  static constexpr std::uint64_t recompute_flops_per_token() noexcept {
    const std::size_t layers = partition::has_blocks ? layers_per_stage : Model::depth;
    if (rc == recompute_kind::full) return layers * (2 * partition::block.total + 4 * h * s);
    if (rc == recompute_kind::selective) return layers * 4 * h * s;
    return 0;
  }

  /// Volumes of one rank of stage `st` when the data-parallel degree is `dp`.
  static constexpr step_volume stage(std::size_t st, std::size_t dp = assumed_dp) noexcept {
    step_volume v{};
    v.stage = st;
    if constexpr (ep == 1) v.dp_bytes = data_parallel_bytes(partition::stage_params(st, pp), dp);
    else  // experts over the dp ranks of their block; the rest over all dp·ep ranks (zero<0>: the strategy allows no other)
      v.dp_bytes = data_parallel_bytes(ep_expert_params, dp) + data_parallel_bytes(ep_rank_params - ep_expert_params, dp * ep);
    v.ep_bytes = microbatches * ep_bytes_per_micro;
    v.tp_bytes = layers_per_stage * microbatches * tp_bytes_per_layer;
    std::uint64_t messages = 0;  // activations sent forward and gradients sent backward, per micro-batch
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t virtual_stage = c * pp + st;
      messages += (virtual_stage + 1 < pp * chunks) + (virtual_stage > 0);
    }
    v.pp_bytes = messages * microbatches * (sp ? activation_message / tp : activation_message);
    v.model_flops = stage_flops_per_token(st) * tokens_per_step / tp;
    v.hardware_flops = (stage_flops_per_token(st) + recompute_flops_per_token()) * tokens_per_step / tp;
    return v;
  }

  /// Every stage, at the assumed data-parallel degree.
  static constexpr std::array<step_volume, pp> stages = [] {
    std::array<step_volume, pp> a{};
    for (std::size_t i = 0; i < pp; ++i) a[i] = stage(i);
    return a;
  }();
};

}  // namespace weft
