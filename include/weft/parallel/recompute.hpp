#pragma once
// ---- with_recompute_t: a model under a recomputation policy ----
// with_recompute_t<Model, Policy> maps the model's type through sequential, named, residual and branch_sum
// (and a model type derived from a sequential, such as gpt and llama) to the layers of
// model/recompute.hpp:
//   none       the model itself
//   full       every repeat<N, Block, First> -> recomputed<repeat<N, Block, First>>
//   selective  every causal_attention<H, KVH, D, P> (inside repeats too) -> selective_attention<...>
// and, with the strategy option flash_attention (any policy), every causal_attention ->
// flash_attention_core<H, KVH, D, P> (row statistics kept, no probabilities; model/flash_attention.hpp).
// Parameter names, counts and offsets are unchanged; kept activations shrink. plan<> executes
// the mapped model (plan::model) when its strategy says recompute<full> or recompute<selective>.
#include "weft/model/causal_attention.hpp"  // causal_attention
#include "weft/model/flash_attention.hpp"   // flash_attention_core
#include "weft/model/local_global_attention.hpp"  // local_global_attention
#include "weft/model/named.hpp"             // named
#include "weft/model/parallel_branches.hpp" // branch_sum
#include "weft/model/recompute.hpp"         // recomputed, selective_attention, recompute_model
#include "weft/model/repeat.hpp"            // repeat
#include "weft/model/residual.hpp"          // residual
#include "weft/model/sequential.hpp"        // sequential
#include "weft/parallel/pipeline_stage.hpp"  // carried_params
#include "weft/parallel/strategy.hpp"       // recompute_kind, none, selective, full

#include <cstddef>
#include <type_traits>

namespace weft {

namespace detail {

// named<Name, L>, recognised without deducing the fixed_string (nvcc cannot), and without
// comparing L to named<L::name, typename L::inner> (nvcc 13 finds them different): among layers,
// only named<> has both a `name` and an `inner`.
template <class L>
concept recompute_named = requires {
  L::name;
  typename L::inner;
};

// The sequential<...> a model type derives from (gpt, llama), when it is not one itself.
template <class... Ls>
sequential<Ls...> sequential_base_of(const sequential<Ls...>*);
template <class L>
struct is_sequential : std::false_type {};
template <class... Ls>
struct is_sequential<sequential<Ls...>> : std::true_type {};
template <class L>
concept derived_from_sequential =
    !is_sequential<L>::value && requires(const L* p) { detail::sequential_base_of(p); };

// A layer selective recomputation cannot look into: neither a composition it maps nor a leaf
// (leaf_layer<...> / stateless_layer); the compiler prints its type with the message.
template <class L, bool Transparent>
inline constexpr bool selective_sees_inside = Transparent;
template <class L>
inline constexpr bool is_leaf_layer = requires { typename L::params; };  // leaf_layer<...>, stateless_layer

template <class L, recompute_kind K, bool Fl>
struct recompute_map {
  // recompute<selective> drops the attention probabilities of every causal_attention it finds;
  // one hidden in a layer of unknown structure would be kept while the memory model counts it
  // dropped, so such a layer is an error rather than silently left alone.
  static_assert(selective_sees_inside<L, K != recompute_kind::selective || is_leaf_layer<L>>,
                "weft::recompute: selective recomputation cannot see inside this layer (see "
                "selective_sees_inside<Layer, false>). Build it from sequential, residual, named, repeat and "
                "branch_sum (which it maps), derive a leaf from leaf_layer<...> or stateless_layer, or use "
                "recompute<full> or recompute<none>.");
  using type = L;  // leaves, and what the policy leaves alone
};
template <class L, recompute_kind K, bool Fl = false>
using recompute_map_t = typename recompute_map<L, K, Fl>::type;

template <class... Ls, recompute_kind K, bool Fl>
struct recompute_map<sequential<Ls...>, K, Fl> {
  using type = sequential<recompute_map_t<Ls, K, Fl>...>;
};
template <class L, recompute_kind K, bool Fl>
  requires recompute_named<L>
struct recompute_map<L, K, Fl> {
  using type = named<L::name, recompute_map_t<typename L::inner, K, Fl>>;
};
template <class Inner, recompute_kind K, bool Fl>
struct recompute_map<residual<Inner>, K, Fl> {
  using type = residual<recompute_map_t<Inner, K, Fl>>;
};
template <class... Fs, recompute_kind K, bool Fl>
struct recompute_map<branch_sum<Fs...>, K, Fl> {
  using type = branch_sum<recompute_map_t<Fs, K, Fl>...>;
};
template <std::size_t N, class Block, std::size_t First, recompute_kind K, bool Fl>
struct recompute_map<repeat<N, Block, First>, K, Fl> {
  // full: the copies re-run whole; under flash_attention their attention keeps row statistics
  using type = std::conditional_t<K == recompute_kind::full,
                                  recomputed<repeat<N, recompute_map_t<Block, recompute_kind::none, Fl>, First>>,
                                  repeat<N, recompute_map_t<Block, K, Fl>, First>>;
};
template <std::size_t H, std::size_t KVH, std::size_t D, class PosEnc, std::size_t W, recompute_kind K, bool Fl>
struct recompute_map<causal_attention<H, KVH, D, PosEnc, W>, K, Fl> {
  // flash_attention keeps no probabilities at all, so selective recomputation has nothing left to drop
  using type = std::conditional_t<
      Fl, flash_attention_core<H, KVH, D, PosEnc, W>,
      std::conditional_t<K == recompute_kind::selective, selective_attention<H, KVH, D, PosEnc, W>,
                         causal_attention<H, KVH, D, PosEnc, W>>>;
};
// Gemma 3's attention core: both forms mapped (selective drops, flash replaces, each one's probabilities).
template <std::size_t P, class Local, class Global, recompute_kind K, bool Fl>
struct recompute_map<local_global_attention<P, Local, Global>, K, Fl> {
  using type = local_global_attention<P, recompute_map_t<Local, K, Fl>, recompute_map_t<Global, K, Fl>>;
};
// A pipeline stage's carried copy of a tied embedding: the stage's layers mapped, the carried
// parameters left as they are (they are never run).
template <class Carried, class Inner, recompute_kind K, bool Fl>
struct recompute_map<carried_params<Carried, Inner>, K, Fl> {
  using type = carried_params<Carried, recompute_map_t<Inner, K, Fl>>;
};
template <class L, recompute_kind K, bool Fl>
  requires derived_from_sequential<L>
struct recompute_map<L, K, Fl> {
  using base = decltype(detail::sequential_base_of(static_cast<const L*>(nullptr)));
  using body = recompute_map_t<base, K, Fl>;
  using type = std::conditional_t<std::is_same_v<body, base>, L, recompute_model<L, body>>;
};

}  // namespace detail

/// A recomputation policy with the flash_attention option: what plan<>::executed_recompute is
/// when the plan has that option (kind as Policy's; flash: every attention keeps row statistics).
template <class Policy, bool Flash>
struct executed_policy {
  using policy = Policy;
  static constexpr recompute_kind kind = Policy::kind;
  static constexpr bool flash = Flash;
};

namespace detail {
template <class Policy>
constexpr bool policy_flash() {
  if constexpr (requires { Policy::flash; }) return Policy::flash;
  else return false;
}
}  // namespace detail

/// `Model` executed under the recomputation policy `Policy` (none, selective or full), with every
/// causal_attention as flash_attention_core when `Flash` (executed_policy<P, true>: the strategy
/// option flash_attention).
template <class Model, class Policy, bool Flash = detail::policy_flash<Policy>()>
using with_recompute_t = std::conditional_t<Policy::kind == recompute_kind::none && !Flash, Model,
                                            detail::recompute_map_t<Model, Policy::kind, Flash>>;

}  // namespace weft
