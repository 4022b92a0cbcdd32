#pragma once
// ---- pipeline stages as types: a model cut into P·V virtual stages ----
// `pipeline_stage_t<Model, P, Stage, V, Chunk>` is the layer that chunk `Chunk` of pipeline
// stage `Stage` runs: virtual stage v = Chunk·P + Stage of the P·V virtual stages (Megatron-LM's
// layout, see schedule.hpp). It applies to models of the form
//
//   sequential<prefix..., named<Name, repeat<L, Block>>, suffix...>       (gpt, llama)
//
// Virtual stage v holds blocks [v·L/(P·V), (v+1)·L/(P·V)) as named<Name, repeat<L/(P·V), Block,
// first>>, so its parameters keep their global names ("h.5.attn.c_attn.weight" on the stage that
// holds block 5): a checkpoint, an initialiser seeded by name, a comparison with the whole model
// all see the same names. The first virtual stage also holds the prefix (embeddings) and reads
// token ids (in_width 0); the last also holds the suffix (final norm, head) and writes logits;
// the others map activations (width C) to activations.
//
// A head tied to a prefix parameter (GPT-2: lm_head tied<"wte.weight">) needs that parameter on
// the last stage too. The last virtual stage then carries its own copy of the prefix layer that
// owns it (carried_params<named<"wte", token_embedding<…>>, …>): the same name, hence the same
// initial values as the first stage's (training_step seeds each parameter by name). After
// backward the two copies' gradients are summed over the embedding group (first and last
// stage), as Megatron-LM does, so both copies take the same updates; the global gradient norm
// counts the copy once (`tied_offset`/`tied_count` say where the summed range lies).
#include "weft/core/diagnostics.hpp"   // diag::divisible, diag::at_most, diag::equal
#include "weft/model/layer.hpp"        // layer, npos_param, init_context
#include "weft/model/lm_head.hpp"      // lm_head, tied
#include "weft/model/named.hpp"        // named
#include "weft/model/repeat.hpp"       // repeat
#include "weft/model/sequential.hpp"   // sequential

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft {

/// A layer `Inner` that also owns the parameters of `Carried` (placed first in its block) without
/// running it: the last pipeline stage's copy of a tied embedding. Forward and backward are
/// Inner's; Carried's gradients are written by whatever reaches them through the root (a tied
/// head), and its parameters keep Carried's names.
template <layer Carried, layer Inner>
struct carried_params {
  using carried_type = Carried;
  using inner_type = Inner;
  static constexpr std::size_t carried_count = Carried::param_count;
  static constexpr std::size_t in_width = Inner::in_width;
  static constexpr std::size_t out_width = Inner::out_width;
  static constexpr std::size_t param_count = Carried::param_count + Inner::param_count;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t kept_count = Inner::template kept_count<B, S>;
  template <std::size_t B, std::size_t S>
  static constexpr std::size_t scratch_count = Inner::template scratch_count<B, S>;

  static constexpr std::size_t find_param(std::string_view path) {
    if (const std::size_t o = Carried::find_param(path); o != npos_param) return o;
    const std::size_t o = Inner::find_param(path);
    return o == npos_param ? npos_param : carried_count + o;
  }
  template <class F>
  static void visit_params(const std::string& prefix, std::size_t base, const init_context& ic, F&& f) {
    Carried::visit_params(prefix, base, ic, f);
    Inner::visit_params(prefix, base + carried_count, ic, f);
  }
  template <class F>
  static void forward(const F& f, const typename F::value_type* in, typename F::value_type* out) {
    Inner::forward(f.child(carried_count, 0, 0), in, out);
  }
  template <class F>
  static void backward(const F& f, const typename F::value_type* in, const typename F::value_type* dout,
                       typename F::value_type* din) {
    Inner::backward(f.child(carried_count, 0, 0), in, dout, din);
  }
};

namespace detail {

// ---- the model's parts ----

template <class... Ls>
struct layer_pack {
  static constexpr std::size_t size = sizeof...(Ls);
  using tuple = std::tuple<Ls...>;
};
// gpt<Cfg> derives from sequential<...>: deduction through the base gives its layers.
template <class... Ls>
layer_pack<Ls...> sequential_layers(const sequential<Ls...>*);
template <class Model>
using sequential_layers_t = decltype(sequential_layers(static_cast<const Model*>(nullptr)));
template <class Model>
concept sequential_model = requires { sequential_layers(static_cast<const Model*>(nullptr)); };

// named<Name, repeat<N, Block, First>>, recognised by members (nvcc cannot deduce a
// fixed_string in a partial specialisation).
template <class L>
concept block_stack = requires {
  L::name;
  typename L::inner::block_type;
  L::inner::count;
  L::inner::first;
};

template <class Pack>
struct stack_index;
template <class... Ls>
struct stack_index<layer_pack<Ls...>> {
  static constexpr std::array<bool, sizeof...(Ls)> is_stack{block_stack<Ls>...};
  static constexpr std::size_t count = (std::size_t{0} + ... + (block_stack<Ls> ? 1u : 0u));
  static constexpr std::size_t value = [] {
    for (std::size_t i = 0; i < is_stack.size(); ++i)
      if (is_stack[i]) return i;
    return std::size_t{0};
  }();
};

// Layers [Begin, Begin + N) of a pack.
template <class Pack, std::size_t Begin, class Seq>
struct pack_slice_impl;
template <class Pack, std::size_t Begin, std::size_t... I>
struct pack_slice_impl<Pack, Begin, std::index_sequence<I...>> {
  using type = layer_pack<std::tuple_element_t<Begin + I, typename Pack::tuple>...>;
};
template <class Pack, std::size_t Begin, std::size_t End>
using pack_slice_t = typename pack_slice_impl<Pack, Begin, std::make_index_sequence<End - Begin>>::type;

template <class... Packs>
struct pack_concat;
template <class... A>
struct pack_concat<layer_pack<A...>> {
  using type = layer_pack<A...>;
};
template <class... A, class... B, class... Rest>
struct pack_concat<layer_pack<A...>, layer_pack<B...>, Rest...> : pack_concat<layer_pack<A..., B...>, Rest...> {};

template <class Pack>
struct pack_sequential;
template <class... Ls>
struct pack_sequential<layer_pack<Ls...>> {
  using type = sequential<Ls...>;
};

// ---- tied heads: the parameter path an lm_head borrows, if any ----
template <class L>
struct tie_of {
  using type = void;
};
template <std::size_t Vocab, std::size_t C, class Tie>
struct tie_of<lm_head<Vocab, C, Tie>> {
  using type = std::conditional_t<Tie::is_tied, Tie, void>;
};
template <class L>
  requires requires { typename L::inner; }
struct tie_of<L> : tie_of<typename L::inner> {};  // through named<>

// The first tie in a pack (void when none).
template <class Pack>
struct first_tie;
template <>
struct first_tie<layer_pack<>> {
  using type = void;
};
template <class L, class... Ls>
struct first_tie<layer_pack<L, Ls...>> {
  using type = std::conditional_t<std::is_void_v<typename tie_of<L>::type>, typename first_tie<layer_pack<Ls...>>::type,
                                  typename tie_of<L>::type>;
};

// Index of the layer of a pack that owns a parameter path (the pack's size when none).
template <class Pack, class Tie>
struct owner_index;
template <class... Ls, class Tie>
struct owner_index<layer_pack<Ls...>, Tie> {
  static constexpr std::size_t value = [] {
    constexpr std::array<bool, sizeof...(Ls)> owns{(Ls::find_param(Tie::path.view()) != npos_param)...};
    for (std::size_t i = 0; i < owns.size(); ++i)
      if (owns[i]) return i;
    return sizeof...(Ls);
  }();
};

// Element offset of layer I inside sequential<Ls...>.
template <class Pack, std::size_t I>
inline constexpr std::size_t pack_offset = pack_sequential<Pack>::type::param_offsets[I];

}  // namespace detail

/// The facts of one virtual stage (see the top of this file); `type` is its layer.
template <class Model, std::size_t P, std::size_t Stage, std::size_t V = 1, std::size_t Chunk = 0>
struct pipeline_stage {
  // ---- validation ----
  static constexpr bool model_is_sequential = detail::sequential_model<Model>;
  static_assert(model_is_sequential,
                "weft::pipeline_stage: the model is not a sequential<...> of layers. Pipeline stages cut models "
                "of the form sequential<prefix..., named<Name, repeat<L, Block>>, suffix...> (gpt, llama).");
  using layers = detail::sequential_layers_t<Model>;
  static constexpr bool one_block_stack = diag::equal<detail::stack_index<layers>::count, 1>;
  static_assert(diag::equal<detail::stack_index<layers>::count, 1>,
                "weft::pipeline_stage: the model needs exactly one named<Name, repeat<L, Block>> (the stack of "
                "blocks the stages share). Write the model as sequential<prefix..., named<Name, repeat<L, Block>>, "
                "suffix...>.");
  static constexpr bool sizes_positive = diag::at_least<P, 1> && diag::at_least<V, 1>;
  static_assert(sizes_positive, "weft::pipeline_stage: a pipeline needs at least one stage and one chunk. Use P >= 1 and V >= 1.");
  static constexpr bool stage_in_range = diag::at_most<Stage + 1, P> && diag::at_most<Chunk + 1, V>;
  static_assert(diag::at_most<Stage + 1, P> && diag::at_most<Chunk + 1, V>, "weft::pipeline_stage: the stage or chunk index is out of range. Use Stage < P and Chunk < V.");

  static constexpr std::size_t stack_at = detail::stack_index<layers>::value;
  using stack = std::tuple_element_t<stack_at, typename layers::tuple>;
  using block_type = typename stack::inner::block_type;
  static constexpr std::size_t depth = stack::inner::count;
  static constexpr std::size_t virtual_stages = P * V;

  static constexpr bool depth_divisible = diag::divisible<depth, virtual_stages>;
  static_assert(diag::divisible<depth, virtual_stages>,  // printed with both numbers
                "weft::pipeline: depth is not divisible by pp · chunks. Choose a depth that is a multiple of pp·V "
                "(V = interleaved chunks, 1 otherwise), or change pp or interleaved<V>.");

  // ---- what this virtual stage holds ----
  static constexpr std::size_t virtual_stage = Chunk * P + Stage;
  static constexpr bool is_first = virtual_stage == 0;
  static constexpr bool is_last = virtual_stage + 1 == virtual_stages;
  static constexpr std::size_t blocks = depth_divisible ? depth / virtual_stages : 1;
  static constexpr std::size_t first_block = stack::inner::first + virtual_stage * blocks;

  using body = named<stack::name, repeat<blocks, block_type, first_block>>;
  using prefix = detail::pack_slice_t<layers, 0, stack_at>;
  using suffix = detail::pack_slice_t<layers, stack_at + 1, layers::size>;
  using tie = typename detail::first_tie<suffix>::type;  // void: no tied head
  static constexpr bool tied_head = !std::is_void_v<tie>;

 private:
  static constexpr std::size_t owner = [] {
    if constexpr (tied_head) return detail::owner_index<prefix, tie>::value;
    else return prefix::size;
  }();

 public:
  /// Index in the prefix of the layer that owns the tied parameter (prefix::size: no tied head).
  static constexpr std::size_t tied_owner_index = owner;
  static constexpr bool tie_in_prefix = !tied_head || owner < prefix::size;
  static_assert(tie_in_prefix,
                "weft::pipeline_stage: the tied head borrows a parameter that no layer before the block stack "
                "owns. Tie the head to a parameter of the prefix (e.g. tied<\"wte.weight\">).");

  /// The last virtual stage carries a copy of the tied parameter's owner (not when it is also the first).
  static constexpr bool carries_tied = tied_head && is_last && !is_first;
  /// This stage takes part in the tied gradient sum (first or last virtual stage, P·V > 1).
  static constexpr bool in_embedding_group = tied_head && virtual_stages > 1 && (is_first || is_last);

 private:
  using first_pack = typename detail::pack_concat<prefix, detail::layer_pack<body>>::type;
  using last_pack = typename detail::pack_concat<detail::layer_pack<body>, suffix>::type;
  using whole_pack = typename detail::pack_concat<prefix, detail::layer_pack<body>, suffix>::type;
  template <class Pack>
  using seq = typename detail::pack_sequential<Pack>::type;

  // 0 whole model, 1 first, 2 last with the tied copy, 3 last, 4 middle.
  static constexpr int shape = is_first && is_last ? 0 : is_first ? 1 : carries_tied ? 2 : is_last ? 3 : 4;
  template <int K, class = void>
  struct pick {
    using type = sequential<body>;
  };
  template <class D>
  struct pick<0, D> {
    using type = seq<whole_pack>;
  };
  template <class D>
  struct pick<1, D> {
    using type = seq<first_pack>;
  };
  template <class D>
  struct pick<2, D> {
    using type = carried_params<std::tuple_element_t<owner, typename prefix::tuple>, seq<last_pack>>;
  };
  template <class D>
  struct pick<3, D> {
    using type = seq<last_pack>;
  };
  static constexpr std::size_t tied_at = [] {
    if constexpr (!in_embedding_group) return npos_param;
    else if constexpr (carries_tied) return std::size_t{0};
    else return detail::pack_offset<first_pack, owner>;
  }();

 public:
  /// The layer this virtual stage runs.
  using type = typename pick<shape>::type;

  /// Where the range summed over the embedding group lies in this stage's parameter block
  /// (npos_param / 0 when the stage is not in the group).
  static constexpr std::size_t tied_offset = tied_at;
  static constexpr std::size_t tied_count = [] {
    if constexpr (!in_embedding_group) return std::size_t{0};
    else return std::tuple_element_t<owner, typename prefix::tuple>::param_count;
  }();
};

/// The layer of chunk `Chunk` of pipeline stage `Stage` (virtual stage Chunk·P + Stage of P·V).
template <class Model, std::size_t P, std::size_t Stage, std::size_t V = 1, std::size_t Chunk = 0>
using pipeline_stage_t = typename pipeline_stage<Model, P, Stage, V, Chunk>::type;

}  // namespace weft
