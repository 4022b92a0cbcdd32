#pragma once
// ---- expert parallelism: the model one rank of an expert group holds ----
// ep_model_t<Model, EP> is `Model` with every mixture of experts moe_mlp<C, E, k, F, …> swapped
// for its expert-parallel form ep_moe_mlp<moe_mlp<…>, EP> (model/ep_moe_mlp.hpp: the router and
// the shared expert whole, E/EP experts, all-to-alls to the other ranks of the group). The walk:
//   Family<Cfg, Moe> with moe_type Moe   Family<Cfg, ep_moe_mlp<Moe, EP>> (moe_gpt, moe_llama:
//                                        the model type a user builds by hand for expert_parallel_step)
//   sequential, named, residual, repeat, branch_sum   their children mapped
//   moe_mlp<…>                           ep_moe_mlp<moe_mlp<…>, EP>
//   any other layer                      itself (it runs whole on every rank)
// With EP = 1 the model is itself. Parameter names are unchanged; the experts' tensors hold this
// rank's E/EP experts (the ones [r·E/EP, (r+1)·E/EP) of the single-process tensor of that name).
// ep_facts<Model> says what the walk found: how many moe_mlp layers (repeats counted), and
// whether EP divides the experts of each; plan<> reports those as errors at the user's line.
// moe_mlp and ep_moe_mlp are only declared here, so that plan<> does not pull in the MoE kernels:
// a model holding moe_mlp has included model/moe.hpp, and moe_gpt.hpp, moe_llama.hpp and
// weft/model.hpp include model/ep_moe_mlp.hpp (include it yourself for a composition of your own).
#include "weft/comm/all_to_all.hpp"           // all_to_all_communicator
#include "weft/core/fixed_string.hpp"         // fixed_string
#include "weft/model/named.hpp"               // named
#include "weft/model/parallel_branches.hpp"   // branch_sum
#include "weft/model/repeat.hpp"              // repeat
#include "weft/model/residual.hpp"            // residual
#include "weft/model/sequential.hpp"          // sequential
#include "weft/parallel/strategy.hpp"         // the part protocol, rank_coords

#include <cstddef>
#include <type_traits>

namespace weft {

template <std::size_t C, std::size_t Experts, std::size_t TopK, std::size_t Ffn, class... Options>
struct moe_mlp;  // model/moe.hpp
template <class Moe, std::size_t EP>
struct ep_moe_mlp;  // model/ep_moe_mlp.hpp
template <class Local, all_to_all_communicator Comm>
class expert_parallel_local;  // exec/expert_parallel_local.hpp (weft/exec.hpp includes it)

namespace detail {

// named<Name, L>, recognised without deducing the fixed_string (as recompute_map does).
template <class L>
concept ep_named = requires {
  L::name;
  typename L::inner;
  typename L::weft_named_tag;
};

// A model family Family<Cfg, Moe> built around one MoE layer type (moe_gpt, moe_llama).
template <class M>
struct ep_family : std::false_type {};
template <template <class, class> class Family, class Cfg, class Moe>
  requires requires { typename Family<Cfg, Moe>::moe_type; } && std::is_same_v<typename Family<Cfg, Moe>::moe_type, Moe>
struct ep_family<Family<Cfg, Moe>> : std::true_type {
  template <class NewMoe>
  using with = Family<Cfg, NewMoe>;
  using moe = Moe;
};

template <class L>
struct is_moe_mlp : std::false_type {};
template <std::size_t C, std::size_t E, std::size_t K, std::size_t F, class... Os>
struct is_moe_mlp<moe_mlp<C, E, K, F, Os...>> : std::true_type {};

// The map and its facts: `type`, `moe_layers` (moe_mlp layers, repeats counted), `routed`
// (elements one token sends to its experts, over all layers: the sum of top_k · width),
// `expert_elements` (the experts' parameter elements, whole model), `divisible`
// (EP divides the experts of every one). Where EP does not divide, the layer keeps EP = 1 so that
// the only message is plan<>'s.
template <class L, std::size_t EP>
struct ep_map {
  using type = L;
  static constexpr std::size_t moe_layers = 0;
  static constexpr std::size_t routed = 0;
  static constexpr std::size_t expert_elements = 0;
  static constexpr bool divisible = true;
};
template <class L, std::size_t EP>
  requires is_moe_mlp<L>::value
struct ep_map<L, EP> {
  static constexpr bool divisible = EP > 0 && L::experts % EP == 0;
  using type = ep_moe_mlp<L, (divisible ? EP : 1)>;
  static constexpr std::size_t moe_layers = 1;
  static constexpr std::size_t routed = L::top_k * L::width;
  static constexpr std::size_t expert_elements = L::experts * (L::expert_in * L::width + L::width * L::ffn);
};
template <class L, std::size_t EP>
  requires ep_family<L>::value
struct ep_map<L, EP> {
  using inner = ep_map<typename ep_family<L>::moe, EP>;
  using type = typename ep_family<L>::template with<typename inner::type>;
  static constexpr std::size_t moe_layers = inner::moe_layers * L::depth;
  static constexpr std::size_t routed = inner::routed * L::depth;
  static constexpr std::size_t expert_elements = inner::expert_elements * L::depth;
  static constexpr bool divisible = inner::divisible;
};
template <class... Ls, std::size_t EP>
struct ep_map<sequential<Ls...>, EP> {
  using type = sequential<typename ep_map<Ls, EP>::type...>;
  static constexpr std::size_t moe_layers = (std::size_t{0} + ... + ep_map<Ls, EP>::moe_layers);
  static constexpr std::size_t routed = (std::size_t{0} + ... + ep_map<Ls, EP>::routed);
  static constexpr std::size_t expert_elements = (std::size_t{0} + ... + ep_map<Ls, EP>::expert_elements);
  static constexpr bool divisible = (ep_map<Ls, EP>::divisible && ...);
};
template <class... Fs, std::size_t EP>
struct ep_map<branch_sum<Fs...>, EP> {
  using type = branch_sum<typename ep_map<Fs, EP>::type...>;
  static constexpr std::size_t moe_layers = (std::size_t{0} + ... + ep_map<Fs, EP>::moe_layers);
  static constexpr std::size_t routed = (std::size_t{0} + ... + ep_map<Fs, EP>::routed);
  static constexpr std::size_t expert_elements = (std::size_t{0} + ... + ep_map<Fs, EP>::expert_elements);
  static constexpr bool divisible = (ep_map<Fs, EP>::divisible && ...);
};
template <class L, std::size_t EP>
  requires ep_named<L>
struct ep_map<L, EP> {
  using type = named<L::name, typename ep_map<typename L::inner, EP>::type>;
  static constexpr std::size_t moe_layers = ep_map<typename L::inner, EP>::moe_layers;
  static constexpr std::size_t routed = ep_map<typename L::inner, EP>::routed;
  static constexpr std::size_t expert_elements = ep_map<typename L::inner, EP>::expert_elements;
  static constexpr bool divisible = ep_map<typename L::inner, EP>::divisible;
};
template <class Inner, std::size_t EP>
struct ep_map<residual<Inner>, EP> {
  using type = residual<typename ep_map<Inner, EP>::type>;
  static constexpr std::size_t moe_layers = ep_map<Inner, EP>::moe_layers;
  static constexpr std::size_t routed = ep_map<Inner, EP>::routed;
  static constexpr std::size_t expert_elements = ep_map<Inner, EP>::expert_elements;
  static constexpr bool divisible = ep_map<Inner, EP>::divisible;
};
template <std::size_t N, class Block, std::size_t First, std::size_t EP>
struct ep_map<repeat<N, Block, First>, EP> {
  using type = repeat<N, typename ep_map<Block, EP>::type, First>;
  static constexpr std::size_t moe_layers = N * ep_map<Block, EP>::moe_layers;
  static constexpr std::size_t routed = N * ep_map<Block, EP>::routed;
  static constexpr std::size_t expert_elements = N * ep_map<Block, EP>::expert_elements;
  static constexpr bool divisible = ep_map<Block, EP>::divisible;
};

}  // namespace detail

/// What expert parallelism finds in `Model` for a degree `EP` (see the top of the file).
template <class Model, std::size_t EP>
struct ep_facts {
  /// moe_mlp layers in the model (each block's counted).
  static constexpr std::size_t moe_layers = detail::ep_map<Model, EP>::moe_layers;
  /// EP divides the experts of every moe_mlp.
  static constexpr bool experts_divisible = detail::ep_map<Model, EP>::divisible;
  /// Elements one token's routed rows hold, summed over the moe_mlp layers (top_k · width each):
  /// what a dispatch all-to-all carries per token and layer stack.
  static constexpr std::size_t routed_elements = detail::ep_map<Model, EP>::routed;
  /// Parameter elements of all experts of the whole model (E · (expert_in · C + C · ffn) per layer).
  static constexpr std::size_t expert_elements = detail::ep_map<Model, EP>::expert_elements;
};

/// The model one of `EP` expert-parallel ranks holds (see the top of the file); `Model` at EP = 1.
template <class Model, std::size_t EP>
using ep_model_t = std::conditional_t<EP == 1, Model, typename detail::ep_map<Model, EP>::type>;

// ---- the strategy part ----

namespace detail {
template <class Model, std::size_t EP>
struct ep_model_check {
  // Expert parallelism splits the experts of moe_mlp layers: it needs some, and whole blocks of
  // them. (if constexpr: without expert parallelism the model is not walked at all)
  static constexpr bool moe_found = [] {
    if constexpr (EP == 1) return true;
    else return ep_facts<Model, EP>::moe_layers > 0;
  }();
  static_assert(moe_found, "weft::plan: expert_parallel with ep > 1 needs mixture-of-experts layers, but the model has no moe_mlp. Build the model with moe_mlp (moe_gpt, moe_llama, or a sequential composition holding moe_mlp), or drop expert_parallel (or give its axis size 1).");
  static constexpr bool experts_divisible = [] {
    if constexpr (EP == 1) return true;
    else return ep_facts<Model, EP>::experts_divisible;
  }();
  static_assert(experts_divisible, "weft::plan: the number of experts is not divisible by the expert-parallel degree. Choose an ep that divides the experts of every moe_mlp (each rank holds experts / ep of them).");
  static constexpr bool ok = moe_found && experts_divisible;
};
}  // namespace detail

/// Expert parallelism along mesh axis `Axis` (GShard, Switch Transformer): the experts of every
/// mixture-of-experts layer (moe_mlp) are dealt out over the axis's ranks in blocks of E/ep, each
/// rank brings its own tokens, and all-to-alls carry the routed rows to their experts and back.
/// A strategy part like any other (strategy.hpp's part protocol), written entirely here:
///   rank order 200       between tensor (100) and data parallelism (300): the ranks with the
///                        same (pp, dp, tp index) form an expert group;
///   splits data          every expert rank reads its own rows (distributed_step's data_rank);
///   rank_model           each moe_mlp<…> as ep_moe_mlp<…, ep> (ep_model_t above);
///   model_check          the model has moe_mlp layers, and ep divides their experts;
///   local_step           expert_parallel_local (exec/expert_parallel_local.hpp) around the
///                        local step: the expert group bound, dense gradients summed over it;
///   communicator_check   the communicator has all_to_all (all_to_all_communicator).
/// Composes with data_parallel (zero<0> to zero<3>), tensor_parallel, with or without
/// sequence_parallel (the mixture of experts replicated over the tp group), and pipeline.
template <fixed_string Axis>
struct expert_parallel {
  using weft_part_tag = void;
  static constexpr fixed_string family = "expert_parallel";
  static constexpr auto axis_name = Axis;
  static constexpr std::size_t rank_order = 200;
  static constexpr bool splits_data = true;
  template <class Model, std::size_t N>
  using rank_model = ep_model_t<Model, N>;
  template <class Model, std::size_t N>
  using model_check = detail::ep_model_check<Model, N>;
  template <class Local, class Comm>
  using local_step = expert_parallel_local<Local, Comm>;
  template <class Comm>
  struct communicator_check {
    static constexpr bool ok = all_to_all_communicator<Comm>;
    static_assert(ok, "weft::expert_parallel: needs a communicator with all_to_all and all_to_all_v (mpi_communicator has them). Run the plan over mpi::world, or drop expert_parallel.");
  };
};

/// The expert-parallel degree of a strategy (1 without expert_parallel).
template <class Strategy>
inline constexpr std::size_t ep_degree = Strategy::template degree_of<"expert_parallel">;

/// This rank's index in its expert group.
constexpr std::size_t expert_index(const rank_coords& c) { return c["expert_parallel"]; }

}  // namespace weft
