#pragma once
// ---- how a model's parameters fall onto tensor-parallel ranks and pipeline stages ----
// model_partition<Model, Tp> walks the model's type (sequential, named, residual, repeat and
// leaf layers) at compile time and counts parameter elements by tensor-parallel role:
//
// * column / row / vocab parameters are cut along one axis (out, in, vocab) into Tp shards;
//   a rank holds ceil(extent / Tp) of that axis (exact when Tp divides it, which plan<>
//   checks for heads, kv_heads, ffn and vocab);
// * replicated parameters (norms, row-parallel biases, learned positions) are held whole by
//   every tensor-parallel rank: they count fully on each;
// * branch_sum<...> (parallel branches) is the sum of its branches;
// * a layer marked `tp_replicated` (moe_mlp, ep_moe_mlp) is held whole by every rank;
// * a layer the walk does not know (neither a composition above nor a leaf_layer<> with roles)
//   counts whole when tp is 1; with tp > 1 it is a compile error, not a guess: how tensor
//   parallelism cuts it is unknown (see docs/tensor_parallel.md, "Layers of your own").
//
// For pipelines the model must be a sequential whose blocks are one repeat<N, Block> (gpt and
// llama are): the layers before it (embeddings) go to the first stage, the blocks are dealt
// evenly, N / stages each, and the layers after it (final norm, head) go to the last stage.
// A head tied to the embedding (GPT-2) keeps a copy of the table on the last stage when there
// are several stages, as Megatron-LM does (its gradient is summed with the first stage's).
#include "weft/model/layer.hpp"       // leaf_layer, param_list, role
#include "weft/model/sequential.hpp"  // sequential

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace weft {

// Only matched, never used before the model defines them (no need to include their kernels).
template <std::size_t V, std::size_t C, class Tie>
struct lm_head;
enum class gate_kind;
template <std::size_t H, gate_kind Kind>
struct gated_unit;
template <class... Fs>
struct branch_sum;

/// Parameter elements of a layer by tensor-parallel role, and per rank of `tp`.
struct param_split {
  std::size_t total = 0;       ///< all elements
  std::size_t replicated = 0;  ///< elements every tensor-parallel rank holds whole
  std::size_t sharded = 0;     ///< column + row + vocab elements (all shards together)
  std::size_t per_rank = 0;    ///< elements one tensor-parallel rank holds: replicated + its shards
  bool even = true;            ///< every cut axis divisible by tp

  friend constexpr param_split operator+(param_split a, const param_split& b) {
    return {a.total + b.total, a.replicated + b.replicated, a.sharded + b.sharded, a.per_rank + b.per_rank,
            a.even && b.even};
  }
  constexpr param_split times(std::size_t n) const {
    return {total * n, replicated * n, sharded * n, per_rank * n, even};
  }
};

namespace detail {

// What the walk gathers besides the counts.
struct layer_facts {
  param_split params{};
  std::size_t tied_table = 0;  // elements of an embedding table a tied head multiplies by
  bool gated = false;          // a SwiGLU MLP (its kept activations differ from GELU's)

  friend constexpr layer_facts operator+(layer_facts a, const layer_facts& b) {
    return {a.params + b.params, a.tied_table + b.tied_table, a.gated || b.gated};
  }
};

template <int N>
struct priority : priority<N - 1> {};
template <>
struct priority<0> {};

// One parameter: its elements, and the shard of its cut axis one rank holds.
template <std::size_t Tp, class P>
constexpr param_split split_param() {
  using S = typename P::shape_type;
  if constexpr (P::tp_role == role::replicated || S::rank == 0) {
    return {P::size, P::size, 0, P::size, true};
  } else {
    constexpr std::size_t cut = P::tp_role == role::row ? S::extents[S::rank - 1] : S::extents[0];
    constexpr std::size_t rest = P::size / cut;
    return {P::size, 0, P::size, rest * ((cut + Tp - 1) / Tp), cut % Tp == 0};
  }
}

template <std::size_t Tp, class... Ps>
constexpr param_split split_list(const param_list<Ps...>*) {
  return (param_split{} + ... + split_param<Tp, Ps>());
}

template <std::size_t Tp, class L>
constexpr layer_facts facts_of();

template <std::size_t Tp, class Params>
constexpr layer_facts facts(const leaf_layer<Params>*, priority<1>) {
  return {split_list<Tp>(static_cast<const Params*>(nullptr)), 0, false};
}
template <std::size_t Tp, std::size_t V, std::size_t C, class Tie>
constexpr layer_facts facts(const lm_head<V, C, Tie>*, priority<1>) {
  using L = lm_head<V, C, Tie>;
  return {split_list<Tp>(static_cast<const typename L::params*>(nullptr)), Tie::is_tied ? V * C : 0, false};
}
template <std::size_t Tp, std::size_t H, gate_kind Kind>
constexpr layer_facts facts(const gated_unit<H, Kind>*, priority<1>) {
  return {{}, 0, true};  // a gated MLP (swiglu, geglu): keeps gate|up and their product
}
template <std::size_t Tp, class... Ls>
constexpr layer_facts facts(const sequential<Ls...>*, priority<1>) {
  return (layer_facts{} + ... + facts_of<Tp, Ls>());
}
template <std::size_t Tp, class... Fs>
constexpr layer_facts facts(const branch_sum<Fs...>*, priority<1>) {
  return (layer_facts{} + ... + facts_of<Tp, Fs>());
}
// A layer tensor parallelism runs whole on every rank (a mixture of experts: tp_shard keeps it,
// `tp_replicated`): all of its parameters replicated.
template <std::size_t Tp, class L>
  requires(L::tp_replicated)
constexpr layer_facts facts(const L*, priority<1>) {
  return {{L::param_count, L::param_count, 0, L::param_count, true}, 0, false};
}
// named<> and residual<>: the wrapped layer.
template <std::size_t Tp, class L>
  requires requires { typename L::inner; }
constexpr layer_facts facts(const L*, priority<1>) {
  return facts_of<Tp, typename L::inner>();
}
// repeat<N, Block>: N copies.
template <std::size_t Tp, class L>
  requires requires {
    typename L::block_type;
    L::count;
  }
constexpr layer_facts facts(const L*, priority<1>) {
  layer_facts f = facts_of<Tp, typename L::block_type>();
  f.params = f.params.times(L::count);
  f.tied_table *= L::count;
  return f;
}

// A layer the overloads above do not know, with parameters, under tensor parallelism (the
// compiler prints the layer type and tp with the message).
template <class L, std::size_t Tp, bool Known>
inline constexpr bool partition_layer_known = Known;

// Layers the overloads above do not know: whole when tp is 1 (or they have no parameters),
// otherwise an error rather than a replicated guess.
template <std::size_t Tp, class L>
constexpr layer_facts facts_of() {
  if constexpr (requires { facts<Tp>(static_cast<const L*>(nullptr), priority<1>{}); }) {
    return facts<Tp>(static_cast<const L*>(nullptr), priority<1>{});
  } else {
    static_assert(partition_layer_known<L, Tp, (Tp == 1 || L::param_count == 0)>,
                  "weft::model_partition: a layer with parameters is neither a weft composition nor a "
                  "leaf_layer<param_list<...>>, so how tensor parallelism cuts it is unknown (see "
                  "partition_layer_known<Layer, tp, false>). Build it from sequential, residual, named, repeat and "
                  "branch_sum, or derive it from leaf_layer<param_list<param<..., role>...>>.");
    return {{L::param_count, L::param_count, 0, L::param_count, true}, 0, false};
  }
}

// The repeat<N, Block> a layer is (through named<>), if any.
template <class L>
struct as_repeat {
  static constexpr bool found = false;
};
template <class L>
  requires requires {
    typename L::block_type;
    L::count;
  }
struct as_repeat<L> {
  static constexpr bool found = true;
  using type = L;
};
template <class L>
  requires(requires { typename L::inner; } && !requires { typename L::block_type; })
struct as_repeat<L> : as_repeat<typename L::inner> {};

// The model as (layers before the blocks, the blocks, layers after); `found` false when the
// model is not a sequential with a repeat<> among its children.
template <std::size_t Tp>
struct no_split {
  static constexpr bool found = false;
  static constexpr std::size_t blocks = 0;
  static constexpr layer_facts pre{}, block{}, post{};
};
template <std::size_t Tp, std::size_t At, class... Ls>
struct model_split {
  static constexpr bool found = true;
  using repeat_type = typename as_repeat<std::tuple_element_t<At, std::tuple<Ls...>>>::type;
  static constexpr std::size_t blocks = repeat_type::count;
  static constexpr layer_facts pre = [] {
    layer_facts f{};
    std::size_t i = 0;
    ((i++ < At ? (f = f + facts_of<Tp, Ls>(), 0) : 0), ...);
    return f;
  }();
  static constexpr layer_facts block = facts_of<Tp, typename repeat_type::block_type>();
  static constexpr layer_facts post = [] {
    layer_facts f{};
    std::size_t i = 0;
    ((i++ > At ? (f = f + facts_of<Tp, Ls>(), 0) : 0), ...);
    return f;
  }();
};
template <std::size_t Tp, class... Ls>
constexpr auto split_model(const sequential<Ls...>*, priority<1>) {
  constexpr std::size_t n = sizeof...(Ls);
  constexpr std::size_t at = [] {
    std::size_t i = 0, r = n;
    ((r == n && as_repeat<Ls>::found ? (r = i, ++i) : ++i), ...);
    return r;
  }();
  if constexpr (at == n) return no_split<Tp>{};
  else return model_split<Tp, at, Ls...>{};
}
template <std::size_t Tp>
constexpr auto split_model(const void*, priority<0>) {
  return no_split<Tp>{};
}

}  // namespace detail

/// The parameters of `Model` per tensor-parallel rank of `Tp`, and per pipeline stage.
template <class Model, std::size_t Tp = 1>
struct model_partition {
 private:
  using split = decltype(detail::split_model<Tp>(static_cast<const Model*>(nullptr), detail::priority<1>{}));

 public:
  /// The whole model, walked.
  static constexpr detail::layer_facts whole = detail::facts_of<Tp, Model>();
  /// True when the model's blocks are one repeat<N, Block> in a top-level sequential (needed to pipeline it).
  static constexpr bool has_blocks = split::found;
  /// Number of blocks (N of the repeat), 0 without.
  static constexpr std::size_t blocks = split::blocks;
  /// Parameters before the blocks (embeddings), of one block, after the blocks (final norm, head).
  static constexpr param_split pre = has_blocks ? split::pre.params : whole.params;
  static constexpr param_split block = split::block.params;
  static constexpr param_split post = split::post.params;
  /// Elements of the embedding table a tied head uses (0 when the head owns its weight).
  static constexpr std::size_t tied_table = split::post.tied_table;
  /// True when the blocks' MLP is gated (SwiGLU).
  static constexpr bool gated_mlp = split::block.gated;
  /// True when every tensor-parallel cut divides evenly.
  static constexpr bool even = whole.params.even;

  /// Parameter elements one tensor-parallel rank of stage `s` (of `stages`) holds. Blocks are
  /// dealt evenly (plan<> requires `stages` to divide them); the tied table's copy is a vocab shard.
  static constexpr std::size_t stage_params(std::size_t s, std::size_t stages) {
    if (!has_blocks) return whole.params.per_rank;
    std::size_t n = (blocks / stages) * block.per_rank;
    if (s == 0) n += pre.per_rank;
    if (s + 1 == stages) n += post.per_rank + (stages > 1 ? (tied_table + Tp - 1) / Tp : 0);
    return n;
  }
  /// All elements of stage `s` before tensor-parallel sharding (the tied copy included).
  static constexpr std::size_t stage_params_total(std::size_t s, std::size_t stages) {
    if (!has_blocks) return whole.params.total;
    std::size_t n = (blocks / stages) * block.total;
    if (s == 0) n += pre.total;
    if (s + 1 == stages) n += post.total + (stages > 1 ? tied_table : 0);
    return n;
  }
};

/// ZeRO layer by layer over a model's block stack (its top-level repeat<N, Block>, N >= 2): the
/// one layout plan<> (a single rank's arena) and tensor_parallel_plan (a shard's) both use.
/// `WantsParams` (ZeRO-3) keeps the stack's parameters out of the arena, which then holds the
/// layers before and after it and two one-block parameter windows; `WantsGrads` (ZeRO-2/3) does
/// the same for gradients. `Eligible` is the arena's own condition (one pipeline stage, no
/// expert parallelism; plan<> also no tensor parallelism, whose shard windows its own stack).
/// `ParamCount` is the arena's parameter block (Model's).
template <class Model, bool WantsParams, bool WantsGrads, bool Eligible, std::size_t ParamCount>
struct block_windows {
  using partition = model_partition<Model>;
  static constexpr bool has_block_stack = Eligible && partition::has_blocks && partition::blocks >= 2;
  static constexpr bool params = WantsParams && has_block_stack;
  static constexpr bool grads = (WantsGrads || WantsParams) && has_block_stack;
  static constexpr bool any = params || grads;
  /// The stack's first parameter (offset in the block), one block's elements, the blocks (0
  /// when nothing is windowed).
  static constexpr std::size_t begin = any ? partition::pre.total : 0;
  static constexpr std::size_t block = any ? partition::block.total : 0;
  static constexpr std::size_t blocks = any ? partition::blocks : 0;
  static constexpr bool exact = !any || begin + blocks * block + partition::post.total == ParamCount;
  static_assert(exact, "weft::block_windows: the block stack does not account for the parameter block (internal error).");
  /// Parameter and gradient elements the arena holds whole: the block less the stack when it
  /// comes through windows.
  static constexpr std::size_t resident_params = ParamCount - (params ? blocks * block : 0);
  static constexpr std::size_t resident_grads = ParamCount - (grads ? blocks * block : 0);
};

}  // namespace weft
