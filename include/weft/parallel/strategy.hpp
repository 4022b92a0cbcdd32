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
// expert-parallel index between tensor and data parallelism:
//   rank = ((pp_index * dp + dp_index) * ep + ep_index) * tp + tp_index
// (ep = 1 without expert_parallel: the tp/dp/pp order is unchanged by it). Expert parallelism
// (expert_parallel<"ep">) composes with data parallelism (any ZeRO stage), tensor parallelism
// and pipelines: the ranks with the same (pp, dp, tp index) form an expert group, each holding
// E/ep experts of every mixture of experts and its own tokens.
#include "weft/core/constant.hpp"      // dynamic
#include "weft/core/diagnostics.hpp"   // diag::at_least, diag::at_most
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/parallel/mesh.hpp"      // mesh, mesh_like
#include "weft/parallel/schedule.hpp"  // gpipe, one_f_one_b, interleaved, schedule_tag, detail::pipeline_checks

#include <cstddef>
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

// ---- option look-up ----

namespace detail {

template <class T> inline constexpr bool is_zero_v = requires { typename T::weft_zero_tag; };
template <class T> inline constexpr bool is_bucket_v = requires { typename T::weft_bucket_bytes_tag; };
template <class T> inline constexpr bool is_microbatches_v = requires { typename T::weft_microbatches_tag; };
template <class T> inline constexpr bool is_sequence_parallel_v = requires { typename T::weft_sequence_parallel_tag; };
template <class T> inline constexpr bool is_schedule_v = schedule_tag<T>;
template <class T> inline constexpr bool is_recompute_v = requires { typename T::weft_recompute_tag; };
template <class T> inline constexpr bool is_precision_v = requires { typename T::weft_precision_tag; };

template <class T> struct is_zero : std::bool_constant<is_zero_v<T>> {};
template <class T> struct is_bucket : std::bool_constant<is_bucket_v<T>> {};
template <class T> struct is_microbatches : std::bool_constant<is_microbatches_v<T>> {};
template <class T> struct is_sequence_parallel : std::bool_constant<is_sequence_parallel_v<T>> {};
template <class T> struct is_schedule : std::bool_constant<is_schedule_v<T>> {};
template <class T> struct is_recompute : std::bool_constant<is_recompute_v<T>> {};
template <class T> struct is_precision : std::bool_constant<is_precision_v<T>> {};

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

/// What a strategy part does along its axis.
enum class part_kind : std::uint8_t { data, tensor, pipeline, expert };

/// Data parallelism along mesh axis `Axis`, with optional zero<S> (default 0) and
/// bucket_bytes<N> (default 25 MiB).
template <fixed_string Axis, class... Options>
struct data_parallel {
  using weft_part_tag = void;
  static constexpr part_kind kind = part_kind::data;
  static constexpr auto axis_name = Axis;
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
  static constexpr part_kind kind = part_kind::tensor;
  static constexpr auto axis_name = Axis;
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
  static constexpr part_kind kind = part_kind::pipeline;
  static constexpr auto axis_name = Axis;
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

/// Expert parallelism along mesh axis `Axis` (GShard, Switch Transformer): the experts of every
/// mixture-of-experts layer (moe_mlp) are dealt out over the axis's ranks in blocks of E/ep, each
/// rank brings its own tokens, and all-to-alls carry the routed rows to their experts and back.
/// plan<> runs each moe_mlp<…> as its ep_moe_mlp<…, ep> form (model/ep_moe_mlp.hpp) and
/// make_training_step returns distributed_step, whose local step expert_parallel_local wraps.
/// With data_parallel (zero<0> to zero<3>), tensor_parallel, with or without sequence_parallel
/// (the mixture of experts replicated over the tp group), and pipeline.
template <fixed_string Axis>
struct expert_parallel {
  using weft_part_tag = void;
  static constexpr part_kind kind = part_kind::expert;
  static constexpr auto axis_name = Axis;
};

namespace detail {

template <class T> inline constexpr bool is_part_v = requires { typename T::weft_part_tag; };
template <class T, part_kind K>
inline constexpr bool is_part_of_kind = [] {
  if constexpr (is_part_v<T>) return T::kind == K;
  else return false;
}();
template <class T> struct is_data_part : std::bool_constant<is_part_of_kind<T, part_kind::data>> {};
template <class T> struct is_tensor_part : std::bool_constant<is_part_of_kind<T, part_kind::tensor>> {};
template <class T> struct is_pipeline_part : std::bool_constant<is_part_of_kind<T, part_kind::pipeline>> {};
template <class T> struct is_expert_part : std::bool_constant<is_part_of_kind<T, part_kind::expert>> {};

// Stand-ins for absent parts: the same members, no axis.
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
struct no_expert_part {
  static constexpr fixed_string axis_name = "";
};
struct no_precision {
  using type = void;
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
                   fixed_string("\", whose size is dynamic. Give tensor_parallel, pipeline and expert_parallel axes "
                                "a static size, e.g. axis<\"tp\", 2>; only the data-parallel axis may be dynamic.")>();
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

}  // namespace detail

/// Where one rank sits in the mesh.
struct rank_coords {
  std::size_t pp = 0;  ///< pipeline stage
  std::size_t dp = 0;  ///< data-parallel replica
  std::size_t tp = 0;  ///< tensor-parallel shard
  std::size_t ep = 0;  ///< expert-parallel rank (its block of experts); 0 without expert_parallel
  friend constexpr bool operator==(const rank_coords&, const rank_coords&) = default;
};

namespace detail {

// What a strategy's parts say, before any check: the parts found (or stand-ins), and which
// mesh axes they use. Kept apart from strategy<> so that its checks can call these
// functions (a class's own member functions are not usable in its static initialisers).
template <class Mesh, class... Parts>
struct strategy_parts {
  static constexpr bool has_data = count_of<is_data_part, Parts...> == 1;
  static constexpr bool has_tensor = count_of<is_tensor_part, Parts...> == 1;
  static constexpr bool has_pipeline = count_of<is_pipeline_part, Parts...> == 1;
  static constexpr bool has_expert = count_of<is_expert_part, Parts...> == 1;
  using expert_part = first_of_t<is_expert_part, no_expert_part, Parts...>;
  using data_part = first_of_t<is_data_part, no_data_part, Parts...>;
  using tensor_part = first_of_t<is_tensor_part, no_tensor_part, Parts...>;
  using pipeline_part = first_of_t<is_pipeline_part, no_pipeline_part, Parts...>;

  // How many parts use the mesh axis `name`.
  static constexpr std::size_t uses(std::string_view name) {
    return (has_data && data_part::axis_name.view() == name ? 1u : 0u) +
           (has_tensor && tensor_part::axis_name.view() == name ? 1u : 0u) +
           (has_pipeline && pipeline_part::axis_name.view() == name ? 1u : 0u) +
           (has_expert && expert_part::axis_name.view() == name ? 1u : 0u);
  }
  // Index of the mesh's first axis without a part (Mesh::rank when there is none).
  static constexpr std::size_t first_unused() {
    for (std::size_t i = 0; i < Mesh::rank; ++i)
      if (uses(Mesh::names[i]) == 0) return i;
    return Mesh::rank;
  }
  // Size of mesh axis `name`; 1 when absent.
  static constexpr std::size_t size_of(std::string_view name) {
    for (std::size_t i = 0; i < Mesh::rank; ++i)
      if (Mesh::names[i] == name) return Mesh::sizes[i];
    return 1;
  }

  // An axis without a part is fine only as the implicit data-parallel axis: the first such
  // axis, and only when there is no data_parallel part.
  template <std::size_t I>
  static consteval bool check_mesh_axis() {
    using A = typename Mesh::template axis_at<I>;
    constexpr bool used = uses(A::name.view()) > 0 || (!has_data && I == first_unused());
    return check_axis_used<A::name, used>();
  }
  template <std::size_t... I>
  static consteval bool check_mesh_axes(std::index_sequence<I...>) {
    return (check_mesh_axis<I>() && ... && true);
  }
};

}  // namespace detail

/// A parallel strategy: a mesh and the parts that run along its axes.
template <mesh_like Mesh, class... Parts>
struct strategy {
  using weft_strategy_tag = void;
  using mesh_type = Mesh;

  // ---- validation of the parts themselves ----
  static constexpr bool parts_known =
      ((detail::is_part_v<Parts> || detail::is_recompute_v<Parts> || detail::is_precision_v<Parts>) && ... && true);
  static_assert(parts_known,
                "weft::strategy: an argument after the mesh is not a strategy part. Use data_parallel<>, "
                "tensor_parallel<>, pipeline<>, expert_parallel<>, recompute<> or precision<>.");
  static constexpr bool parts_once =
      detail::count_of<detail::is_data_part, Parts...> <= 1 && detail::count_of<detail::is_tensor_part, Parts...> <= 1 &&
      detail::count_of<detail::is_pipeline_part, Parts...> <= 1 && detail::count_of<detail::is_expert_part, Parts...> <= 1 &&
      detail::count_of<detail::is_recompute, Parts...> <= 1 &&
      detail::count_of<detail::is_precision, Parts...> <= 1;
  static_assert(parts_once,
                "weft::strategy: a part is given twice. Give each of data_parallel, tensor_parallel, pipeline, "
                "expert_parallel, recompute and precision at most once.");

 private:
  using found = detail::strategy_parts<Mesh, Parts...>;
  using data_part = typename found::data_part;
  using tensor_part = typename found::tensor_part;
  using pipeline_part = typename found::pipeline_part;
  using expert_part = typename found::expert_part;

 public:
  /// Whether data / tensor / pipeline parallelism is written as a part.
  static constexpr bool has_data_parallel = found::has_data;
  static constexpr bool has_tensor_parallel = found::has_tensor;
  static constexpr bool has_pipeline = found::has_pipeline;
  /// Whether expert parallelism is written as a part.
  static constexpr bool has_expert_parallel = found::has_expert;

  // ---- validation against the mesh: each a named condition ----
  static constexpr bool data_axis_in_mesh = !has_data_parallel || Mesh::template contains<data_part::axis_name>;
  static_assert(detail::check_axis_in_mesh<"data_parallel", data_part::axis_name, data_axis_in_mesh>());
  static constexpr bool tensor_axis_in_mesh = !has_tensor_parallel || Mesh::template contains<tensor_part::axis_name>;
  static_assert(detail::check_axis_in_mesh<"tensor_parallel", tensor_part::axis_name, tensor_axis_in_mesh>());
  static constexpr bool pipeline_axis_in_mesh = !has_pipeline || Mesh::template contains<pipeline_part::axis_name>;
  static_assert(detail::check_axis_in_mesh<"pipeline", pipeline_part::axis_name, pipeline_axis_in_mesh>());
  static constexpr bool expert_axis_in_mesh = !has_expert_parallel || Mesh::template contains<expert_part::axis_name>;
  static_assert(detail::check_axis_in_mesh<"expert_parallel", expert_part::axis_name, expert_axis_in_mesh>());

  // Two parts on one axis: reported once, for the first part that shares it.
  static constexpr bool data_axis_alone = !has_data_parallel || found::uses(data_part::axis_name.view()) == 1;
  static_assert(detail::check_axis_once<data_part::axis_name, data_axis_alone>());
  static constexpr bool tensor_axis_alone = !has_tensor_parallel || found::uses(tensor_part::axis_name.view()) == 1;
  static_assert(detail::check_axis_once<tensor_part::axis_name, tensor_axis_alone || !data_axis_alone>());
  static constexpr bool pipeline_axis_alone = !has_pipeline || found::uses(pipeline_part::axis_name.view()) == 1;
  static_assert(detail::check_axis_once<pipeline_part::axis_name,
                                        pipeline_axis_alone || !data_axis_alone || !tensor_axis_alone>());
  static constexpr bool expert_axis_alone = !has_expert_parallel || found::uses(expert_part::axis_name.view()) == 1;
  static_assert(detail::check_axis_once<expert_part::axis_name, expert_axis_alone || !data_axis_alone ||
                                                                    !tensor_axis_alone || !pipeline_axis_alone>());

  static constexpr bool tensor_axis_static =
      !has_tensor_parallel || !tensor_axis_in_mesh || Mesh::template size_of<tensor_part::axis_name> != dynamic;
  static_assert(detail::check_axis_static<"tensor_parallel", tensor_part::axis_name, tensor_axis_static>());
  static constexpr bool pipeline_axis_static =
      !has_pipeline || !pipeline_axis_in_mesh || Mesh::template size_of<pipeline_part::axis_name> != dynamic;
  static_assert(detail::check_axis_static<"pipeline", pipeline_part::axis_name, pipeline_axis_static>());
  static constexpr bool expert_axis_static =
      !has_expert_parallel || !expert_axis_in_mesh || Mesh::template size_of<expert_part::axis_name> != dynamic;
  static_assert(detail::check_axis_static<"expert_parallel", expert_part::axis_name, expert_axis_static>());

  static constexpr bool axes_in_mesh = data_axis_in_mesh && tensor_axis_in_mesh && pipeline_axis_in_mesh && expert_axis_in_mesh;
  static constexpr bool axes_distinct = data_axis_alone && tensor_axis_alone && pipeline_axis_alone && expert_axis_alone;
  // (if constexpr: a consteval call is evaluated even on the dead side of ||)
  static constexpr bool every_axis_used = [] {
    if constexpr (axes_in_mesh && axes_distinct) return found::check_mesh_axes(std::make_index_sequence<Mesh::rank>{});
    else return true;
  }();

  // ---- degrees ----
  /// Name of the data-parallel axis: the data_parallel part's, else the mesh axis without a
  /// part, else "" (no data parallelism: dp = 1).
  static constexpr std::string_view dp_axis =
      has_data_parallel ? data_part::axis_name.view()
                        : (found::first_unused() < Mesh::rank ? Mesh::names[found::first_unused()] : std::string_view{});
  /// Names of the tensor and pipeline axes ("" when absent).
  static constexpr std::string_view tp_axis = tensor_part::axis_name.view();
  static constexpr std::string_view pp_axis = pipeline_part::axis_name.view();
  /// Name of the expert-parallel axis ("" when absent).
  static constexpr std::string_view ep_axis = expert_part::axis_name.view();

  /// Tensor-parallel degree (1 when absent).
  static constexpr std::size_t tp = has_tensor_parallel && tensor_axis_static ? found::size_of(tp_axis) : 1;
  /// Pipeline stages (1 when absent).
  static constexpr std::size_t pp = has_pipeline && pipeline_axis_static ? found::size_of(pp_axis) : 1;
  /// Expert-parallel degree: ranks of an expert group (1 when absent).
  static constexpr std::size_t ep = has_expert_parallel && expert_axis_static ? found::size_of(ep_axis) : 1;
  /// Data-parallel degree: the axis size, `dynamic` when the world decides, 1 without the axis.
  static constexpr std::size_t dp = dp_axis.empty() ? 1 : found::size_of(dp_axis);
  /// Ranks in the job (`dynamic` when dp is).
  static constexpr std::size_t world_size = dp == dynamic ? dynamic : dp * tp * pp * ep;

  // ---- the parts' settings ----
  static constexpr std::size_t zero_stage = data_part::zero_stage;
  static constexpr std::size_t bucket_bytes = data_part::bucket_bytes;
  static constexpr bool sequence_parallel = tensor_part::sequence_parallel;
  using schedule_type = typename pipeline_part::schedule_type;
  /// Micro-batches per step (1 without a pipeline) and model chunks per stage (V of interleaved<V>).
  static constexpr std::size_t microbatches = pipeline_part::microbatches;
  static constexpr std::size_t chunks = pipeline_part::chunks;
  using recompute_type = typename detail::first_of_t<detail::is_recompute, recompute<none>, Parts...>::policy;
  static constexpr recompute_kind recompute_policy = recompute_type::kind;
  /// The precision<> part, or a stand-in whose `type` is void.
  using precision_type = detail::first_of_t<detail::is_precision, detail::no_precision, Parts...>;

  // ---- the schedule's own checks (micro-batches against stages), once the part is sound ----
  static constexpr bool schedule_ok = [] {
    if constexpr (has_pipeline && pipeline_part::valid && pipeline_axis_static && pipeline_axis_in_mesh)
      return detail::pipeline_checks<schedule_type, pp, microbatches>::ok;
    else
      return true;
  }();

  /// All checks passed.
  static constexpr bool valid = parts_known && parts_once && axes_in_mesh && axes_distinct && tensor_axis_static &&
                                pipeline_axis_static && expert_axis_static && every_axis_used && schedule_ok;

  // ---- rank layout ----
  /// Data-parallel degree in a job of `world` ranks (0 when `world` does not fit the mesh).
  static constexpr std::size_t dp_size(std::size_t world) noexcept {
    constexpr std::size_t model_ranks = tp * pp * ep;  // ranks of one data-parallel replica
    if (dp != dynamic) return world == dp * model_ranks ? dp : 0;
    return world % model_ranks == 0 ? world / model_ranks : 0;
  }
  /// Mesh coordinates of `rank` when the data-parallel degree is `dp_n`:
  /// rank = ((pp·dp_n + dp)·ep + ep_index)·tp + tp_index.
  static constexpr rank_coords coords(std::size_t rank, std::size_t dp_n) noexcept {
    return {rank / (tp * ep * dp_n), (rank / (tp * ep)) % dp_n, rank % tp, (rank / tp) % ep};
  }
  /// The rank at mesh coordinates `c` (inverse of coords).
  static constexpr std::size_t rank_of(rank_coords c, std::size_t dp_n) noexcept {
    return ((c.pp * dp_n + c.dp) * ep + c.ep) * tp + c.tp;
  }
};

/// Satisfied by `strategy<Mesh, Parts...>`.
template <class T>
concept parallel_strategy = requires { typename std::remove_cvref_t<T>::weft_strategy_tag; };

/// The single-process default: data parallelism over a dynamic axis (one rank alone).
using single_rank_strategy = strategy<mesh<axis<"dp">>>;

}  // namespace weft
