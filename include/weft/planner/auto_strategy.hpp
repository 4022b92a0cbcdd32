#pragma once
// ---- auto_strategy<Model, Batch, Cluster>: the search at compile time, its winner as types ----
//   using pick = auto_strategy<gpt<cfg>, global_batch<512, 2048>, a100_nodes<4>>;
//   using plan_t = pick::plan_type;        // plan<Model, batch<micro<b>, seq<s>>, strategy<...>, precision<...>>
//   pick::best.cost.step_seconds;          // the prediction; pick::result.ranked: the alternatives
// The search is planner::search (a constant evaluation over values); the winning
// strategy_desc is turned into strategy<mesh<axis<"dp", D>, axis<"tp", T>, axis<"pp", P>>,
// tensor_parallel<"tp"[, sequence_parallel]>, pipeline<"pp", Schedule, microbatches<M>>,
// data_parallel<"dp", zero<Z>>, recompute<R>[, flash_attention]>, and for a model with mixtures of
// experts, when the search picks ep > 1, an axis<"ep", E> with expert_parallel<"ep">. When nothing
// fits, the compilation stops at the user's line with the resource that is short and by how much.
// flash_search<> turns the search's flash option on (search_options::flash): every candidate then
// has flash_attention, and so has the winner's strategy<> and plan<>.
#include "weft/core/dtype.hpp"           // bf16
#include "weft/core/fixed_string.hpp"    // fixed_string
#include "weft/parallel/batch.hpp"       // batch, micro, seq
#include "weft/parallel/mesh.hpp"        // mesh
#include "weft/parallel/plan.hpp"        // plan, precision
#include "weft/parallel/expert_parallel.hpp"  // expert_parallel
#include "weft/parallel/strategy.hpp"    // strategy, tensor_parallel, pipeline, data_parallel, zero, recompute, flash_attention
#include "weft/planner/cluster.hpp"      // cluster_type
#include "weft/planner/model_desc.hpp"   // describe, strategy_desc
#include "weft/planner/search.hpp"       // search, search_options

#include <cstddef>
#include <type_traits>

namespace weft::planner {

/// Search limits as a type: any type with `static constexpr search_options value`.
struct default_search {
  static constexpr search_options value{};
};

/// `Base`'s limits with flash attention on: every strategy priced and the winner keep row
/// statistics instead of probabilities (search_options::flash).
template <class Base = default_search>
struct flash_search {
  static constexpr search_options value = [] {
    search_options o = Base::value;
    o.flash = true;
    return o;
  }();
};

/// `Need <= Have` of a named resource; printed with the numbers (and `ShortBy`) when false.
template <fixed_string Resource, std::size_t Need, std::size_t Have, std::size_t ShortBy>
inline constexpr bool enough = Need <= Have;

namespace detail {

template <strategy_desc S>
using schedule_of = std::conditional_t<S.schedule == schedule_kind::gpipe, weft::gpipe,
                                       std::conditional_t<S.schedule == schedule_kind::one_f_one_b, weft::one_f_one_b,
                                                          weft::interleaved<(S.chunks < 2 ? 2 : S.chunks)>>>;
template <strategy_desc S>
using recompute_of = std::conditional_t<S.recompute == recompute_kind::none, weft::none,
                                        std::conditional_t<S.recompute == recompute_kind::selective, weft::selective, weft::full>>;
template <strategy_desc S>
using tensor_part_of = std::conditional_t<S.sequence_parallel, weft::tensor_parallel<"tp", weft::sequence_parallel>,
                                          weft::tensor_parallel<"tp">>;

// A strategy<> of `Mesh` and `Parts...` with S's options after the parts: recompute<R>, and
// flash_attention when S.flash (so that plan<..., strategy_type_of<S>>::flash is S.flash).
template <strategy_desc S, class Mesh, class... Parts>
using strategy_with_options_of =
    std::conditional_t<S.flash, weft::strategy<Mesh, Parts..., weft::recompute<recompute_of<S>>, weft::flash_attention>,
                       weft::strategy<Mesh, Parts..., weft::recompute<recompute_of<S>>>>;

constexpr std::size_t mib_up(double bytes) noexcept { return static_cast<std::size_t>(bytes / 1048576.0) + 1; }
constexpr std::size_t mib_down(double bytes) noexcept { return static_cast<std::size_t>(bytes / 1048576.0); }

// Without expert parallelism the mesh has no "ep" axis (a strategy uses every axis it names).
template <strategy_desc S, bool Expert = (S.ep > 1)>
struct strategy_of {
  using type = strategy_with_options_of<S, weft::mesh<weft::axis<"dp", S.dp>, weft::axis<"tp", S.tp>, weft::axis<"pp", S.pp>>,
                                        tensor_part_of<S>, weft::pipeline<"pp", schedule_of<S>, weft::microbatches<S.microbatches>>,
                                        weft::data_parallel<"dp", weft::zero<S.zero>, weft::bucket_bytes<S.bucket_bytes>>>;
};
// With expert parallelism: an "ep" axis and expert_parallel<"ep">. With one stage there is no
// pipeline part (its micro-batches are the step's gradient accumulation, chosen.microbatches);
// with several the pipeline stays (the search offers pp > 1 with ep > 1 only under
// allow_expert_pipeline).
template <strategy_desc S>
struct strategy_of<S, true> {
  using type = std::conditional_t<
      (S.pp > 1),
      strategy_with_options_of<
          S, weft::mesh<weft::axis<"dp", S.dp>, weft::axis<"tp", S.tp>, weft::axis<"pp", S.pp>, weft::axis<"ep", S.ep>>,
          tensor_part_of<S>, weft::pipeline<"pp", schedule_of<S>, weft::microbatches<S.microbatches>>, weft::expert_parallel<"ep">,
          weft::data_parallel<"dp", weft::zero<S.zero>, weft::bucket_bytes<S.bucket_bytes>>>,
      strategy_with_options_of<S, weft::mesh<weft::axis<"dp", S.dp>, weft::axis<"tp", S.tp>, weft::axis<"ep", S.ep>>,
                               tensor_part_of<S>, weft::expert_parallel<"ep">,
                               weft::data_parallel<"dp", weft::zero<S.zero>, weft::bucket_bytes<S.bucket_bytes>>>>;
};
}  // namespace detail

/// The strategy<> type of a strategy_desc (with expert_parallel<"ep"> and an "ep" axis when ep > 1,
/// flash_attention when flash).
template <strategy_desc S>
using strategy_type_of = typename detail::strategy_of<S>::type;

/// The fastest strategy for `Model` on `Batch` (global_batch<>) and `Cluster` that fits, as types.
template <class Model, class Batch, cluster_type Cluster, class Options = default_search>
struct auto_strategy {
  static constexpr model_desc model = describe<Model>();
  static constexpr batch_desc global = Batch::value;
  static constexpr search_options options = Options::value;
  /// The search: ranked candidates (fastest first) and what was priced.
  static constexpr search_result<8> result = search<8>(model, global, Cluster::value, options);

  // ---- nothing fits: say which resource is short, by how much (the numbers print with the note) ----
  static constexpr std::size_t layouts = result.layouts;
  static_assert(enough<"splits of the GPUs that divide the model and the global batch", 1, layouts, (layouts > 0 ? 0 : 1)>,
                "weft::auto_strategy: no split of the cluster's GPUs into tp x pp x dp (x ep) divides the model and the global "
                "batch. Use a GPU count and a global batch that share factors with the model's heads and depth.");
  static constexpr std::size_t need_mib = layouts > 0 ? detail::mib_up(result.leanest_bytes) : 0;
  static constexpr std::size_t have_mib = detail::mib_down(result.memory_limit);
  static constexpr std::size_t short_mib = need_mib > have_mib ? need_mib - have_mib : 0;
  static_assert(enough<"memory per GPU in MiB: needed by the leanest strategy, usable, short by", need_mib, have_mib, short_mib>,
                "weft::auto_strategy: no strategy fits in GPU memory: even the leanest needs more than a GPU's usable "
                "memory (MiB needed, usable and short in the note). Add nodes, use GPUs with more memory, or shorten "
                "the sequence.");
  static constexpr bool found = result.found();

  /// The winner and its prediction.
  static constexpr candidate best = result.ranked[0];
  static constexpr strategy_desc chosen = best.strategy;
  /// The winner as types.
  using strategy_type = strategy_type_of<chosen>;
  using batch_type = weft::batch<weft::micro<chosen.micro>, weft::seq<global.seq>>;
  using precision_type = std::conditional_t<(options.job.precision.element_bytes <= 2), weft::precision<weft::bf16, float>,
                                            weft::precision<float>>;
  using plan_type = weft::plan<Model, batch_type, strategy_type, precision_type>;
};

}  // namespace weft::planner

namespace weft {
using planner::auto_strategy;  // weft::auto_strategy
using planner::global_batch;
}  // namespace weft
