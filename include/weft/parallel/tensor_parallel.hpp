#pragma once
// ---- tensor parallelism: a model's shard on one rank, its plan, and its shard maps ----
// tp_shard_t<Layer, TP, SP> maps every layer type to the layer one of TP ranks runs:
//   compositions (named, sequential, residual, repeat)  their children mapped
//   sequential<column linear, ..., row linear>          a tensor-parallel region (attention,
//                                                       MLPs); under SP a tp_region
//   linear<In, Out, column>                             column_parallel_linear (Out/TP outputs)
//   linear<In, Out, row>                                row_parallel_linear (In/TP inputs)
//   causal_attention<H, KVH, D, Pos, W>                 causal_attention<H/TP, KVH/TP, D, Pos, W>
//   local_global_attention<P, Local, Global>            both forms mapped (Gemma 3)
//   gelu<F>, swiglu<F>, geglu<F>                        gelu<F/TP>, swiglu<F/TP>, geglu<F/TP>
//   token_embedding<V, C>, lm_head<V, C, Tie>           vocabulary-parallel forms
//   positional_embedding<Ctx, C>                        itself (SP: on the sequence slice)
//   layernorm, rmsnorm, linear<..., replicated>         themselves (SP: on the sequence slice)
//   moe_mlp, ep_moe_mlp                                 themselves: replicated, every rank routes
//                                                       the same rows (SP: the whole sequence)
// tp_model<Model, TP, SP> is a whole language model mapped so; tensor_parallel_plan is the
// memory plan of one rank. Shard maps (shard_indices) say where each element of a rank's
// parameter sits in the single-process parameter of the same name: initialisation,
// gathering for checkpoints and comparisons use them.
#include "weft/core/diagnostics.hpp"                // diag::divisible, diag::at_least
#include "weft/model/aux_loss.hpp"                  // aux_losses (the MoE's weight under SP)
#include "weft/model/causal_attention.hpp"          // causal_attention
#include "weft/model/gelu.hpp"                      // gelu
#include "weft/model/layer.hpp"                     // layer, language_model, param_info, tp_group
#include "weft/model/layer_check.hpp"               // detail::invalid_layer
#include "weft/model/layernorm.hpp"                 // layernorm
#include "weft/model/linear.hpp"                    // linear, packed
#include "weft/model/local_global_attention.hpp"    // local_global_attention
#include "weft/model/lm_head.hpp"                   // lm_head
#include "weft/model/named.hpp"                     // named
#include "weft/model/bias_free_layernorm.hpp"       // bias_free_layernorm
#include "weft/model/parallel_branches.hpp"         // branch_sum
#include "weft/model/qk_norm.hpp"                   // qk_norm
#include "weft/model/positional_embedding.hpp"      // positional_embedding
#include "weft/model/flash_attention.hpp"           // flash_attention_core
#include "weft/model/recompute.hpp"                 // recomputed, selective_attention
#include "weft/model/repeat.hpp"                    // repeat
#include "weft/model/residual.hpp"                  // residual
#include "weft/model/rmsnorm.hpp"                   // rmsnorm
#include "weft/model/sequential.hpp"                // sequential
#include "weft/model/embedding_scale.hpp"           // embedding_scale
#include "weft/model/swiglu.hpp"                    // gated_unit: swiglu, geglu
#include "weft/model/tensor_parallel_layers.hpp"    // column/row_parallel_linear, vocab_parallel_*, tp_region
#include "weft/model/token_embedding.hpp"           // token_embedding
#include "weft/ops/accumulate.hpp"                  // accumulate
#include "weft/ops/copy.hpp"                        // copy
#include "weft/ops/fill.hpp"                        // zero
#include "weft/parallel/partition.hpp"              // model_partition (the block stack's windows)
#include "weft/parallel/pipeline_stage.hpp"         // carried_params
#include "weft/parallel/state_sections.hpp"         // local_state_sections

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace weft {

template <std::size_t C, std::size_t Experts, std::size_t TopK, std::size_t Ffn, class... Options>
struct moe_mlp;  // model/moe.hpp
template <class Moe, std::size_t EP>
struct ep_moe_mlp;  // model/ep_moe_mlp.hpp

// ---- the transform ----

namespace detail {
// The two messages about the shape of a model, each in one place; the compiler's notes name
// the layer `L` and whether the walk found it inside a region.
template <class L, bool Ok>
struct tp_form_check {
  static_assert(Ok, "weft::tp_shard: no tensor-parallel form is known for this layer (see tp_form_check<Layer, false>). Build the model from weft's layers (a vocabulary projection is lm_head<>, not a linear with role::vocab), or specialise weft::tp_shard<Layer, TP, SP, InRegion> for it.");
  static constexpr bool ok = true;  // the assertion above is the one diagnostic; users assert `ok` to instantiate it
};
template <class L, bool InRegion, bool Ok>
struct tp_placement_check {
  static_assert(Ok, "weft::tp_shard: a layer is on the wrong side of a tensor-parallel region (see tp_placement_check<Layer, in_region, false>). A column-parallel linear opens a region and a row-parallel linear closes it, as first and last layer of one sequential (as in attention<> and the MLPs); between them go causal_attention, gelu and swiglu; embeddings, norms, positions, heads and replicated linears go outside; regions do not nest. Arrange the layers so.");
  static constexpr bool ok = true;  // as tp_form_check::ok
};
template <class L, bool InRegion>
inline constexpr bool tp_inside = tp_placement_check<L, InRegion, InRegion>::ok;
template <class L, bool InRegion>
inline constexpr bool tp_outside = tp_placement_check<L, InRegion, !InRegion>::ok;

// named<Name, L>, recognised without deducing the fixed_string (nvcc cannot).
template <class L>
concept has_name_and_inner = requires {
  L::name;
  typename L::inner;
};
template <class L>
concept named_layer = has_name_and_inner<L> && requires { typename L::weft_named_tag; };

// How a layer, seen through named<>, is cut: column and row linears open and close regions.
template <class L>
struct tp_cut {
  static constexpr role value = role::replicated;
};
template <class L>
  requires named_layer<L>
struct tp_cut<L> : tp_cut<typename L::inner> {};
template <std::size_t In, std::size_t Out, role Role, bool Bias, class Init, export_layout Export, class Packing>
struct tp_cut<linear<In, Out, Role, Bias, Init, Export, Packing>> {
  static constexpr role value = Role;
};
template <class... Ls>
inline constexpr bool opens_tp_region =
    tp_cut<std::tuple_element_t<0, std::tuple<Ls...>>>::value == role::column &&
    tp_cut<std::tuple_element_t<sizeof...(Ls) - 1, std::tuple<Ls...>>>::value == role::row;
}  // namespace detail

/// The layer one of `TP` tensor-parallel ranks runs in place of `L`; `SP`: with sequence
/// parallelism; `InRegion`: between a column- and a row-parallel linear (set by the walk).
/// Specialise it for a layer type of your own.
template <class L, std::size_t TP, bool SP = false, bool InRegion = false>
struct tp_shard {
  static_assert(detail::tp_form_check<L, false>::ok);
  // A stand-in with L's widths that compositions do not check again (layer_check.hpp), so the
  // message above is the only one.
  using type = detail::invalid_layer<L>;
};
template <class L, std::size_t TP, bool SP = false, bool InRegion = false>
using tp_shard_t = typename tp_shard<L, TP, SP, InRegion>::type;

// ---- compositions ----
template <class L, std::size_t TP, bool SP, bool R>
  requires detail::named_layer<L>
struct tp_shard<L, TP, SP, R> {
  using type = named<L::name, tp_shard_t<typename L::inner, TP, SP, R>>;
};
template <class... Ls, std::size_t TP, bool SP, bool R>
struct tp_shard<sequential<Ls...>, TP, SP, R> {
  static constexpr bool region = detail::opens_tp_region<Ls...>;
  static_assert(detail::tp_placement_check<sequential<Ls...>, R, !(region && R)>::ok);  // regions do not nest
  using mapped = sequential<tp_shard_t<Ls, TP, SP, R || region>...>;
  using type = std::conditional_t<region && SP && !R, tp_region<mapped, TP>, mapped>;
};
template <class Inner, std::size_t TP, bool SP, bool R>
struct tp_shard<residual<Inner>, TP, SP, R> {
  using type = residual<tp_shard_t<Inner, TP, SP, R>>;
};
// Parallel branches: each branch mapped on its own (an attention or MLP branch is a region of
// its own, closed by its own reduction), so the sum is of whole rows.
template <class... Fs, std::size_t TP, bool SP, bool R>
struct tp_shard<branch_sum<Fs...>, TP, SP, R> {
  using type = branch_sum<tp_shard_t<Fs, TP, SP, R>...>;
};
template <std::size_t N, class Block, std::size_t First, std::size_t TP, bool SP, bool R>
struct tp_shard<repeat<N, Block, First>, TP, SP, R> {  // First: a pipeline stage's first block
  using type = repeat<N, tp_shard_t<Block, TP, SP, R>, First>;
};
// Recomputation (parallel/recompute.hpp) is kept through the shard: a recomputed stack of blocks
// recomputes its shards' activations (their collectives run again, in the same order on every
// rank), and selective attention shards as attention does.
template <std::size_t N, class Block, std::size_t First, std::size_t TP, bool SP, bool R>
struct tp_shard<recomputed<repeat<N, Block, First>>, TP, SP, R> {
  using type = recomputed<tp_shard_t<repeat<N, Block, First>, TP, SP, R>>;
};

// A pipeline stage's carried copy of a tied embedding (pipeline_stage.hpp): both parts mapped,
// so tp × pp shards the last stage's copy exactly like the first stage's original.
template <class Carried, class Inner, std::size_t TP, bool SP, bool R>
struct tp_shard<carried_params<Carried, Inner>, TP, SP, R> {
  using type = carried_params<tp_shard_t<Carried, TP, SP, R>, tp_shard_t<Inner, TP, SP, R>>;
};

// ---- leaves ----
template <std::size_t In, std::size_t Out, role Role, bool Bias, class Init, export_layout Export, class Packing,
          std::size_t TP, bool SP, bool R>
struct tp_shard<linear<In, Out, Role, Bias, Init, Export, Packing>, TP, SP, R> {
  using L = linear<In, Out, Role, Bias, Init, Export, Packing>;
  static_assert(detail::tp_form_check<L, Role != role::vocab>::ok);
  static_assert(detail::tp_placement_check<L, R, (Role == role::replicated) != R>::ok);  // column/row inside, replicated outside
  using type = std::conditional_t<
      Role == role::column, column_parallel_linear<In, Out, TP, SP, Bias, Init, Export, Packing>,
      std::conditional_t<Role == role::row, row_parallel_linear<In, Out, TP, SP, Bias, Init, Export>, L>>;
};
template <std::size_t H, std::size_t KVH, std::size_t D, class Pos, std::size_t W, std::size_t TP, bool SP, bool R>
struct tp_shard<causal_attention<H, KVH, D, Pos, W>, TP, SP, R> {
  static constexpr bool heads_divisible = diag::divisible<H, TP>;
  static_assert(heads_divisible, "weft::tensor_parallel: heads is not divisible by tp. Choose a tp that divides heads.");
  static constexpr bool kv_heads_divisible = diag::divisible<KVH, TP>;
  static_assert(kv_heads_divisible, "weft::tensor_parallel: kv_heads is not divisible by tp, so the key/value heads cannot be split. Choose a tp that divides kv_heads.");
  static_assert(detail::tp_inside<causal_attention<H, KVH, D, Pos, W>, R>);
  using type = causal_attention<(heads_divisible ? H / TP : 1), (kv_heads_divisible ? KVH / TP : 1), D, Pos, W>;
};
template <std::size_t H, std::size_t KVH, std::size_t D, class Pos, std::size_t W, std::size_t TP, bool SP, bool R>
struct tp_shard<selective_attention<H, KVH, D, Pos, W>, TP, SP, R> {
  using checked = tp_shard_t<causal_attention<H, KVH, D, Pos, W>, TP, SP, R>;  // the same checks as attention's
  using type = selective_attention<(H % TP == 0 ? H / TP : 1), (KVH % TP == 0 ? KVH / TP : 1), D, Pos, W>;
};
template <std::size_t H, std::size_t KVH, std::size_t D, class Pos, std::size_t W, std::size_t TP, bool SP, bool R>
struct tp_shard<flash_attention_core<H, KVH, D, Pos, W>, TP, SP, R> {
  using checked = tp_shard_t<causal_attention<H, KVH, D, Pos, W>, TP, SP, R>;  // the same checks as attention's
  using type = flash_attention_core<(H % TP == 0 ? H / TP : 1), (KVH % TP == 0 ? KVH / TP : 1), D, Pos, W>;
};
template <std::size_t F, gelu_form Form, std::size_t TP, bool SP, bool R>
struct tp_shard<gelu<F, Form>, TP, SP, R> {
  static constexpr bool ffn_divisible = diag::divisible<F, (R ? TP : 1)>;
  static_assert(ffn_divisible, "weft::tensor_parallel: the MLP's hidden width (ffn) is not divisible by tp. Choose a tp that divides ffn.");
  using type = std::conditional_t<R, gelu<(ffn_divisible ? F / TP : 1), Form>, gelu<F, Form>>;  // outside a region: elementwise, replicated
};
template <std::size_t F, gate_kind Kind, std::size_t TP, bool SP, bool R>
struct tp_shard<gated_unit<F, Kind>, TP, SP, R> {  // swiglu, geglu
  static constexpr bool ffn_divisible = diag::divisible<F, TP>;
  static_assert(ffn_divisible, "weft::tensor_parallel: the MLP's hidden width (ffn) is not divisible by tp. Choose a tp that divides ffn.");
  static_assert(detail::tp_inside<gated_unit<F, Kind>, R>);
  using type = gated_unit<(ffn_divisible ? F / TP : 1), Kind>;
};
template <std::size_t V, std::size_t C, std::size_t TP, bool SP, bool R>
struct tp_shard<token_embedding<V, C>, TP, SP, R> {
  static_assert(detail::tp_outside<token_embedding<V, C>, R>);
  using type = vocab_parallel_embedding<V, C, TP, SP>;
};
template <std::size_t V, std::size_t C, class Tie, std::size_t TP, bool SP, bool R>
struct tp_shard<lm_head<V, C, Tie>, TP, SP, R> {
  static_assert(detail::tp_outside<lm_head<V, C, Tie>, R>);
  using type = vocab_parallel_lm_head<V, C, Tie, TP, SP>;
};
// Replicated layers work on whole rows: outside regions only (under SP on the sequence slice).
template <std::size_t Ctx, std::size_t C, std::size_t TP, bool SP, bool R>
struct tp_shard<positional_embedding<Ctx, C>, TP, SP, R> {
  static_assert(detail::tp_outside<positional_embedding<Ctx, C>, R>);
  using type = std::conditional_t<SP, sequence_parallel_positional<Ctx, C, TP>, positional_embedding<Ctx, C>>;
};
template <std::size_t C, std::size_t TP, bool SP, bool R>
struct tp_shard<embedding_scale<C>, TP, SP, R> {
  static_assert(detail::tp_outside<embedding_scale<C>, R>);
  using type = embedding_scale<C>;
};
template <std::size_t C, double Eps, std::size_t TP, bool SP, bool R>
struct tp_shard<layernorm<C, Eps>, TP, SP, R> {
  static_assert(detail::tp_outside<layernorm<C, Eps>, R>);
  using type = layernorm<C, Eps>;
};
// QK-norm normalises the rank's heads inside the region; its gains are whole on every rank and
// their gradients summed over the group (model/qk_norm.hpp). Heads not divisible by tp are
// reported by the causal_attention beside it; the stand-in keeps the region chaining.
template <std::size_t H, std::size_t KVH, std::size_t D, double Eps, bool U, std::size_t TP, bool SP, bool R>
struct tp_shard<qk_norm<H, KVH, D, Eps, U>, TP, SP, R> {
  static_assert(detail::tp_inside<qk_norm<H, KVH, D, Eps, U>, R>);
  using type = tensor_parallel_qk_norm<(diag::divisible<H, TP> ? H / TP : H), (diag::divisible<KVH, TP> ? KVH / TP : KVH),
                                       D, TP, SP, Eps, U>;
};
template <std::size_t C, double Eps, std::size_t TP, bool SP, bool R>
struct tp_shard<bias_free_layernorm<C, Eps>, TP, SP, R> {
  static_assert(detail::tp_outside<bias_free_layernorm<C, Eps>, R>);
  using type = bias_free_layernorm<C, Eps>;
};
template <std::size_t C, double Eps, bool U, std::size_t TP, bool SP, bool R>
struct tp_shard<rmsnorm<C, Eps, U>, TP, SP, R> {  // U: Gemma's x̂·(1 + w)
  static_assert(detail::tp_outside<rmsnorm<C, Eps, U>, R>);
  using type = rmsnorm<C, Eps, U>;
};
// Gemma 3's attention core: its local and global forms mapped alike (the rank's heads).
template <std::size_t P, class Local, class Global, std::size_t TP, bool SP, bool R>
struct tp_shard<local_global_attention<P, Local, Global>, TP, SP, R> {
  using type = local_global_attention<P, tp_shard_t<Local, TP, SP, R>, tp_shard_t<Global, TP, SP, R>>;
};

// A mixture of experts runs whole on every rank of the group (its experts, or under expert
// parallelism its E/ep experts, replicated), its parameters listed as replicated so that the
// step counts them once in the norm and the shard maps take them whole. The expert group of an
// ep_moe_mlp is then the ranks with the same tp index (distributed_step).
//   without SP  between regions the rows are the same on every tp rank: every rank computes the
//               same output and the same gradients, as a norm does;
//   with SP     each rank holds a sequence slice, but routing is over the micro-batch (the
//               load-balancing loss is a product of means over its tokens), so the layer runs on
//               the whole sequence: the slices are all-gathered, every rank computes the whole
//               output and keeps its slice; backward runs with this rank's output gradient
//               (zero elsewhere) and the auxiliary loss weighted 1/tp, so that the parameter
//               gradients summed over the group (the step's replicated sum under SP) and the
//               input gradients reduce-scattered to the slices are the whole micro-batch's.
namespace detail {
template <class L>
struct tp_replicated_layer : L {
  template <class Fn>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, Fn&& f) {
    L::visit_params(prefix, base, ic, [&](param_info p) {
      p.tp_role = role::replicated;
      f(p);
    });
  }
};

// `L` on the whole sequence under sequence parallelism (see above). Frame seq: the slice SL.
// kept: the gathered input (B, SL·TP, C) | L's kept for the whole sequence
// scratch: whole output or output gradient (B, SL·TP, C) | whole input gradient (B, SL·TP, C) |
//          collective temporary (B, SL·TP, C) | slice (B, SL, C) | L's scratch for the whole sequence
template <class L, std::size_t TP>
struct sp_replicated_layer : tp_replicated_layer<L> {
  static constexpr std::size_t C = L::in_width;
  static_assert(L::in_width == L::out_width);
  template <std::size_t B, std::size_t SL>
  static constexpr std::size_t kept_count = B * SL * TP * C + L::template kept_count<B, SL * TP>;
  template <std::size_t B, std::size_t SL>
  static constexpr std::size_t scratch_count = 3 * B * SL * TP * C + B * SL * C + L::template scratch_count<B, SL * TP>;

  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    constexpr std::size_t B = F::batch, SL = F::seq, N = B * SL * TP * C;
    tp_group& g = tp_of<TP>(f, "moe_mlp (sequence parallel)");
    auto* x = f.kept;     // (batch, seq, C)
    auto* y = f.scratch;  // (batch, seq, C)
    sp_all_gather<TP, B, SL, C>(f.ctx, g, in, x, f.scratch + 2 * N);
    L::forward(whole(f), x, y);
    const std::size_t r = static_cast<std::size_t>(g.rank());
    for (std::size_t b = 0; b < B; ++b)  // this rank's (seq/tp, C) run of each sequence
      ops::copy(f.ctx, view<SL, C>(f, out + b * SL * C), view<SL, C>(f, y + (b * TP + r) * SL * C));
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    (void)in;  // the gathered input is kept
    constexpr std::size_t B = F::batch, SL = F::seq, N = B * SL * TP * C;
    tp_group& g = tp_of<TP>(f, "moe_mlp (sequence parallel)");
    auto* dy = f.scratch;      // (batch, seq, C): this rank's slice of the output gradient, zero elsewhere
    auto* dx = f.scratch + N;  // (batch, seq, C)
    ops::zero(f.ctx, view<B * SL * TP, C>(f, dy));
    ops::zero(f.ctx, view<B * SL * TP, C>(f, dx));
    const std::size_t r = static_cast<std::size_t>(g.rank());
    for (std::size_t b = 0; b < B; ++b)
      ops::copy(f.ctx, view<SL, C>(f, dy + (b * TP + r) * SL * C), view<SL, C>(f, dout + b * SL * C));
    auto& meter = aux_losses();
    const double saved = meter.gradient_scale;
    meter.gradient_scale = saved / static_cast<double>(TP);  // every rank adds it; the group's sum counts it once
    try {
      L::backward(whole(f), f.kept, dy, dx);
    } catch (...) {
      meter.gradient_scale = saved;
      throw;
    }
    meter.gradient_scale = saved;
    if (din == nullptr) return;
    auto* slice = f.scratch + 3 * N;  // (batch, seq/tp, C)
    sp_reduce_scatter<TP, B, SL, C>(f.ctx, g, dx, slice, f.scratch + 2 * N);
    ops::accumulate(f.ctx, view<B * SL, C>(f, din), view<B * SL, C>(f, slice));
  }

 private:
  template <class F>
  static auto whole(const F& f) {
    constexpr std::size_t N = F::batch * F::seq * TP * C;
    auto w = f.template resequenced<F::seq * TP>();
    w.kept = f.kept + N;
    w.scratch = f.scratch + 3 * N + F::batch * F::seq * C;
    return w;
  }
};
}  // namespace detail
template <std::size_t C, std::size_t E, std::size_t K, std::size_t F, class... Os, std::size_t TP, bool SP, bool R>
struct tp_shard<moe_mlp<C, E, K, F, Os...>, TP, SP, R> {
  static_assert(detail::tp_outside<moe_mlp<C, E, K, F, Os...>, R>);
  using type = std::conditional_t<SP, detail::sp_replicated_layer<moe_mlp<C, E, K, F, Os...>, TP>,
                                  detail::tp_replicated_layer<moe_mlp<C, E, K, F, Os...>>>;
};
template <class Moe, std::size_t EP, std::size_t TP, bool SP, bool R>
struct tp_shard<ep_moe_mlp<Moe, EP>, TP, SP, R> {
  static_assert(detail::tp_outside<ep_moe_mlp<Moe, EP>, R>);
  using type = std::conditional_t<SP, detail::sp_replicated_layer<ep_moe_mlp<Moe, EP>, TP>,
                                  detail::tp_replicated_layer<ep_moe_mlp<Moe, EP>>>;
};

// ---- whole models ----

namespace detail {
// The sequential a model type derives from (gpt<Cfg> and llama<Cfg> are sequentials).
template <class... Ls>
sequential<Ls...> sequential_base(const sequential<Ls...>*);
template <class M>
using sequential_base_t = decltype(sequential_base(static_cast<const M*>(nullptr)));
}  // namespace detail

/// The model one of `TP` tensor-parallel ranks runs (`SP`: with sequence parallelism). Its
/// parameters keep the single-process names, with each rank's shard shapes; its logits are
/// the rank's vocabulary slice, (batch, seq, vocab/tp).
namespace detail {
// The layers a model runs: a recompute_model's body (recomputed blocks), else its sequential.
template <class Model>
struct executed_body {
  using type = sequential_base_t<Model>;
};
template <class Model>
  requires requires { typename Model::body; typename Model::base_model; }
struct executed_body<Model> {
  using type = typename Model::body;
};
}  // namespace detail

template <language_model Model, std::size_t TP, bool SP = false>
struct tp_model : tp_shard_t<typename detail::executed_body<Model>::type, TP, SP> {
  using global_model = Model;
  static constexpr std::size_t tp = TP;
  static constexpr bool sequence_parallel = SP;
  static constexpr std::size_t vocab_size = Model::vocab_size;  ///< the whole vocabulary
  static constexpr std::size_t vocab_local = Model::vocab_size / TP;
  static constexpr std::size_t context_length = Model::context_length;
  static constexpr std::size_t depth = Model::depth;
  static constexpr std::size_t width = Model::width;
  static constexpr std::size_t heads = Model::heads;
};

// ---- the plan of one rank ----

namespace detail {
// The tensor-parallel degree and sequence parallelism of a plan's strategy<> (1 and false
// without one).
template <class Plan>
constexpr std::size_t strategy_tp() {
  if constexpr (requires { Plan::strategy_type::tp; }) return Plan::strategy_type::tp;
  else return 1;
}
template <class Plan>
constexpr bool strategy_sp() {
  if constexpr (requires { Plan::strategy_type::sequence_parallel; }) return Plan::strategy_type::sequence_parallel;
  else return false;
}
// Whether the plan's local arenas hold the optimizer state (false under ZeRO >= 1).
template <class Plan>
constexpr bool optimizer_in_arena() {
  if constexpr (requires { Plan::optimizer_state_in_arena; }) return Plan::optimizer_state_in_arena;
  else return true;
}
template <class Plan>
constexpr bool has_strategy() {
  if constexpr (requires { Plan::has_strategy; }) return Plan::has_strategy;
  else return false;
}
// Whether the plan asks for ZeRO-3's parameter windows and ZeRO-2/3's gradient windows
// (plan<>::wants_windowed_params, wants_windowed_grads; false for a plan without them).
template <class Plan>
constexpr bool wants_windowed_params() {
  if constexpr (requires { Plan::wants_windowed_params; }) return Plan::wants_windowed_params;
  else return false;
}
template <class Plan>
constexpr bool wants_windowed_grads() {
  if constexpr (requires { Plan::wants_windowed_grads; }) return Plan::wants_windowed_grads;
  else return false;
}
// Whether a plan's strategy has one pipeline stage and one expert rank (1 and 1 without one).
template <class Plan>
constexpr bool single_stage_dense() {
  std::size_t pp = 1, ep = 1;
  if constexpr (requires { Plan::pp; }) pp = Plan::pp;
  if constexpr (requires { Plan::ep; }) ep = Plan::ep;
  return pp == 1 && ep == 1;
}
// TP and SP as given, and as the strategy says (printed when they differ).
template <std::size_t TP, bool SP, std::size_t StrategyTp, bool StrategySp, bool HasStrategy>
inline constexpr bool tp_agrees_with_strategy = !HasStrategy || (TP == StrategyTp && SP == StrategySp);
}  // namespace detail

/// The memory plan of one tensor-parallel rank for the single-process plan `Plan`: the same
/// sections as plan<> (parameters ... targets) sized for the rank's shard, plus the loss's
/// workspace. Tokens and targets are the whole micro-batch; the logits (batch, seq, vocab/tp).
/// TP and SP default to the plan's strategy<> (tensor_parallel<"tp", sequence_parallel>).
template <class Plan, std::size_t TP = detail::strategy_tp<Plan>(), bool SP = detail::strategy_sp<Plan>()>
struct tensor_parallel_plan {
  using global_plan = Plan;
  using value_type = typename Plan::value_type;
  using T = value_type;
  static constexpr std::size_t tp = TP;
  static constexpr bool sequence_parallel = SP;
  static constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows;

  // ---- validation at the user's line ----
  static constexpr bool agrees_with_strategy =
      detail::tp_agrees_with_strategy<TP, SP, detail::strategy_tp<Plan>(), detail::strategy_sp<Plan>(),
                                      detail::has_strategy<Plan>()>;
  static_assert(agrees_with_strategy, "weft::tensor_parallel_plan: TP or SP differ from the plan's strategy<>. Leave them out to take the strategy's tensor_parallel<> part, or make them agree.");
  static constexpr bool tp_positive = diag::at_least<TP, 1>;
  static_assert(tp_positive, "weft::tensor_parallel: tp is 0. Use a tensor-parallel degree of at least 1.");
  static constexpr bool seq_divisible = !SP || diag::divisible<S, (TP > 0 ? TP : 1)>;
  static_assert(seq_divisible, "weft::tensor_parallel: with sequence_parallel, seq<S> must be divisible by tp (each rank keeps S/tp positions). Choose seq<S> divisible by tp, or drop sequence_parallel.");

  using model = tp_model<typename Plan::model, TP, SP>;
  /// Tokens per sequence of the model's frame: this rank's slice under SP.
  static constexpr std::size_t local_seq = SP ? S / TP : S;
  static constexpr std::size_t vocab_local = model::vocab_local;

  // ---- element counts ----
  static constexpr std::size_t param_count = model::param_count;
  static constexpr std::size_t kept_count = model::template kept_count<B, local_seq>;
  static constexpr std::size_t scratch_count = model::template scratch_count<B, local_seq>;
  static constexpr std::size_t logits_count = rows * vocab_local;
  static constexpr std::size_t loss_work_count = vocab_parallel_cross_entropy_work<rows>;
  /// Master weights and AdamW moments: T, or the plan's wider type under mixed precision
  /// (precision<bf16, f32>: an f32 master of the shard and f32 moments, as plan<>'s arena).
  using master_type = typename Plan::master_type;
  static constexpr bool mixed_precision = !std::is_same_v<T, master_type>;
  /// Per-token losses: float when T is narrower (bf16), as plan<>'s.
  using loss_type = std::conditional_t<(sizeof(T) < sizeof(float)), float, T>;
  /// The model-state sections (state_sections.hpp): no master or moments when ZeRO shards them.
  static constexpr bool optimizer_state_in_arena = detail::optimizer_in_arena<Plan>();
  // ZeRO layer by layer over this shard's block stack (its top-level repeat<N, Block>, N >= 2),
  // as plan<> lays out a single rank's: when the plan asks for windows (its strategy's zero<3> /
  // zero<2>, or zero_local_plan_t's sharded_parameters / sharded_gradients), one pipeline stage
  // and no expert parallelism, the arena holds the layers before and after the stack and two
  // one-block windows of parameters (ZeRO-3) and of gradients (ZeRO-2/3), which
  // data_parallel_step fills and reduce-scatters (block_window_hook).
  using window_layout = block_windows<model, detail::wants_windowed_params<Plan>(), detail::wants_windowed_grads<Plan>(),
                                detail::single_stage_dense<Plan>(), param_count>;
  static constexpr bool has_block_stack = window_layout::has_block_stack;
  static constexpr bool windowed_params = window_layout::params;
  static constexpr bool windowed_grads = window_layout::grads;
  static constexpr bool windowed = window_layout::any;
  static constexpr bool windows_with_sharded_optimizer = !windowed || !optimizer_state_in_arena;
  static_assert(windows_with_sharded_optimizer, "weft::tensor_parallel_plan: the plan keeps the block stack's parameters or gradients in ZeRO windows, but the arena's own optimizer would update parameters and gradients it does not hold. Add sharded_optimizer_state (data_parallel_step keeps the optimizer state), or build the plan with zero_local_plan_t<Plan, Z>.");
  /// The block stack's first parameter (offset in this shard's block), one block's elements and
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

  enum section_id : std::size_t {
    params, grads, master, adam_m, adam_v, windows, grad_windows, kept, logits, scratch, losses, loss_work, tokens,
    targets, n_sections
  };
  static constexpr std::array<std::string_view, n_sections> section_names{
      "parameters", "gradients", "master weights", "adamw m", "adamw v", "parameter windows", "gradient windows",
      "kept activations", "logits / dlogits", "workspace", "losses", "loss workspace", "token ids", "targets"};
  // (the master section is empty without mixed precision: the layout is the single-type one)
  static constexpr std::array<std::size_t, n_sections> section_elements{
      state.params, state.grads, state.master, state.moments, state.moments, windowed_params ? 2 * window_block : 0,
      windowed_grads ? 2 * window_block : 0, kept_count, logits_count, scratch_count, rows, loss_work_count, rows,
      rows};
  static constexpr std::array<std::size_t, n_sections> section_element_bytes{
      sizeof(T), sizeof(T), sizeof(master_type), sizeof(master_type), sizeof(master_type), sizeof(T), sizeof(T),
      sizeof(T), sizeof(T), sizeof(T), sizeof(loss_type), sizeof(double), sizeof(std::int32_t), sizeof(std::int32_t)};
  static constexpr std::size_t alignment = 64;
  static constexpr std::array<std::size_t, n_sections> offsets = [] {
    std::array<std::size_t, n_sections> o{};
    std::size_t acc = 0;
    for (std::size_t i = 0; i < n_sections; ++i) {
      o[i] = acc;
      acc = (acc + section_elements[i] * section_element_bytes[i] + alignment - 1) / alignment * alignment;
    }
    return o;
  }();
  /// Total bytes of one rank's arena.
  static constexpr std::size_t bytes_per_rank =
      offsets[n_sections - 1] + (rows * sizeof(std::int32_t) + alignment - 1) / alignment * alignment;

  /// This rank's parameters (single-process names, shard shapes, offsets in its block).
  static std::vector<param_info> parameters() {
    std::vector<param_info> v;
    model::visit_params("", 0, init_context{Plan::model::depth}, [&](const param_info& p) { v.push_back(p); });
    return v;
  }
};

// ---- shard maps ----

/// For each element of rank `rank`'s shard of a parameter (row-major, in its shard shape),
/// its flat index in the single-process parameter `whole` (as plan<>::parameters() lists it),
/// when `tp` ranks share it:
///   column  the first axis cut, each packed segment separately: rank r holds rows
///           [a + r·w/tp, a + (r+1)·w/tp) of every segment [a, a + w), in segment order
///   vocab   the first axis cut into tp contiguous runs
///   row     the last axis cut into tp contiguous runs
///   replicated  the whole parameter
/// `f` receives the indices one at a time, in shard order (initialise_shards keeps no index
/// vector: a vocabulary shard's takes 8 bytes an element, twice the shard's own f32 bytes).
template <class F>
void for_each_shard_index(const param_info& whole, std::size_t tp, std::size_t rank, F&& f) {
  const auto bad = [&](const char* what) {
    return std::invalid_argument("weft::shard_indices: " + whole.name + ": " + what + " is not divisible by tp " +
                                 std::to_string(tp) + ". Choose a tp that divides it.");
  };
  if (whole.tp_role == role::replicated || tp == 1 || whole.shape.empty()) {
    for (std::size_t i = 0; i < whole.size; ++i) f(i);
    return;
  }
  const std::size_t first = whole.shape.front(), last = whole.shape.back();
  if (whole.tp_role == role::row) {
    if (last % tp) throw bad("the in axis");
    const std::size_t part = last / tp, outer = whole.size / last;
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t c = 0; c < part; ++c) f(o * last + rank * part + c);
    return;
  }
  // column and vocab: whole rows of the first axis
  const std::size_t inner = whole.size / first;
  std::vector<std::size_t> segments = whole.tp_role == role::column ? whole.segments : std::vector<std::size_t>{};
  if (segments.empty()) segments.push_back(first);
  std::size_t start = 0;
  for (std::size_t w : segments) {
    if (w % tp) throw bad(whole.tp_role == role::vocab ? "the vocabulary" : "the out axis (or a packed segment)");
    const std::size_t part = w / tp;
    for (std::size_t r = start + rank * part; r < start + (rank + 1) * part; ++r)
      for (std::size_t i = 0; i < inner; ++i) f(r * inner + i);
    start += w;
  }
}

/// The indices of for_each_shard_index, as a vector.
inline std::vector<std::size_t> shard_indices(const param_info& whole, std::size_t tp, std::size_t rank) {
  std::vector<std::size_t> idx;
  idx.reserve(whole.tp_role == role::replicated || tp == 1 || whole.shape.empty() ? whole.size : whole.size / tp);
  for_each_shard_index(whole, tp, rank, [&](std::size_t i) { idx.push_back(i); });
  return idx;
}

namespace detail {
inline const param_info& whole_param(const std::vector<param_info>& whole, const std::string& name) {
  for (const auto& p : whole)
    if (p.name == name) return p;
  throw std::invalid_argument("weft::tensor_parallel: the shard parameter " + name +
                              " has no single-process counterpart. Map the model with tp_model<>.");
}
// Each local parameter with the flat indices of its elements in the single-process block.
inline std::vector<std::size_t> block_indices(const std::vector<param_info>& local, const std::vector<param_info>& whole,
                                              std::size_t tp, std::size_t rank, std::size_t local_count) {
  std::vector<std::size_t> map(local_count, static_cast<std::size_t>(-1));
  for (const auto& p : local) {
    const param_info& w = whole_param(whole, p.name);
    // (a parameter the shard lists as replicated is whole: a layer run whole on every rank)
    const auto idx = shard_indices(w, p.tp_role == role::replicated ? 1 : tp, rank);
    if (idx.size() != p.size)
      throw std::logic_error("weft::tensor_parallel: the shard of " + p.name + " has " + std::to_string(p.size) +
                             " elements, its shard map " + std::to_string(idx.size()) + ".");
    for (std::size_t i = 0; i < p.size; ++i) map[p.offset + i] = w.offset + idx[i];
  }
  return map;
}
}  // namespace detail

/// Collective over the tp group: writes the single-process parameter block `whole_block`
/// (laid out as `whole`) from every rank's shard `local_block` (laid out as `local`).
template <class T>
void gather_shards(tp_group& g, std::span<const T> local_block, const std::vector<param_info>& local,
                   const std::vector<param_info>& whole, std::span<T> whole_block) {
  const std::size_t tp = static_cast<std::size_t>(g.size()), n = local_block.size();
  std::vector<T> all(n * tp);  // (tp, local block)
  g.all_gather(local_block.data(), all.data(), n);
  for (std::size_t r = 0; r < tp; ++r) {
    const auto map = detail::block_indices(local, whole, tp, r, n);
    for (std::size_t i = 0; i < n; ++i) whole_block[map[i]] = all[r * n + i];
  }
}

/// The inverse: this rank's shard `local_block` from the single-process block `whole_block`.
template <class T>
void scatter_shards(std::span<const T> whole_block, const std::vector<param_info>& whole, std::span<T> local_block,
                    const std::vector<param_info>& local, std::size_t tp, std::size_t rank) {
  const auto map = detail::block_indices(local, whole, tp, rank, local_block.size());
  for (std::size_t i = 0; i < local_block.size(); ++i) local_block[i] = whole_block[map[i]];
}

}  // namespace weft
