#pragma once
// ---- parallel strategies as types ----
// strategy<mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>,
//          tensor_parallel<"tp", sequence_parallel>,
//          pipeline<"pp", one_f_one_b, microbatches<8>>,
//          data_parallel<"dp", zero<1>>,
//          recompute<selective>>
// names, for each mesh axis, what runs along it. Any subset of the parts, in any order;
// one mesh axis may be left without a part when there is no data_parallel: it is then
// data-parallel with the defaults (zero<0>, 25 MiB buckets), so `strategy<mesh<axis<"dp">>>`
// is plain data parallelism (one rank in a single process). Every combination is checked
// here, where it is written; what depends on the model (divisibility, memory) is checked
// by plan<>. Ranks follow Megatron-LM's order, tensor-parallel index fastest, with the
// ranks of any other part placed by its rank_order (expert_parallel, parallel/expert_parallel.hpp,
// between tensor and data parallelism):
//   rank = (pp_index * dp + dp_index) * tp + tp_index
// The parts are open: any type that follows the part protocol (below) is one, so a new kind of
// parallelism is a header of its own, not an edit of this file.
#include "weft/core/constant.hpp"      // dynamic
#include "weft/core/diagnostics.hpp"   // diag::at_least, diag::at_most
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/parallel/mesh.hpp"      // mesh, mesh_like
#include "weft/parallel/schedule.hpp"  // gpipe, one_f_one_b, interleaved, schedule_tag, detail::pipeline_checks

#include <cstddef>
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace weft {

// ---- options of the parts ----

/// ZeRO stage of data parallelism (Rajbhandari et al. 2020): 0 none, 1 optimizer state,
/// 2 + gradients, 3 + parameters sharded over the data-parallel ranks.
template <std::size_t Stage>
struct zero {
  using weft_zero_tag = void;
  static constexpr bool stage_valid = diag::at_most<Stage, 3>;
  static_assert(stage_valid, "weft::zero: ZeRO has stages 0 to 3. Use zero<0>, zero<1>, zero<2> or zero<3>.");
  static constexpr std::size_t stage = Stage;
};

/// Size of the gradient buckets reduced together over the data-parallel group.
template <std::size_t Bytes>
struct bucket_bytes {
  using weft_bucket_bytes_tag = void;
  static constexpr bool bytes_positive = diag::at_least<Bytes, 1>;
  static_assert(bytes_positive,
                "weft::bucket_bytes: a gradient bucket of 0 bytes. Use bucket_bytes<N> with N >= 1 (the default is "
                "25 MiB).");
  static constexpr std::size_t bytes = Bytes;
};

/// Micro-batches per optimizer step in a pipeline (each of the plan's batch<micro<B>, ...>).
template <std::size_t M>
struct microbatches {
  using weft_microbatches_tag = void;
  static constexpr bool count_positive = diag::at_least<M, 1>;
  static_assert(count_positive, "weft::microbatches: 0 micro-batches. Use microbatches<M> with M >= 1.");
  static constexpr std::size_t count = M;
};

/// Tensor parallelism also splits the sequence axis of the norms and dropouts (Korthikanti
/// et al. 2022): all-reduces become all-gathers and reduce-scatters.
struct sequence_parallel {
  using weft_sequence_parallel_tag = void;
};

// ---- activation recomputation ----

/// Which activations are recomputed in backward instead of kept.
enum class recompute_kind : std::uint8_t { none, selective, full };

/// Keep every activation.
struct none {
  static constexpr recompute_kind kind = recompute_kind::none;
};
/// Recompute the attention core (softmax, its dropout, scores): Korthikanti et al. 2022.
struct selective {
  static constexpr recompute_kind kind = recompute_kind::selective;
};
/// Keep only each layer's input; recompute the whole layer in backward.
struct full {
  static constexpr recompute_kind kind = recompute_kind::full;
};

namespace detail {
template <class T>
concept recompute_policy =
    std::is_same_v<T, none> || std::is_same_v<T, selective> || std::is_same_v<T, full>;
}  // namespace detail

/// The recomputation policy: recompute<none>, recompute<selective> or recompute<full>.
template <class Policy>
struct recompute {
  using weft_recompute_tag = void;
  static constexpr bool policy_known = detail::recompute_policy<Policy>;
  static_assert(policy_known, "weft::recompute: unknown policy. Use recompute<none>, recompute<selective> or recompute<full>.");
  using policy = Policy;
};

// ---- the attention core's memory ----

/// Every causal attention keeps its rows' log-sum-exp and its output instead of the (batch, heads,
/// seq, seq) probabilities, and backward recomputes them (FlashAttention; model/flash_attention.hpp).
/// Attention's memory then grows with the sequence, not its square; on the CUDA backend it runs
/// the tensor-core flash kernels. Written among a strategy's parts: strategy<Mesh, ..., flash_attention>.
struct flash_attention {
  using weft_flash_attention_tag = void;
};

// ---- option look-up ----

namespace detail {

template <class T> inline constexpr bool is_zero_v = requires { typename T::weft_zero_tag; };
template <class T> inline constexpr bool is_bucket_v = requires { typename T::weft_bucket_bytes_tag; };
template <class T> inline constexpr bool is_microbatches_v = requires { typename T::weft_microbatches_tag; };
template <class T> inline constexpr bool is_sequence_parallel_v = requires { typename T::weft_sequence_parallel_tag; };
template <class T> inline constexpr bool is_schedule_v = schedule_tag<T>;
template <class T> inline constexpr bool is_recompute_v = requires { typename T::weft_recompute_tag; };
template <class T> inline constexpr bool is_precision_v = requires { typename T::weft_precision_tag; };
template <class T> inline constexpr bool is_flash_attention_v = requires { typename T::weft_flash_attention_tag; };

template <class T> struct is_zero : std::bool_constant<is_zero_v<T>> {};
template <class T> struct is_bucket : std::bool_constant<is_bucket_v<T>> {};
template <class T> struct is_microbatches : std::bool_constant<is_microbatches_v<T>> {};
template <class T> struct is_sequence_parallel : std::bool_constant<is_sequence_parallel_v<T>> {};
template <class T> struct is_schedule : std::bool_constant<is_schedule_v<T>> {};
template <class T> struct is_recompute : std::bool_constant<is_recompute_v<T>> {};
template <class T> struct is_precision : std::bool_constant<is_precision_v<T>> {};
template <class T> struct is_flash_attention : std::bool_constant<is_flash_attention_v<T>> {};

// How many of Ts satisfy Is.
template <template <class> class Is, class... Ts>
inline constexpr std::size_t count_of = (std::size_t{0} + ... + (Is<Ts>::value ? 1u : 0u));

// The first of Ts that satisfies Is, else Default.
template <template <class> class Is, class Default, class... Ts>
struct first_of {
  using type = Default;
};
template <template <class> class Is, class Default, class T, class... Ts>
struct first_of<Is, Default, T, Ts...>
    : std::conditional_t<Is<T>::value, std::type_identity<T>, first_of<Is, Default, Ts...>> {};
template <template <class> class Is, class Default, class... Ts>
using first_of_t = typename first_of<Is, Default, Ts...>::type;

// Each of Ts satisfies one of the Is..., and none of those twice.
template <class T, template <class> class... Is>
inline constexpr bool recognised = (Is<T>::value || ...);
template <template <class> class... Is>
struct options_of {
  template <class... Ts>
  static constexpr bool valid = ((recognised<Ts, Is...>) && ... && true) && ((count_of<Is, Ts...> <= 1) && ...);
};

}  // namespace detail

// ---- the parts ----
// A strategy part is any type with `weft_part_tag` and the members of the part protocol; the
// strategy holds no list of them, so a new kind of parallelism is a new header (expert_parallel<>
// is one: parallel/expert_parallel.hpp). docs/parallelism.md, "Writing a strategy part":
//   family        fixed_string naming the kind ("data_parallel"); a strategy holds at most one part
//                 of a family, and rank_coords and degree_of<> look a part up by it
//   axis_name     the mesh axis it runs along
//   rank_order    its place in the rank order: the part with the lowest varies fastest
//                 (tensor_parallel 100, data_parallel 300, pipeline 400; expert_parallel 200)
//   splits_data   whether each index along the axis reads its own rows of the global batch
// and, optionally:
//   template <class Model, std::size_t N> using rank_model = …;   the model one of N ranks holds
//   template <class Model, std::size_t N> struct model_check;     its `ok`, with static_asserts
//                                                                  that plan<> instantiates
//   template <class Local, class Comm> using local_step = …;       a wrapper of the local step,
//                                                                  built as W(group, std::move(local))
//   template <class Comm> struct communicator_check;               its `ok`, and a static_assert
//                                                                  saying what the part needs
// Only the data-parallel axis may be sized at run time.

/// Data parallelism along mesh axis `Axis`, with optional zero<S> (default 0) and
/// bucket_bytes<N> (default 25 MiB).
template <fixed_string Axis, class... Options>
struct data_parallel {
  using weft_part_tag = void;
  static constexpr fixed_string family = "data_parallel";
  static constexpr auto axis_name = Axis;
  static constexpr std::size_t rank_order = 300;
  static constexpr bool splits_data = true;
  static constexpr bool options_valid = detail::options_of<detail::is_zero, detail::is_bucket>::template valid<Options...>;
  static_assert(options_valid,
                "weft::data_parallel: an option is repeated or is not one of zero<S>, bucket_bytes<N>. Give each of "
                "them at most once.");
  static constexpr std::size_t zero_stage = detail::first_of_t<detail::is_zero, zero<0>, Options...>::stage;
  static constexpr std::size_t bucket_bytes =
      detail::first_of_t<detail::is_bucket, weft::bucket_bytes<(std::size_t{25} << 20)>, Options...>::bytes;
};

/// Tensor parallelism (Megatron-LM's column/row splits) along mesh axis `Axis`, optionally
/// with sequence_parallel.
template <fixed_string Axis, class... Options>
struct tensor_parallel {
  using weft_part_tag = void;
  static constexpr fixed_string family = "tensor_parallel";
  static constexpr auto axis_name = Axis;
  static constexpr std::size_t rank_order = 100;
  static constexpr bool splits_data = false;
  static constexpr bool options_valid = detail::options_of<detail::is_sequence_parallel>::template valid<Options...>;
  static_assert(options_valid,
                "weft::tensor_parallel: an option is repeated or is not sequence_parallel. Write tensor_parallel<\"tp\"> "
                "or tensor_parallel<\"tp\", sequence_parallel>.");
  static constexpr bool sequence_parallel = detail::count_of<detail::is_sequence_parallel, Options...> == 1;
};

/// Pipeline parallelism along mesh axis `Axis`: a schedule tag (gpipe, one_f_one_b — the
/// default — or interleaved<V>) and microbatches<M> (default 1).
template <fixed_string Axis, class... Options>
struct pipeline {
  using weft_part_tag = void;
  static constexpr fixed_string family = "pipeline";
  static constexpr auto axis_name = Axis;
  static constexpr std::size_t rank_order = 400;
  static constexpr bool splits_data = false;
  static constexpr bool options_valid =
      detail::options_of<detail::is_schedule, detail::is_microbatches>::template valid<Options...>;
  static_assert(options_valid,
                "weft::pipeline: an option is repeated or is not one of gpipe, one_f_one_b, interleaved<V>, "
                "microbatches<M>. Give one schedule and one microbatches<M> at most.");
  using schedule_type = detail::first_of_t<detail::is_schedule, one_f_one_b, Options...>;
  static constexpr std::size_t microbatches = detail::first_of_t<detail::is_microbatches, weft::microbatches<1>, Options...>::count;
  static constexpr std::size_t chunks = schedule_type::chunks;
  // The schedule states this too (make_schedule); said here, where the pipeline is written.
  static constexpr bool enough_chunks =
      detail::tag_kind<schedule_type>::value != schedule_kind::interleaved || diag::at_least<chunks, 2>;
  static_assert(enough_chunks,
                "weft::pipeline: interleaved needs at least 2 model chunks per stage. Use interleaved<V> with V >= 2, "
                "or one_f_one_b.");
  static constexpr bool valid = options_valid && enough_chunks && microbatches >= 1;
};

/// Where one rank sits in the mesh: its index along the axis of each part, looked up by the
/// part's family (`c["expert_parallel"]`; 0 for a part the strategy does not have), with named
/// accessors for the built-in parts. Two coordinates are equal when every index is.
class rank_coords {
 public:
  static constexpr std::size_t capacity = 8;  ///< parts of one strategy, at most
  constexpr rank_coords() = default;
  /// {pipeline stage, data-parallel replica, tensor-parallel shard}.
  constexpr rank_coords(std::size_t pp, std::size_t dp, std::size_t tp) {
    set("pipeline", pp).set("data_parallel", dp).set("tensor_parallel", tp);
  }
  /// Sets the index along the axis of the part of `family`.
  constexpr rank_coords& set(std::string_view family, std::size_t index) {
    for (std::size_t i = 0; i < n_; ++i)
      if (family_[i] == family) return index_[i] = index, *this;
    if (n_ < capacity) family_[n_] = family, index_[n_++] = index;
    return *this;
  }
  /// The index along the axis of the part of `family` (0 when the strategy has none).
  constexpr std::size_t operator[](std::string_view family) const {
    for (std::size_t i = 0; i < n_; ++i)
      if (family_[i] == family) return index_[i];
    return 0;
  }
  constexpr std::size_t pp() const { return (*this)["pipeline"]; }         ///< pipeline stage
  constexpr std::size_t dp() const { return (*this)["data_parallel"]; }    ///< data-parallel replica
  constexpr std::size_t tp() const { return (*this)["tensor_parallel"]; }  ///< tensor-parallel shard
  /// The families set, in the order set.
  constexpr std::size_t size() const { return n_; }
  constexpr std::string_view family(std::size_t i) const { return family_[i]; }

  friend constexpr bool operator==(const rank_coords& a, const rank_coords& b) {
    for (std::size_t i = 0; i < a.n_; ++i)
      if (b[a.family_[i]] != a.index_[i]) return false;
    for (std::size_t i = 0; i < b.n_; ++i)
      if (a[b.family_[i]] != b.index_[i]) return false;
    return true;
  }

 private:
  std::string_view family_[capacity]{};
  std::size_t index_[capacity]{};
  std::size_t n_ = 0;
};

namespace detail {

template <class T> inline constexpr bool is_part_v = requires { typename T::weft_part_tag; };
template <class T> struct is_part : std::bool_constant<is_part_v<T>> {};

// The members every part has (see the top of this section).
template <class P>
concept part_protocol = is_part_v<P> && requires {
  { P::family.view() } -> std::convertible_to<std::string_view>;
  { P::axis_name.view() } -> std::convertible_to<std::string_view>;
  { P::rank_order } -> std::convertible_to<std::size_t>;
  { P::splits_data } -> std::convertible_to<bool>;
};
template <class P> struct is_sound_part : std::bool_constant<part_protocol<P>> {};

// A part of family `F` (a predicate for first_of_t and count_of). (A function, not a lambda in
// the template argument: nvcc 13 does not take the latter.)
template <class T, fixed_string F>
consteval bool part_of_family() {
  if constexpr (part_protocol<T>) return T::family.view() == F.view();
  else return false;
}
template <fixed_string F>
struct family_is {
  template <class T>
  struct test : std::bool_constant<part_of_family<T, F>()> {};
};

// Stand-ins for absent built-in parts: the same members, no axis.
struct no_data_part {
  static constexpr fixed_string axis_name = "";
  static constexpr std::size_t zero_stage = 0;
  static constexpr std::size_t bucket_bytes = std::size_t{25} << 20;
};
struct no_tensor_part {
  static constexpr fixed_string axis_name = "";
  static constexpr bool sequence_parallel = false;
};
struct no_pipeline_part {
  static constexpr fixed_string axis_name = "";
  using schedule_type = one_f_one_b;
  static constexpr std::size_t microbatches = 1;
  static constexpr std::size_t chunks = 1;
  static constexpr bool valid = true;
};
struct no_precision {
  using type = void;
};

template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};
template <class T, class List>
struct prepend;
template <class T, class... Ts>
struct prepend<T, type_list<Ts...>> {
  using type = type_list<T, Ts...>;
};
// The Ts that satisfy Is, in order.
template <template <class> class Is, class... Ts>
struct filter_list {
  using type = type_list<>;
};
template <template <class> class Is, class T, class... Ts>
struct filter_list<Is, T, Ts...> {
  using rest = typename filter_list<Is, Ts...>::type;
  using type = std::conditional_t<Is<T>::value, typename prepend<T, rest>::type, rest>;
};

// A strategy error whose text carries a name. Not constexpr on purpose: reaching a call in a
// constant evaluation stops the compilation, and g++ prints `Message` (the template
// argument). Only ever called from consteval checks.
template <fixed_string Message>
void strategy_error() {}

// `Ok`, or a compile error: "<Part> names the axis "<Axis>", which the mesh does not have."
template <fixed_string Part, fixed_string Axis, bool Ok>
consteval bool check_axis_in_mesh() {
  if constexpr (!Ok)
    strategy_error<fixed_string("weft::strategy: ") + Part + fixed_string(" names the axis \"") + Axis +
                   fixed_string("\", which the mesh does not have. Use one of the mesh's axis names.")>();
  return Ok;
}
template <fixed_string Axis, bool Ok>
consteval bool check_axis_once() {
  if constexpr (!Ok)
    strategy_error<fixed_string("weft::strategy: two parts use the axis \"") + Axis +
                   fixed_string("\". Give each part its own mesh axis.")>();
  return Ok;
}
template <fixed_string Part, fixed_string Axis, bool Ok>
consteval bool check_axis_static() {
  if constexpr (!Ok)
    strategy_error<fixed_string("weft::strategy: ") + Part + fixed_string(" uses the axis \"") + Axis +
                   fixed_string("\", whose size is dynamic. Give it a static size, e.g. axis<\"") + Axis +
                   fixed_string("\", 2>; only the data-parallel axis may be dynamic.")>();
  return Ok;
}
template <fixed_string Part, bool Ok>
consteval bool check_family_once() {
  if constexpr (!Ok)
    strategy_error<fixed_string("weft::strategy: ") + Part +
                   fixed_string(" is given twice. Give each part at most once.")>();
  return Ok;
}
template <fixed_string Axis, bool Ok>
consteval bool check_axis_used() {
  if constexpr (!Ok)
    strategy_error<fixed_string("weft::strategy: the mesh axis \"") + Axis +
                   fixed_string("\" is used by no part. Give it a part or remove it from the mesh (without a "
                                "data_parallel part, one axis may be left: it is then data-parallel).")>();
  return Ok;
}
// What a strategy's sound parts say, before any check: which mesh axes they use, and the rank
// layout they make. Kept apart from strategy<> so that its checks can call these functions (a
// class's own member functions are not usable in its static initialisers).
template <class Mesh, class List>
struct strategy_parts;
template <class Mesh, class... Ps>
struct strategy_parts<Mesh, type_list<Ps...>> {
  static constexpr std::size_t n = sizeof...(Ps);
  static constexpr std::string_view families[n + 1] = {Ps::family.view()..., {}};
  static constexpr std::string_view axes[n + 1] = {Ps::axis_name.view()..., {}};
  static constexpr std::size_t orders[n + 1] = {std::size_t{Ps::rank_order}..., 0};
  static constexpr bool splits[n + 1] = {bool{Ps::splits_data}..., false};

  static constexpr std::size_t count_family(std::string_view f) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < n; ++i) c += families[i] == f ? 1u : 0u;
    return c;
  }
  // Index of the first part of family `f` (n when none).
  static constexpr std::size_t find(std::string_view f) {
    for (std::size_t i = 0; i < n; ++i)
      if (families[i] == f) return i;
    return n;
  }
  // How many parts use the mesh axis `name`.
  static constexpr std::size_t uses(std::string_view name) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < n; ++i) c += axes[i] == name ? 1u : 0u;
    return c;
  }
  // Index of the mesh's first axis without a part (Mesh::rank when there is none).
  static constexpr std::size_t first_unused() {
    for (std::size_t i = 0; i < Mesh::rank; ++i)
      if (uses(Mesh::names[i]) == 0) return i;
    return Mesh::rank;
  }
  // Size of mesh axis `name`; 0 when absent.
  static constexpr std::size_t size_of(std::string_view name) {
    for (std::size_t i = 0; i < Mesh::rank; ++i)
      if (Mesh::names[i] == name) return Mesh::sizes[i];
    return 0;
  }

  // ---- the checks, each reported once ----
  template <class P>
  static consteval bool in_mesh() {
    return check_axis_in_mesh<P::family, P::axis_name, Mesh::template contains<P::axis_name>>();
  }
  static consteval bool check_in_mesh() { return (in_mesh<Ps>() && ... && true); }
  // A shared axis is reported for the first part on it.
  template <std::size_t I, class P>
  static consteval bool alone() {
    constexpr bool first = [] {
      for (std::size_t j = 0; j < I; ++j)
        if (axes[j] == P::axis_name.view()) return false;
      return true;
    }();
    return check_axis_once<P::axis_name, !first || uses(P::axis_name.view()) == 1>();
  }
  template <std::size_t... I>
  static consteval bool check_alone(std::index_sequence<I...>) {
    return (alone<I, Ps>() && ... && true);
  }
  template <std::size_t I, class P>
  static consteval bool family_once() {
    constexpr bool first = find(P::family.view()) == I;
    return check_family_once<P::family, !first || count_family(P::family.view()) == 1>();
  }
  template <std::size_t... I>
  static consteval bool check_families(std::index_sequence<I...>) {
    return (family_once<I, Ps>() && ... && true);
  }
  template <class P>
  static consteval bool static_size() {
    constexpr bool ok = P::family.view() == std::string_view("data_parallel") ||
                        Mesh::template size_of<P::axis_name> != dynamic;
    return check_axis_static<P::family, P::axis_name, ok>();
  }
  static consteval bool check_static() { return (static_size<Ps>() && ... && true); }
  // An axis without a part is fine only as the implicit data-parallel axis: the first such
  // axis, and only when there is no data_parallel part.
  template <std::size_t I>
  static consteval bool check_mesh_axis() {
    using A = typename Mesh::template axis_at<I>;
    constexpr bool used = uses(A::name.view()) > 0 || (count_family("data_parallel") == 0 && I == first_unused());
    return check_axis_used<A::name, used>();
  }
  template <std::size_t... I>
  static consteval bool check_mesh_axes(std::index_sequence<I...>) {
    return (check_mesh_axis<I>() && ... && true);
  }

  // ---- the rank layout: a mixed radix over the parts, in rank order ----
  // Degree of part i; `dyn` for the axis sized at run time, 1 for an axis the mesh lacks.
  static constexpr std::size_t degree(std::size_t i, std::size_t dyn) {
    const std::size_t s = size_of(axes[i]);
    return s == 0 ? 1 : s == dynamic ? dyn : s;
  }
  // Part j varies faster than part i.
  static constexpr bool before(std::size_t j, std::size_t i) {
    return orders[j] < orders[i] || (orders[j] == orders[i] && j < i);
  }
  static constexpr std::size_t stride(std::size_t i, std::size_t dyn) {
    std::size_t s = 1;
    for (std::size_t j = 0; j < n; ++j)
      if (before(j, i)) s *= degree(j, dyn);
    return s;
  }
  static constexpr rank_coords coords(std::size_t rank, std::size_t dyn) {
    rank_coords c;
    for (std::size_t i = 0; i < n; ++i) c.set(families[i], rank / stride(i, dyn) % degree(i, dyn));
    return c;
  }
  static constexpr std::size_t rank_of(const rank_coords& c, std::size_t dyn) {
    std::size_t r = 0;
    for (std::size_t i = 0; i < n; ++i) r += c[families[i]] * stride(i, dyn);
    return r;
  }
  static constexpr std::size_t data_shards(std::size_t dyn) {
    std::size_t s = 1;
    for (std::size_t i = 0; i < n; ++i)
      if (splits[i]) s *= degree(i, dyn);
    return s;
  }
  static constexpr std::size_t data_rank(const rank_coords& c, std::size_t dyn) {
    std::size_t r = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!splits[i]) continue;
      std::size_t s = 1;
      for (std::size_t j = 0; j < n; ++j)
        if (splits[j] && before(j, i)) s *= degree(j, dyn);
      r += c[families[i]] * s;
    }
    return r;
  }
  // Ranks that differ only along part `f`'s axis share this colour (their group).
  static constexpr std::size_t group_color(const rank_coords& c, std::string_view f, std::size_t dyn) {
    const std::size_t i = find(f);
    return i == n ? rank_of(c, dyn) : rank_of(c, dyn) - c[f] * stride(i, dyn);
  }
};

// The parts the layout runs: the written ones, and the implicit data-parallel part on the first
// mesh axis without a part when no data_parallel is written.
template <class Mesh, class Written, bool Implicit = (strategy_parts<Mesh, Written>::count_family("data_parallel") == 0 &&
                                                      strategy_parts<Mesh, Written>::first_unused() < Mesh::rank)>
struct layout_parts {
  using type = Written;
};
template <class Mesh, class... Ps>
struct layout_parts<Mesh, type_list<Ps...>, true> {
  using type = type_list<Ps..., data_parallel<Mesh::template axis_at<strategy_parts<Mesh, type_list<Ps...>>::first_unused()>::name>>;
};

// ---- the optional hooks of the parts ----
template <class Model, class P, std::size_t N>
struct apply_rank_model {
  using type = Model;
};
template <class Model, class P, std::size_t N>
  requires requires { typename P::template rank_model<Model, N>; }
struct apply_rank_model<Model, P, N> {
  using type = typename P::template rank_model<Model, N>;
};
template <class P, class Model, std::size_t N>
consteval bool part_fits_model() {
  if constexpr (requires { P::template model_check<Model, N>::ok; }) return P::template model_check<Model, N>::ok;
  else return true;
}
template <class P, class Comm>
consteval bool part_takes_communicator() {
  if constexpr (requires { P::template communicator_check<Comm>::ok; }) return P::template communicator_check<Comm>::ok;
  else return true;
}

// Whether part P declares a wrapper of the local step (its `local_step` hook).
template <template <class, class> class>
struct local_step_probe {};
template <class P>
inline constexpr bool declares_local_step = requires { typename local_step_probe<P::template local_step>; };

}  // namespace detail

/// A parallel strategy: a mesh and the parts that run along its axes.
template <mesh_like Mesh, class... Parts>
struct strategy {
  using weft_strategy_tag = void;
  using mesh_type = Mesh;

  // ---- validation of the parts themselves ----
  static constexpr bool parts_known =
      ((detail::is_part_v<Parts> || detail::is_recompute_v<Parts> || detail::is_precision_v<Parts> ||
        detail::is_flash_attention_v<Parts>) &&
       ... && true);
  static_assert(parts_known,
                "weft::strategy: an argument after the mesh is not a strategy part. Use data_parallel<>, "
                "tensor_parallel<>, pipeline<>, expert_parallel<>, a part of your own (a type with weft_part_tag), "
                "recompute<>, precision<> or flash_attention.");
  static constexpr bool parts_sound = ((!detail::is_part_v<Parts> || detail::part_protocol<Parts>) && ... && true);
  static_assert(parts_sound,
                "weft::strategy: a part (a type with weft_part_tag) lacks a member of the part protocol: family, "
                "axis_name, rank_order, splits_data. Give it those members (docs/parallelism.md, \"Writing a strategy "
                "part\").");
  static constexpr bool options_once =
      detail::count_of<detail::is_recompute, Parts...> <= 1 && detail::count_of<detail::is_precision, Parts...> <= 1 &&
      detail::count_of<detail::is_flash_attention, Parts...> <= 1;
  static_assert(options_once,
                "weft::strategy: recompute<>, precision<> or flash_attention is given twice. Give each at most once.");

  /// The parts as written (those that follow the part protocol).
  using written_parts = typename detail::filter_list<detail::is_sound_part, Parts...>::type;

 private:
  using found = detail::strategy_parts<Mesh, written_parts>;

 public:
  static constexpr bool parts_once = [] {
    if constexpr (parts_sound) return found::check_families(std::make_index_sequence<found::n>{});
    else return true;
  }();
  static constexpr bool fits_coords = found::n < rank_coords::capacity;
  static_assert(fits_coords, "weft::strategy: more than 7 parts. Give at most 7 parallel parts.");

  // ---- validation against the mesh, each reported once ----
  static constexpr bool axes_in_mesh = found::check_in_mesh();
  static constexpr bool axes_distinct = [] {
    if constexpr (axes_in_mesh) return found::check_alone(std::make_index_sequence<found::n>{});
    else return true;
  }();
  static constexpr bool axes_static = [] {
    if constexpr (axes_in_mesh) return found::check_static();
    else return true;
  }();
  // (if constexpr: a consteval call is evaluated even on the dead side of ||)
  static constexpr bool every_axis_used = [] {
    if constexpr (axes_in_mesh && axes_distinct) return found::check_mesh_axes(std::make_index_sequence<Mesh::rank>{});
    else return true;
  }();

  /// The parts the rank layout runs: the written ones, plus the implicit data-parallel part.
  using parts = typename detail::layout_parts<Mesh, written_parts>::type;

 private:
  using layout = detail::strategy_parts<Mesh, parts>;
  using data_part = detail::first_of_t<detail::family_is<"data_parallel">::template test, detail::no_data_part, Parts...>;
  using tensor_part = detail::first_of_t<detail::family_is<"tensor_parallel">::template test, detail::no_tensor_part, Parts...>;
  using pipeline_part = detail::first_of_t<detail::family_is<"pipeline">::template test, detail::no_pipeline_part, Parts...>;

 public:
  // ---- any part, by family ----
  /// Whether a part of `Family` is written.
  template <fixed_string Family>
  static constexpr bool has_part = found::count_family(Family.view()) >= 1;
  /// The degree of the part of `Family` (its axis size; 1 when absent, `dynamic` for a
  /// data-parallel axis sized at run time).
  template <fixed_string Family>
  static constexpr std::size_t degree_of = [] {
    const std::size_t i = layout::find(Family.view());
    return i == layout::n ? std::size_t{1} : layout::degree(i, dynamic);
  }();
  /// The axis of the part of `Family` ("" when absent).
  template <fixed_string Family>
  static constexpr std::string_view axis_of = layout::axes[layout::find(Family.view())];

  // ---- the built-in parts, by name ----
  static constexpr bool has_data_parallel = has_part<"data_parallel">;
  static constexpr bool has_tensor_parallel = has_part<"tensor_parallel">;
  static constexpr bool has_pipeline = has_part<"pipeline">;
  /// Name of the data-parallel axis: the data_parallel part's, else the mesh axis without a
  /// part, else "" (no data parallelism: dp = 1).
  static constexpr std::string_view dp_axis = axis_of<"data_parallel">;
  /// Names of the tensor and pipeline axes ("" when absent).
  static constexpr std::string_view tp_axis = axis_of<"tensor_parallel">;
  static constexpr std::string_view pp_axis = axis_of<"pipeline">;

  /// Tensor-parallel degree (1 when absent).
  static constexpr std::size_t tp = degree_of<"tensor_parallel"> == dynamic ? 1 : degree_of<"tensor_parallel">;
  /// Pipeline stages (1 when absent).
  static constexpr std::size_t pp = degree_of<"pipeline"> == dynamic ? 1 : degree_of<"pipeline">;
  /// Data-parallel degree: the axis size, `dynamic` when the world decides, 1 without the axis.
  static constexpr std::size_t dp = degree_of<"data_parallel">;
  /// Ranks of one data-parallel replica: the product of every other part's degree.
  static constexpr std::size_t model_ranks = [] {
    std::size_t r = 1;
    for (std::size_t i = 0; i < layout::n; ++i)
      if (layout::families[i] != std::string_view("data_parallel")) r *= layout::degree(i, 1);
    return r;
  }();
  /// Ranks in the job (`dynamic` when dp is).
  static constexpr std::size_t world_size = dp == dynamic ? dynamic : dp * model_ranks;

  // ---- the built-in parts' settings ----
  static constexpr std::size_t zero_stage = data_part::zero_stage;
  static constexpr std::size_t bucket_bytes = data_part::bucket_bytes;
  static constexpr bool sequence_parallel = tensor_part::sequence_parallel;
  using schedule_type = typename pipeline_part::schedule_type;
  /// Micro-batches per step (1 without a pipeline) and model chunks per stage (V of interleaved<V>).
  static constexpr std::size_t microbatches = pipeline_part::microbatches;
  static constexpr std::size_t chunks = pipeline_part::chunks;
  using recompute_type = typename detail::first_of_t<detail::is_recompute, recompute<none>, Parts...>::policy;
  static constexpr recompute_kind recompute_policy = recompute_type::kind;
  /// Whether attention keeps row statistics instead of probabilities (the flash_attention option).
  static constexpr bool flash = detail::count_of<detail::is_flash_attention, Parts...> >= 1;
  /// The precision<> part, or a stand-in whose `type` is void.
  using precision_type = detail::first_of_t<detail::is_precision, detail::no_precision, Parts...>;

  // ---- the schedule's own checks (micro-batches against stages), once the part is sound ----
  static constexpr bool schedule_ok = [] {
    if constexpr (has_pipeline && pipeline_part::valid && axes_static && axes_in_mesh)
      return detail::pipeline_checks<schedule_type, pp, microbatches>::ok;
    else
      return true;
  }();

  /// All checks passed.
  static constexpr bool valid = parts_known && parts_sound && options_once && parts_once && fits_coords &&
                                axes_in_mesh && axes_distinct && axes_static && every_axis_used && schedule_ok;

  // ---- rank layout ----
  /// Data-parallel degree in a job of `world` ranks (0 when `world` does not fit the mesh).
  static constexpr std::size_t dp_size(std::size_t world) noexcept {
    if (dp != dynamic) return world == dp * model_ranks ? dp : 0;
    return world % model_ranks == 0 ? world / model_ranks : 0;
  }
  /// Mesh coordinates of `rank` when the data-parallel degree is `dp_n`: a mixed radix over the
  /// parts, the lowest rank_order fastest. With the built-in parts and expert_parallel:
  /// rank = ((pp·dp_n + dp)·ep + ep_index)·tp + tp_index.
  static constexpr rank_coords coords(std::size_t rank, std::size_t dp_n) noexcept { return layout::coords(rank, dp_n); }
  /// The rank at mesh coordinates `c` (inverse of coords).
  static constexpr std::size_t rank_of(const rank_coords& c, std::size_t dp_n) noexcept { return layout::rank_of(c, dp_n); }
  /// Shards of the global batch: the product of the degrees of the parts that split data.
  static constexpr std::size_t data_shards(std::size_t dp_n) noexcept { return layout::data_shards(dp_n); }
  /// The shard rank `c` reads (a mixed radix over the parts that split data).
  static constexpr std::size_t data_rank(const rank_coords& c, std::size_t dp_n) noexcept { return layout::data_rank(c, dp_n); }
  /// A colour shared by exactly the ranks that differ from `c` only along the axis of the part
  /// of `family` (for communicator::split; the key is c[family]).
  static constexpr std::size_t group_color(const rank_coords& c, std::string_view family, std::size_t dp_n) noexcept {
    return layout::group_color(c, family, dp_n);
  }

  // ---- the parts' hooks ----
 private:
  template <class Model, class List>
  struct fold_rank_model;
  template <class Model>
  struct fold_rank_model<Model, detail::type_list<>> {
    using type = Model;
  };
  template <class Model, class P, class... Ps>
  struct fold_rank_model<Model, detail::type_list<P, Ps...>> {
    using mapped = typename detail::apply_rank_model<Model, P, degree_of<P::family> == dynamic ? 1 : degree_of<P::family>>::type;
    using type = typename fold_rank_model<mapped, detail::type_list<Ps...>>::type;
  };
  template <class Model, class List>
  struct model_fits;
  template <class Model, class... Ps>
  struct model_fits<Model, detail::type_list<Ps...>> {
    static constexpr bool value =
        (detail::part_fits_model<Ps, Model, degree_of<Ps::family> == dynamic ? 1 : degree_of<Ps::family>>() && ... && true);
  };
  template <class Comm, class List>
  struct comm_fits;
  template <class Comm, class... Ps>
  struct comm_fits<Comm, detail::type_list<Ps...>> {
    static constexpr bool value = (detail::part_takes_communicator<Ps, Comm>() && ... && true);
  };

 public:
  /// The model one rank holds: `Model` through each part's rank_model (in the order written).
  template <class Model>
  using rank_model = typename fold_rank_model<Model, written_parts>::type;
  /// Every part's model_check of `Model` (their static_asserts report at the plan).
  template <class Model>
  static constexpr bool fits_model = model_fits<Model, written_parts>::value;
  /// Every part takes a communicator of type `Comm` (each part's communicator_check; its
  /// static_assert says what is missing, once).
  template <class Comm>
  static constexpr bool takes_communicator = comm_fits<Comm, written_parts>::value;

 private:
  template <class List>
  struct any_local_wrapper;
  template <class... Ps>
  struct any_local_wrapper<detail::type_list<Ps...>> {
    static constexpr bool value = ((detail::declares_local_step<Ps> && degree_of<Ps::family> > 1) || ... || false);
  };

 public:
  /// Whether a written part wraps the local step (a `local_step` hook and a degree above 1, as
  /// expert_parallel<> over ep > 1). Such a wrapper reads and rewrites the local step's whole
  /// gradient block (sums it over its group, reduces its dense part): ZeRO-2/3 then keep the
  /// block stack whole instead of layer by layer (plan<>::wants_windowed_params/grads).
  static constexpr bool wraps_local_step = any_local_wrapper<written_parts>::value;
};

/// Satisfied by `strategy<Mesh, Parts...>`.
template <class T>
concept parallel_strategy = requires { typename std::remove_cvref_t<T>::weft_strategy_tag; };

/// The single-process default: data parallelism over a dynamic axis (one rank alone).
using single_rank_strategy = strategy<mesh<axis<"dp">>>;

}  // namespace weft
