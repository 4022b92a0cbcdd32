#pragma once
// ---- plan: the static memory plan and counts of one rank ----
// plan<Model, batch<micro<B>, seq<S>>, precision<T>?> places every buffer a training step uses
// at a byte offset fixed at compile time, in one arena:
//   parameters | gradients | master weights | AdamW first moment | second moment |
//   kept activations | logits (also their gradient, in place) | workspace | per-token losses |
//   token ids | targets
// so a step allocates nothing, and `bytes_per_rank` is known before launch (static_assert it).
// The model-state sections are sized in one place for every local arena (state_sections.hpp):
// under ZeRO >= 1 (the strategy's zero<Z>, or zero_local_plan_t) the master and moment
// sections are empty, because data_parallel_step holds them in shards.
//
// With a strategy<...> option the plan also checks the strategy against the model (tp
// divides heads, kv_heads, ffn and vocab; pp (and pp·V) divides depth; seq divisible by tp
// under sequence parallelism; the schedule's micro-batch rules) and prices one rank of it:
// `memory` (memory_model.hpp: ZeRO model states, Korthikanti activations, communication
// buffers, per stage),
// `memory_per_rank` (its largest stage, checked against memory_budget; what a rank really
// allocates: tests/mpi/memory_per_rank.cpp), and `volume`
// (comm_volume.hpp: bytes per mesh axis and FLOPs per step). The arena above stays the local
// arena of the unsharded single-rank step (`bytes_per_rank`, `arena_bytes`): training_step
// allocates it; the sharded step brings its own.
// Under expert_parallel<"ep"> (ep > 1) the plan is that of one rank of the expert group: its
// model (`rank_model`) runs every moe_mlp as ep_moe_mlp<…, ep> (parallel/expert_parallel.hpp),
// so param_count, the arena, `memory` and `parameters()` hold E/ep experts per layer (the
// expert-parallel step trains exactly this arena); FLOPs stay the whole model's per token.
#include "weft/core/constant.hpp"          // dynamic
#include "weft/core/diagnostics.hpp"       // diag::at_most, diag::divisible
#include "weft/core/dtype.hpp"             // bf16, f16 (section dtype names)
#include "weft/model/layer.hpp"            // language_model, param_info, npos_param
#include "weft/parallel/batch.hpp"         // batch, micro, seq
#include "weft/parallel/comm_volume.hpp"   // comm_volume, step_volume
#include "weft/parallel/expert_parallel.hpp"  // ep_model_t, ep_facts
#include "weft/parallel/memory_model.hpp"  // memory_model, stage_memory
#include "weft/parallel/recompute.hpp"     // with_recompute_t
#include "weft/parallel/state_sections.hpp"  // local_state_sections, sharded_optimizer_state
#include "weft/parallel/strategy.hpp"      // strategy, parallel_strategy, single_rank_strategy
#include "weft/parallel/tensor_parallel.hpp"  // tp_shard, detail::executed_body (the tp-form check)

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft {

/// Element type of parameters, gradients, optimizer state and activations: precision<T>.
/// precision<T, Master> is mixed precision: T for parameters, gradients and activations,
/// Master for the optimizer's copy of the parameters and its moments. The single-rank host
/// step (training_step) runs it: e.g. precision<bf16, f32>, see docs/precision.md, and so
/// does data_parallel_step over it (f32 master and moment shards under ZeRO); the tensor- and
/// pipeline-parallel steps account for it in memory only.
template <class T, class Master = T>
struct precision {
  using type = T;
  using master_type = Master;
  using weft_precision_tag = void;
};

namespace detail {
// The name of a plan element type, for report() and section_dtypes.
template <class U>
constexpr std::string_view plan_dtype_name() {
  if constexpr (std::is_same_v<U, double>) return "f64";
  else if constexpr (std::is_same_v<U, float>) return "f32";
  else if constexpr (std::is_same_v<U, bf16>) return "bf16";
  else if constexpr (std::is_same_v<U, f16>) return "f16";
  else return "?";
}
}  // namespace detail

/// An upper bound on the plan's bytes per rank, checked at compile time.
template <std::size_t Bytes>
struct memory_budget {
  static constexpr std::size_t bytes = Bytes;
  using weft_budget_tag = void;
};

inline constexpr std::size_t operator""_GiB(unsigned long long n) { return static_cast<std::size_t>(n) << 30; }
inline constexpr std::size_t operator""_MiB(unsigned long long n) { return static_cast<std::size_t>(n) << 20; }

namespace detail {
template <class... Os>
struct find_precision {
  using type = float;
  using master_type = float;
};
// A precision option ends the search; any other option (memory_budget, ...) is skipped. Two
// specialisations, because conditional_t would name `O::type` for options that have none.
template <class O, class... Os>
struct find_precision<O, Os...> : find_precision<Os...> {};
template <class O, class... Os>
  requires requires { typename O::weft_precision_tag; }
struct find_precision<O, Os...> {
  using type = typename O::type;
  using master_type = typename O::master_type;
};
// The precision: a plan option, else the strategy's precision<> part, else f32.
template <class Strategy, class... Os>
struct plan_precision : find_precision<Os...> {};
template <class Strategy, class... Os>
  requires(count_of<is_precision, Os...> == 0 && !std::is_void_v<typename Strategy::precision_type::type>)
struct plan_precision<Strategy, Os...> : find_precision<typename Strategy::precision_type> {};
template <class T> struct is_strategy : std::bool_constant<parallel_strategy<T>> {};
// Bytes of the first memory_budget option, else no limit. `if constexpr`, so that `Os::bytes` is
// only named for options that have it (a ?: would instantiate it for every option).
template <class O>
constexpr std::size_t budget_of() {
  if constexpr (requires { typename O::weft_budget_tag; }) return O::bytes;
  else return static_cast<std::size_t>(-1);
}
template <class... Os>
constexpr std::size_t find_budget() {
  std::size_t b = static_cast<std::size_t>(-1);
  ((b == static_cast<std::size_t>(-1) ? (b = budget_of<Os>(), 0) : 0), ...);
  return b;
}
constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace detail

/// One region of the arena.
struct plan_section {
  std::string_view name;
  std::size_t offset;  ///< bytes from the arena's start (64-byte aligned)
  std::size_t bytes;
  std::size_t elements;
};

/// The static plan of one rank for `Model` on micro-batches `Batch`.
template <language_model Model, class Batch, class... Options>
struct plan {
  using batch_type = Batch;
  /// True when a strategy<...> option is given; strategy_type is it, else single_rank_strategy.
  static constexpr bool has_strategy = detail::count_of<detail::is_strategy, Options...> >= 1;
  using strategy_type = detail::first_of_t<detail::is_strategy, single_rank_strategy, Options...>;
  /// The model as written (names, comm_volume and the pipeline's stages take this one).
  using model_type = Model;
  /// Expert-parallel degree of the strategy (1 without expert_parallel).
  static constexpr std::size_t ep = ep_degree<strategy_type>;
  /// The model one rank holds: `Model` through each strategy part's rank_model (under
  /// expert_parallel each moe_mlp as ep_moe_mlp<…, ep>: E/ep experts per layer). Parameters, the
  /// arena and memory_model take it.
  using rank_model = typename strategy_type::template rank_model<Model>;
  /// The recomputation the executors run: the strategy's policy, on every kind of rank (the
  /// tensor-parallel shard maps recomputed<> and selective_attention<>; a pipeline stage is cut
  /// from model_type first and then mapped, see pipeline_step).
  /// Whether attention keeps row statistics instead of probabilities (flash_attention, written in
  /// the strategy or as a plan option): every causal_attention of `model` is flash_attention_core.
  static constexpr bool flash = strategy_type::flash || detail::count_of<detail::is_flash_attention, Options...> >= 1;
  /// With flash_attention it carries that too (executed_policy<policy, true>).
  using executed_recompute = std::conditional_t<flash, executed_policy<typename strategy_type::recompute_type, true>,
                                                typename strategy_type::recompute_type>;
  /// The model the steps execute: `rank_model` under the strategy's recompute<> policy
  /// (parallel/recompute.hpp); the same parameters, fewer kept activations.
  using model = with_recompute_t<rank_model, executed_recompute>;
  using value_type = typename detail::plan_precision<strategy_type, Options...>::type;
  using master_type = typename detail::plan_precision<strategy_type, Options...>::master_type;
  using T = value_type;

  static constexpr std::size_t alignment = 64;
  static constexpr std::size_t B = Batch::sequences;
  static constexpr std::size_t S = Batch::length;
  static constexpr std::size_t rows = B * S;
  static constexpr std::size_t vocab_size = Model::out_width;

  // ---- validation at the user's line ----
  static constexpr bool seq_fits_context = diag::at_most<S, Model::context_length>;
  static_assert(seq_fits_context, "weft::plan: seq<S> is longer than the model's context. Use seq<S> <= context<N>, or raise context<N>.");

  // ---- element counts ----
  static constexpr std::size_t param_count = rank_model::param_count;  ///< this rank's (E/ep experts per layer)
  static constexpr std::size_t global_param_count = Model::param_count;  ///< the whole model's
  static constexpr std::size_t kept_count = model::template kept_count<B, S>;  // after recomputation
  static constexpr std::size_t scratch_count = model::template scratch_count<B, S>;
  static constexpr std::size_t logits_count = rows * vocab_size;

  // ---- the arena, section by section ----
  // Mixed precision (precision<T, Master> with Master != T, e.g. bf16 / f32): parameters,
  // gradients and activations in T; an f32 master copy of the parameters and the AdamW moments
  // in Master; per-token losses in float when T is narrower (see docs/precision.md). With
  // Master == T the master section is empty and the layout is the single-type one, byte for byte.
  static constexpr bool mixed_precision = !std::is_same_v<T, master_type>;
  /// False when ZeRO (a strategy with data_parallel<..., zero<Z>>, Z >= 1, or the
  /// sharded_optimizer_state option) keeps the optimizer state in data_parallel_step's shards:
  /// then the master and moment sections are empty (state_sections.hpp).
  static constexpr bool optimizer_state_in_arena =
      strategy_type::zero_stage == 0 && detail::count_of<detail::is_sharded_optimizer_state, Options...> == 0;
  // ZeRO layer by layer, over the model's block stack (its top-level repeat<N, Block>, N >= 2):
  //   * ZeRO-3 (a strategy with zero<3>, or the sharded_parameters option): the stack's
  //     parameters are not resident; the arena keeps the layers before and after it and two
  //     windows of one block (block_window_hook::params_fn);
  //   * ZeRO-2 and 3 (zero<2>, zero<3>, or the sharded_gradients option): nor are its
  //     gradients; two gradient windows of one block each (block_window_hook::grads_fn).
  // This arena windows a single rank's stack; a tensor-parallel shard's arena
  // (tensor_parallel_plan) windows its own stack the same way, when this plan asks for windows
  // (wants_windowed_params, wants_windowed_grads). A pipeline stage holds whole.
  /// Whether ZeRO-3 (zero<3>, or sharded_parameters) asks for parameter windows, and ZeRO-2/3
  /// (zero<2>, zero<3>, sharded_gradients, sharded_parameters) for gradient windows, whatever
  /// the model: the arena that runs the block stack (this one, or a tensor-parallel shard's)
  /// windows it when it has one.
  /// A strategy part that wraps the local step (strategy<>::wraps_local_step: it reads the local
  /// step's gradient block whole) keeps the stack whole under zero<2>/zero<3>.
  static constexpr bool wants_windowed_params =
      (strategy_type::zero_stage == 3 && !strategy_type::wraps_local_step) ||
      detail::count_of<detail::is_sharded_parameters, Options...> > 0;
  static constexpr bool wants_windowed_grads =
      (strategy_type::zero_stage >= 2 && !strategy_type::wraps_local_step) || wants_windowed_params ||
      detail::count_of<detail::is_sharded_gradients, Options...> > 0;
  using window_layout = block_windows<Model, wants_windowed_params, wants_windowed_grads,
                                strategy_type::tp == 1 && strategy_type::pp == 1 && ep_degree<strategy_type> == 1,
                                param_count>;
  static constexpr bool has_block_stack = window_layout::has_block_stack;
  static constexpr bool windowed_params = window_layout::params;
  static constexpr bool windowed_grads = window_layout::grads;
  static constexpr bool windowed = window_layout::any;
  static constexpr bool windows_with_sharded_optimizer = !windowed || !optimizer_state_in_arena;
  static_assert(windows_with_sharded_optimizer, "weft::plan: sharded_parameters or sharded_gradients without sharded_optimizer_state: the arena's own optimizer would update parameters and gradients it does not hold. Add sharded_optimizer_state (data_parallel_step keeps the optimizer state), or build the plan with zero_local_plan_t<Plan, Z>.");
  /// The block stack's first parameter (offset in the model's block), one block's elements and
  /// the blocks (windowed only; 0 otherwise), and what the arena holds whole (block_windows).
  static constexpr std::size_t window_begin = window_layout::begin;
  static constexpr std::size_t window_block = window_layout::block;
  static constexpr std::size_t window_blocks = window_layout::blocks;
  static constexpr std::size_t resident_param_count = window_layout::resident_params;
  static constexpr std::size_t resident_grad_count = window_layout::resident_grads;
  static constexpr state_sections state = [] {
    state_sections st = local_state_sections(param_count, mixed_precision, optimizer_state_in_arena);
    st.params = resident_param_count;
    st.grads = resident_grad_count;
    return st;
  }();
  using loss_type = std::conditional_t<(sizeof(T) < sizeof(float)), float, T>;
  enum section_id : std::size_t {
    params, grads, master, adam_m, adam_v, windows, grad_windows, kept, logits, scratch, losses, tokens, targets,
    n_sections
  };
  static constexpr std::array<std::string_view, n_sections> section_names{
      "parameters", "gradients", "master weights", "adamw m", "adamw v", "parameter windows", "gradient windows",
      "kept activations",
      "logits / dlogits", "workspace", "losses", "token ids", "targets"};
  static constexpr std::array<std::size_t, n_sections> section_elements{
      state.params, state.grads, state.master, state.moments, state.moments, windowed_params ? 2 * window_block : 0,
      windowed_grads ? 2 * window_block : 0, kept_count, logits_count, scratch_count, rows, rows, rows};
  static constexpr std::array<std::size_t, n_sections> section_element_bytes{
      sizeof(T), sizeof(T), sizeof(master_type), sizeof(master_type), sizeof(master_type), sizeof(T), sizeof(T), sizeof(T),
      sizeof(T), sizeof(T), sizeof(loss_type), sizeof(std::int32_t), sizeof(std::int32_t)};
  /// The element type of each section, by name ("bf16", "f32", "i32", ...).
  static constexpr std::array<std::string_view, n_sections> section_dtypes{
      detail::plan_dtype_name<T>(), detail::plan_dtype_name<T>(), detail::plan_dtype_name<master_type>(),
      detail::plan_dtype_name<master_type>(), detail::plan_dtype_name<master_type>(), detail::plan_dtype_name<T>(),
      detail::plan_dtype_name<T>(), detail::plan_dtype_name<T>(),
      detail::plan_dtype_name<T>(), detail::plan_dtype_name<T>(), detail::plan_dtype_name<loss_type>(), "i32", "i32"};
  static constexpr std::array<std::size_t, n_sections> offsets = [] {
    std::array<std::size_t, n_sections> o{};
    std::size_t acc = 0;
    for (std::size_t i = 0; i < n_sections; ++i) {
      o[i] = acc;
      acc = detail::align_up(acc + section_elements[i] * section_element_bytes[i], alignment);
    }
    return o;
  }();
  /// Total bytes of the arena: everything a training step touches besides code and BLAS buffers.
  static constexpr std::size_t bytes_per_rank =
      offsets[n_sections - 1] + detail::align_up(rows * sizeof(std::int32_t), alignment);

  /// Alias of bytes_per_rank: the local arena, with or without a strategy.
  static constexpr std::size_t arena_bytes = bytes_per_rank;

  // ---- the strategy, checked against the model ----
  static constexpr bool strategy_once = detail::count_of<detail::is_strategy, Options...> <= 1;
  static_assert(strategy_once, "weft::plan: strategy<> is given twice. Give one strategy<> option.");
  static constexpr bool precision_once =
      detail::count_of<detail::is_precision, Options...> + (std::is_void_v<typename strategy_type::precision_type::type> ? 0 : 1) <= 1;
  static_assert(precision_once, "weft::plan: precision<> is given twice. Give it once, as a plan option or as a strategy part.");
  static constexpr bool strategy_valid = strategy_type::valid;  // instantiates its checks

  static constexpr std::size_t tp = strategy_type::tp;
  static constexpr std::size_t pp = strategy_type::pp;
  static constexpr std::size_t chunks = strategy_type::chunks;
  static constexpr std::size_t microbatches = strategy_type::microbatches;

  static constexpr bool heads_divisible_by_tp = diag::divisible<Model::heads, tp>;
  static_assert(heads_divisible_by_tp, "weft::plan: heads is not divisible by the tensor-parallel degree. Choose tp that divides heads (each rank computes heads / tp attention heads).");
  // (said once: without grouped-query attention kv_heads is heads)
  static constexpr bool kv_heads_divisible_by_tp =
      detail::kv_heads_of<Model>() == Model::heads || diag::divisible<detail::kv_heads_of<Model>(), tp>;
  static_assert(kv_heads_divisible_by_tp, "weft::plan: kv_heads is not divisible by the tensor-parallel degree. Choose tp that divides kv_heads (each rank holds kv_heads / tp key/value heads).");
  static constexpr bool ffn_divisible_by_tp = diag::divisible<detail::ffn_of<Model>(), tp>;
  static_assert(ffn_divisible_by_tp, "weft::plan: the MLP width (ffn) is not divisible by the tensor-parallel degree. Choose tp that divides ffn, or make ffn<> a multiple of tp.");
  static constexpr bool vocab_divisible_by_tp = diag::divisible<Model::vocab_size, tp>;
  static_assert(vocab_divisible_by_tp, "weft::plan: the vocabulary is not divisible by the tensor-parallel degree. Pad vocab<> to a multiple of tp (Megatron-LM pads to a multiple of 128 * tp).");
  static constexpr bool seq_divisible_by_tp = !strategy_type::sequence_parallel || diag::divisible<S, tp>;
  static_assert(seq_divisible_by_tp, "weft::plan: sequence parallelism splits the sequence, but seq is not divisible by the tensor-parallel degree. Choose seq<S> divisible by tp, or drop sequence_parallel.");

  static constexpr bool blocks_found = pp == 1 || model_partition<Model>::has_blocks;
  static_assert(blocks_found, "weft::plan: pipeline parallelism needs the model's blocks as one repeat<N, Block> inside a top-level sequential. Build the model that way (gpt and llama are), or drop the pipeline.");
  // Uneven splits are rejected rather than balanced: every stage holds depth / pp blocks, so
  // every stage has the same code, the same kept-activation shapes and one memory plan.
  static constexpr bool depth_divisible_by_pp = diag::divisible<Model::depth, pp>;
  static_assert(depth_divisible_by_pp, "weft::plan: depth is not divisible by the pipeline stages. Choose pp that divides depth (every stage holds depth / pp blocks; uneven splits are rejected).");
  static constexpr bool depth_divisible_by_chunks = !depth_divisible_by_pp || diag::divisible<Model::depth, pp * chunks>;
  static_assert(depth_divisible_by_chunks, "weft::plan: interleaving without enough layers: depth is not divisible by pp * V model chunks. Choose interleaved<V> and pp so that pp * V divides depth, or use one_f_one_b.");

  // Each strategy part's own checks of the model (expert_parallel: moe_mlp layers, ep divides
  // their experts), reported by the part's static_asserts at the user's line.
  static constexpr bool parts_fit_model = strategy_type::template fits_model<Model>;
  static_assert(parts_fit_model || true);  // instantiates the checks; the message, if any, is the part's, once

  // ---- plan-only use: every layer needs a tensor-parallel form under tp > 1 ----
  // memory_model and comm_volume price a tp > 1 model through model_partition, which counts a
  // leaf layer by its parameters' roles; the steps shard it with tp_shard. Naming the sharded
  // model here reports a layer tp_shard does not know (tp_form_check's message) at the plan, even
  // when no step is built, instead of pricing a model no step can run.
  static constexpr bool tp_forms_known = [] {
    if constexpr (tp > 1 && strategy_valid && heads_divisible_by_tp && kv_heads_divisible_by_tp &&
                  ffn_divisible_by_tp && vocab_divisible_by_tp && seq_divisible_by_tp) {
      using sharded = typename tp_shard<typename detail::executed_body<model>::type, tp,
                                        strategy_type::sequence_parallel>::type;
      return !std::is_void_v<sharded>;
    } else {
      return true;
    }
  }();
  static_assert(tp_forms_known);  // the message, if any, is tp_shard's (tp_form_check)

  /// True when every check passed (the static_asserts have reported any failure).
  static constexpr bool strategy_fits = strategy_valid && heads_divisible_by_tp && kv_heads_divisible_by_tp &&
                                        ffn_divisible_by_tp && vocab_divisible_by_tp && seq_divisible_by_tp &&
                                        blocks_found && depth_divisible_by_pp && depth_divisible_by_chunks &&
                                        parts_fit_model;

  // ---- one rank of the strategy: memory, communication, FLOPs ----
  /// The per-rank memory plan (memory_model.hpp); meaningful when strategy_fits.
  using memory = memory_model<rank_model, Batch, strategy_type, T, master_type, flash>;
  /// Bytes communicated and FLOPs per step, per rank (comm_volume.hpp).
  using volume = comm_volume<Model, Batch, strategy_type, T, master_type>;
  /// The largest stage's bytes per rank: model states after ZeRO (at the mesh's data-parallel
  /// size, or 1 when it is dynamic: an upper bound), ZeRO's working buffers, activations and
  /// the data-parallel collectives' temporaries (stage_memory::comm_bytes).
  /// 0 without a strategy option (give strategy<mesh<axis<"dp">>> to price a single rank).
  static constexpr std::size_t memory_per_rank = [] {
    if constexpr (has_strategy && strategy_fits) return memory::bytes_per_rank;
    else return std::size_t{0};
  }();

  static constexpr std::size_t budget = detail::find_budget<Options...>();
  static constexpr bool within_budget = diag::at_most<(has_strategy ? 0 : bytes_per_rank), budget>;
  static_assert(within_budget, "weft::plan: the memory plan exceeds the declared memory_budget. Reduce the micro-batch, the sequence or the model, or raise memory_budget<>.");
  static constexpr bool rank_within_budget = diag::at_most<(has_strategy ? memory_per_rank : 0), budget>;
  static_assert(rank_within_budget, "weft::plan: the per-rank memory plan exceeds the declared memory_budget. Shard more (zero<>, tensor_parallel, pipeline), recompute activations, or shrink the micro-batch; or raise memory_budget<>.");

  static constexpr std::size_t bytes_of(section_id s) { return section_elements[s] * section_element_bytes[s]; }
  static constexpr plan_section section(section_id s) { return {section_names[s], offsets[s], bytes_of(s), section_elements[s]}; }

  /// Byte offset of a parameter (by dotted path) inside the arena; a compile-time constant.
  static constexpr std::size_t param_offset_bytes(std::string_view path) {
    const std::size_t e = rank_model::find_param(path);
    const std::size_t hole = param_count - resident_param_count, hole_end = window_begin + hole;
    if (e == npos_param || (e >= window_begin && e < hole_end)) return npos_param;  // ZeRO-3: not resident
    return offsets[params] + (e >= hole_end ? e - hole : e) * sizeof(T);
  }

  // ---- FLOPs (PaLM's count: 6·N per token for the matmuls, 12·L·H·Q·T for attention; T is the
  // sliding window where the model has a shorter one, per layer: Gemma 3's global layers count
  // the whole sequence, its local ones the window — detail::attention_keys_of) ----
  static constexpr std::size_t lookup_params = Model::lookup_param_count;  // embedding rows read, not multiplied
  static constexpr std::size_t flops_per_token =
      6 * (global_param_count - lookup_params) +
      12 * Model::heads * detail::head_dim_of<Model>() * detail::attention_keys_of<Model, S>();
  static constexpr std::size_t flops_per_step_micro = flops_per_token * rows;

  /// Every parameter with its name, offset and shape (run time: names are strings).
  static std::vector<param_info> parameters(std::size_t depth = Model::depth) {
    std::vector<param_info> v;
    rank_model::visit_params("", 0, init_context{depth}, [&](const param_info& p) { v.push_back(p); });
    return v;
  }

  /// Prints the per-rank table: counts, bytes per category, total.
  static void report(std::FILE* out = stdout) {
    if constexpr (mixed_precision)
      std::fprintf(out, "weft plan: %zu parameters, micro-batch %zu x %zu tokens, %.*s with %.*s master weights\n",
                   param_count, B, S, static_cast<int>(section_dtypes[params].size()), section_dtypes[params].data(),
                   static_cast<int>(section_dtypes[master].size()), section_dtypes[master].data());
    else
      std::fprintf(out, "weft plan: %zu parameters, micro-batch %zu x %zu tokens, %s\n", param_count, B, S,
                   sizeof(T) == 8 ? "f64" : sizeof(T) == 4 ? "f32" : "16-bit");
    std::fprintf(out, "  %-20s %6s %14s %14s %14s\n", "section", "dtype", "offset (B)", "elements", "MiB");
    for (std::size_t i = 0; i < n_sections; ++i) {
      if (section_elements[i] == 0) continue;  // the master copy of a single-type plan
      std::fprintf(out, "  %-20.*s %6.*s %14zu %14zu %14.2f\n", static_cast<int>(section_names[i].size()),
                   section_names[i].data(), static_cast<int>(section_dtypes[i].size()), section_dtypes[i].data(),
                   offsets[i], section_elements[i], static_cast<double>(bytes_of(static_cast<section_id>(i))) / (1 << 20));
    }
    std::fprintf(out, "  %-20s %6s %14s %14s %14.2f\n", "total", "", "", "", static_cast<double>(bytes_per_rank) / (1 << 20));
    std::fprintf(out, "  model states (params+grads+master+adamw) %.2f MiB, activations+workspace %.2f MiB\n",
                 static_cast<double>(bytes_of(params) + bytes_of(grads) + bytes_of(master) + bytes_of(adam_m) +
                                     bytes_of(adam_v)) / (1 << 20),
                 static_cast<double>((kept_count + logits_count + scratch_count) * sizeof(T)) / (1 << 20));
    if constexpr (has_strategy && strategy_fits) report_strategy(out);
  }

  /// Prints the per-rank memory plan, communication and FLOPs of the strategy; `dp` is the
  /// data-parallel degree to price (the mesh's when static; 1, an upper bound, by default).
  static void report_strategy(std::FILE* out = stdout, std::size_t dp = memory::assumed_dp) {
    using S = strategy_type;
    const bool large = memory::bytes_per_rank >= (std::size_t{1} << 30);
    const double gib = large ? 1024.0 * 1024.0 * 1024.0 : 1024.0 * 1024.0;  // GiB, or MiB for small plans
    const char* unit = large ? "GiB" : "MiB";
    constexpr const char* recompute_names[] = {"none", "selective", "full"};
    constexpr const char* schedule_names[] = {"gpipe", "1f1b", "interleaved"};
    std::fprintf(out, "weft strategy: tp %zu%s, pp %zu (%s, %zu micro-batches, %zu chunks), dp %zu%s, zero %zu, recompute %s\n",
                 tp, S::sequence_parallel ? " + sequence parallel" : "", pp,
                 schedule_names[static_cast<int>(memory::kind)], microbatches, chunks, dp,
                 S::dp == dynamic ? " (dynamic; priced at this size)" : "", S::zero_stage,
                 recompute_names[static_cast<int>(S::recompute_policy)]);
    std::fprintf(out, "  per rank, %s: %5s %14s %8s %8s %8s %8s %8s %6s %10s %8s %8s %8s\n", unit, "stage", "params", "param",
                 "grad", "optim", "working", "comm", "sets", "layers", "embed", "output", "total");
    for (std::size_t s = 0; s < pp; ++s) {
      const stage_memory m = memory::stage(s, dp);
      std::fprintf(out, "                 %5zu %14zu %8.2f %8.2f %8.2f %8.2f %8.2f %6zu %10.2f %8.2f %8.2f %8.2f\n", s, m.params,
                   m.param_bytes / gib, m.grad_bytes / gib, m.optimizer_bytes / gib, m.working_bytes / gib,
                   m.comm_bytes / gib, m.activation_sets,
                   m.activation_bytes / gib, m.embedding_bytes / gib, m.output_bytes / gib, m.total() / gib);
    }
    std::fprintf(out, "  per rank and step, %s sent: %5s %10s %10s %10s %12s %12s\n", unit, "stage", "dp", "tp", "pp",
                 "model TFLOP", "hw TFLOP");
    for (std::size_t s = 0; s < pp; ++s) {
      const step_volume v = volume::stage(s, dp);
      std::fprintf(out, "                               %5zu %10.3f %10.3f %10.3f %12.2f %12.2f\n", s, v.dp_bytes / gib,
                   v.tp_bytes / gib, v.pp_bytes / gib, v.model_flops / 1e12, v.hardware_flops / 1e12);
    }
    if constexpr (ep > 1)
      std::fprintf(out, "  expert parallel: ep %zu (%zu of %zu parameters on this rank), all-to-alls %.3f %s sent per rank and step\n",
                   ep, param_count, global_param_count, volume::stage(0, dp).ep_bytes / gib, unit);
  }
};

/// The plan a local step runs under data_parallel_step<..., zero<Zero>>: `Plan` itself, or with
/// sharded_optimizer_state added when Zero >= 1 and Plan's arena would hold the optimizer state
/// (a plan without a zero<> strategy part), so that the dp step's shards are the only copy.
template <class Plan, std::size_t Zero>
struct zero_local_plan {
  using type = Plan;
};
template <class Model, class Batch, class... Options>
  requires(plan<Model, Batch, Options...>::optimizer_state_in_arena)
struct zero_local_plan<plan<Model, Batch, Options...>, 1> {
  using type = plan<Model, Batch, Options..., sharded_optimizer_state>;
};
template <class Model, class Batch, class... Options>
  requires(plan<Model, Batch, Options...>::optimizer_state_in_arena)
struct zero_local_plan<plan<Model, Batch, Options...>, 2> {
  using type = plan<Model, Batch, Options..., sharded_optimizer_state, sharded_gradients>;
};
template <class Model, class Batch, class... Options>
  requires(plan<Model, Batch, Options...>::optimizer_state_in_arena)
struct zero_local_plan<plan<Model, Batch, Options...>, 3> {
  using type = plan<Model, Batch, Options..., sharded_optimizer_state, sharded_parameters>;
};
template <class Plan, std::size_t Zero>
using zero_local_plan_t = typename zero_local_plan<Plan, Zero>::type;

}  // namespace weft
