#pragma once
// ---- the strategy search: every split of the cluster's GPUs, ranked by predicted step ----
// A constexpr function over values, so that auto_strategy (compile time) and plan_cluster
// (run time) run the same search. The space, for N = nodes · gpus_per_node GPUs:
//   tp   powers of two up to gpus_per_node dividing heads, kv_heads, ffn and vocab
//   pp   divisors of depth with tp·pp dividing N
//   ep   for a model with mixtures of experts (md.moe_layers > 0): divisors of the experts with
//        tp·pp·ep dividing N (up to max_ep), with tp and any ZeRO stage, and with pp = 1 only
//        unless allow_expert_pipeline (strategy<> rejects expert_parallel with a pipeline yet);
//        1 for a dense model, so its space is unchanged
//   dp = N / (tp·pp·ep)
//   b    1, 2, 4, 8 (up to max_micro) with dp·ep·b dividing the global batch (every rank of an
//        expert group brings its own tokens); M = B / (dp·ep·b)
//   schedule  1F1B (M ≥ P), GPipe, interleaved<V> for V = 2..max_chunks dividing depth/P
//             (P ≥ 2, M % P == 0, as Megatron-LM and weft's pipeline<> require)
//   zero 0..3 (0 alone when dp = 1);  sequence parallelism with tp > 1 (not for mixtures of experts);
//   recompute none, selective, full
// Flash attention is an input, not a choice (search_options::flash): whether the job runs the
// flash kernels is a property of its stack, as fused_attention is, and searching it would double
// the space auto_strategy evaluates at compile time. With it every candidate has flash set and
// selective recompute is not tried: with no probabilities to drop it keeps and costs what none does.
// Each candidate's peak stage is priced first; those that fit the usable memory are timed by
// estimate_step and ranked. Recompute policies are tried lightest first: once one fits, the
// heavier ones (same memory elsewhere, more time) are dominated and skipped. The schedule's activation sets (a walk of M·V steps) are computed
// once per (P, M, V, schedule) and shared by the 24 strategies that differ only otherwise.
#include "weft/planner/cluster.hpp"      // cluster
#include "weft/planner/memory_cost.hpp"  // sets_in_flight
#include "weft/planner/model_desc.hpp"   // model_desc, batch_desc, strategy_desc
#include "weft/planner/step_cost.hpp"    // estimate_step, job_options

#include <array>
#include <cstddef>

namespace weft::planner {

/// Limits of the search; a non-zero `fixed_*` pins that choice.
struct search_options {
  job_options job{};
  std::size_t max_micro = 8;
  std::size_t max_chunks = 8;
  bool allow_gpipe = true;
  bool allow_interleaved = true;
  std::size_t max_zero = 3;
  bool allow_sequence_parallel = true;
  std::size_t fixed_tp = 0, fixed_pp = 0, fixed_micro = 0;
  bool fix_recompute = false;
  recompute_kind recompute = recompute_kind::none;  ///< when fix_recompute
  bool fix_zero = false;
  std::size_t zero = 0;                             ///< when fix_zero
  bool fix_schedule = false;
  schedule_kind schedule = schedule_kind::one_f_one_b;  ///< when fix_schedule
  std::size_t fixed_chunks = 0;                     ///< V of interleaved, when non-zero
  bool fix_sequence_parallel = false;
  bool sequence_parallel = false;                   ///< when fix_sequence_parallel
  std::size_t fixed_dp = 0;
  std::size_t max_ep = 0;    ///< largest expert-parallel degree tried (0: up to the experts)
  std::size_t fixed_ep = 0;  ///< pins ep (1: no expert parallelism)
  /// Also price ep > 1 with pp > 1 (the cost model prices them; strategy<> rejects them yet, so
  /// auto_strategy leaves this off).
  bool allow_expert_pipeline = false;
  /// Every candidate runs flash_attention (strategy_desc::flash); recompute none and full only
  /// (a pinned selective is none: under flash the two are the same).
  bool flash = false;
  /// Also try partial recomputation (strategy_desc::recompute_layers, Megatron's
  /// recompute_num_layers): where neither none nor selective fits, the fewest blocks a chunk
  /// recomputed whole that fit (the memory falls and the time grows with their number), before
  /// full recomputation of every block. Off by default: the space auto_strategy walks is unchanged.
  bool partial_recompute = false;
  /// Pins the blocks a chunk recomputes under full recompute (0: all, or the search's choice).
  std::size_t recompute_layers = 0;
  /// Context parallelism (strategy_desc::cp): powers of two up to max_cp dividing the sequence
  /// (1: none, the space unchanged); fixed_cp pins it.
  std::size_t max_cp = 1;
  std::size_t fixed_cp = 0;
  /// Uneven stages (strategy_desc::first_stage_layers, last_stage_layers) for every pp > 1
  /// candidate whose stages they cover (pp need not divide the depth then); 0: even.
  std::size_t first_stage_layers = 0, last_stage_layers = 0;
  /// Where pp > 2 does not divide the depth (and no stages are pinned), also try uneven stages:
  /// ⌈depth/pp⌉ blocks on each middle stage, the rest on the first and the last (the last, which
  /// holds the head, the fewer) — the split Megatron-LM users give with its first/last-stage flags.
  bool uneven_stages = false;
  /// ZeRO-3 candidates' gathered-parameter buffers and prefetch depth (strategy_desc's).
  zero3_buffers zero3_holds = zero3_buffers::weft;
  std::size_t prefetch = 1;
};

/// A priced strategy.
struct candidate {
  strategy_desc strategy{};
  step_cost cost{};
};

/// The ranked result; K the number kept.
template <std::size_t K = 8>
struct search_result {
  std::array<candidate, K> ranked{};  ///< fastest first
  std::size_t count = 0;              ///< entries of `ranked` in use
  std::size_t layouts = 0;            ///< (tp, pp, ep, dp, b) splits that divide model and batch
  std::size_t evaluated = 0;          ///< strategies priced
  std::size_t feasible = 0;           ///< of which fit in memory
  double leanest_bytes = 0;           ///< the least peak memory per rank among all strategies
  double memory_limit = 0;            ///< usable bytes per GPU
  constexpr bool found() const noexcept { return count > 0; }
  constexpr const candidate& best() const noexcept { return ranked[0]; }
};

namespace detail {

template <std::size_t K>
constexpr void keep(search_result<K>& r, const candidate& c) noexcept {
  if constexpr (K == 1) {
    if (r.count == 0 || c.cost.step_seconds < r.ranked[0].cost.step_seconds) r.ranked[0] = c, r.count = 1;
  } else {
    std::size_t i = r.count < K ? r.count : K;
    if (i == K && !(c.cost.step_seconds < r.ranked[K - 1].cost.step_seconds)) return;
    if (i == K) --i;
    while (i > 0 && i < K && c.cost.step_seconds < r.ranked[i - 1].cost.step_seconds) {
      r.ranked[i] = r.ranked[i - 1];
      --i;
    }
    r.ranked[i] = c;
    if (r.count < K) ++r.count;
  }
}

}  // namespace detail

/// Whether `tp` can cut `md` (heads, kv_heads, ffn, vocab divisible) and `pp`·`chunks` its depth.
constexpr bool split_divides(const model_desc& md, std::size_t tp, std::size_t pp, std::size_t chunks = 1) noexcept {
  return md.heads % tp == 0 && md.kv_heads % tp == 0 && md.ffn % tp == 0 && md.vocab % tp == 0 && md.depth % (pp * chunks) == 0;
}

/// Whether the search tries expert-parallel degree `ep` for `md`: ep divides the experts of every
/// moe_mlp (1 always; a dense model only 1) and the limits of `o` allow it.
constexpr bool ep_allowed(const model_desc& md, std::size_t ep, const search_options& o) noexcept {
  if (o.fixed_ep != 0 && ep != o.fixed_ep) return false;
  if (o.max_ep != 0 && ep > o.max_ep && ep != 1) return false;
  return md.ep_divides(ep);
}
constexpr bool ep_allowed(const model_desc& md, std::size_t ep, std::size_t pp, const search_options& o) noexcept {
  return ep_allowed(md, ep, o) && (ep == 1 || pp == 1 || o.allow_expert_pipeline);
}

/// Prices every strategy of the space on all of `c`'s GPUs; keeps the K fastest that fit.
template <std::size_t K = 8>
constexpr search_result<K> search(const model_desc& md, const batch_desc& batch, const cluster& c,
                                  const search_options& o = {}) noexcept {
  search_result<K> r{};
  r.memory_limit = c.memory_bytes * c.usable_memory_fraction;
  r.leanest_bytes = -1;
  const std::size_t n = c.gpus();
  constexpr recompute_kind rcs[] = {recompute_kind::none, recompute_kind::selective, recompute_kind::full};
  const recompute_kind pinned_rc = o.flash && o.recompute == recompute_kind::selective ? recompute_kind::none : o.recompute;
  for (std::size_t tp = 1; tp <= c.gpus_per_node && tp <= n; tp *= 2) {
    if (o.fixed_tp != 0 && tp != o.fixed_tp) continue;
    if (!split_divides(md, tp, 1)) continue;
    const std::size_t cp_top = o.fixed_cp != 0 ? o.fixed_cp : o.max_cp;
    for (std::size_t cp = 1; cp <= cp_top; cp *= 2) {
    if (o.fixed_cp != 0 && cp != o.fixed_cp) continue;
    if (batch.seq % cp != 0 || n % (tp * cp) != 0) continue;
    for (std::size_t pp = 1; pp <= md.depth; ++pp) {
      if (o.fixed_pp != 0 && pp != o.fixed_pp) continue;
      if (n % (tp * cp * pp) != 0) continue;
      strategy_desc cut{};  // the stages' blocks: even, or the pinned first and last
      cut.pp = pp, cut.first_stage_layers = o.first_stage_layers, cut.last_stage_layers = o.last_stage_layers;
      if (o.uneven_stages && !cut.uneven() && pp > 2 && md.depth % pp != 0) {
        const std::size_t middle = (md.depth + pp - 1) / pp;
        if (middle * (pp - 2) + 2 <= md.depth) {
          const std::size_t rest = md.depth - middle * (pp - 2);
          cut.last_stage_layers = rest / 2, cut.first_stage_layers = rest - rest / 2;
        }
      }
      if (!cut.stages_cover(md.depth)) continue;
      // ep: 1, and for a mixture of experts every divisor of the experts (a dense model: 1 only)
      const std::size_t ep_top = md.moe_layers > 0 && md.experts > 0 ? md.experts : 1;
      for (std::size_t ep = 1; ep <= ep_top; ++ep) {
        if (!ep_allowed(md, ep, pp, o) || n % (tp * cp * pp * ep) != 0) continue;
        const std::size_t dp = n / (tp * cp * pp * ep);
        if (o.fixed_dp != 0 && dp != o.fixed_dp) continue;
        for (std::size_t b = 1; b <= o.max_micro; b *= 2) {
          if (o.fixed_micro != 0 && b != o.fixed_micro) continue;
          if (batch.sequences % (dp * ep * b) != 0) continue;
          const std::size_t m = batch.sequences / (dp * ep * b);
          ++r.layouts;
          // schedules: index 0 = 1F1B, 1 = GPipe, 2.. = interleaved<V>
          for (std::size_t si = 0; si < 1 + o.max_chunks; ++si) {  // V = 2..max_chunks
            strategy_desc s{};
            s.tp = tp, s.pp = pp, s.dp = dp, s.ep = ep, s.cp = cp, s.micro = b, s.microbatches = m;
            s.zero3_holds = o.zero3_holds, s.prefetch = o.prefetch;
            if (pp > 1) s.first_stage_layers = cut.first_stage_layers, s.last_stage_layers = cut.last_stage_layers;
            if (si == 0) {
              if (m < pp) continue;
              s.schedule = schedule_kind::one_f_one_b;
            } else if (si == 1) {
              if (!o.allow_gpipe || pp == 1) continue;
              s.schedule = schedule_kind::gpipe;
            } else {
              const std::size_t v = si;  // 2..max_chunks
              if (!o.allow_interleaved || pp < 2 || m % pp != 0) continue;
              s.schedule = schedule_kind::interleaved, s.chunks = v;
              // even stages: v divides each stage's blocks; uneven: each stage holds v blocks at least
              if (s.uneven() ? !s.stages_cover(md.depth) : md.depth % (pp * v) != 0) continue;
            }
            if (o.fix_schedule && (s.schedule != o.schedule || (pp == 1 && o.schedule != schedule_kind::one_f_one_b))) continue;
            if (o.fixed_chunks != 0 && s.schedule == schedule_kind::interleaved && s.chunks != o.fixed_chunks) continue;
            const activation_sets sets = sets_in_flight(s);
            for (std::size_t z = 0; z <= (dp > 1 ? o.max_zero : 0); ++z) {
              if (o.fix_zero && z != o.zero) continue;
              // (a mixture of experts has no sequence-parallel form: tp_shard rejects it)
              const bool sp_ok = tp > 1 && o.allow_sequence_parallel && batch.seq % (tp * cp) == 0 && md.moe_layers == 0;
              for (int sp = 0; sp <= (sp_ok ? 1 : 0); ++sp) {
                for (recompute_kind rc : rcs) {
                  if (o.flash && rc == recompute_kind::selective) continue;  // nothing to drop: none's twin
                  if (o.fix_recompute && rc != pinned_rc) continue;
                  if (o.fix_sequence_parallel && (sp == 1) != o.sequence_parallel) continue;
                  s.zero = z, s.sequence_parallel = sp == 1, s.recompute = rc, s.flash = o.flash;
                  s.recompute_layers = rc == recompute_kind::full ? o.recompute_layers : 0;
                  if (rc == recompute_kind::full && o.partial_recompute && o.recompute_layers == 0) {
                    std::size_t per_chunk = md.depth / (pp * s.chunks);
                    if (s.uneven())  // recompute_layers counts a chunk's blocks: the largest chunk's bound it
                      for (std::size_t st : {std::size_t{0}, std::size_t{1}, pp - 1})
                        if (s.chunk_layers(md.depth, st, s.chunks) > per_chunk) per_chunk = s.chunk_layers(md.depth, st, s.chunks);
                    // the fewest recomputed blocks a chunk that fit: memory falls with their number (bisection)
                    std::size_t lo = 1, hi = per_chunk;
                    while (lo < hi) {
                      s.recompute_layers = (lo + hi) / 2;
                      const stage_memory sm = peak_stage_memory(md, batch.seq, s, o.job.precision, sets);
                      const double b = static_cast<double>(sm.total()) + memory_overhead_bytes(sm, o.job);
                      if (b <= r.memory_limit) hi = s.recompute_layers;
                      else lo = s.recompute_layers + 1;
                    }
                    s.recompute_layers = lo < per_chunk ? lo : 0;
                  }
                  // Memory first (cheap); the time only of what fits.
                  const stage_memory sm = peak_stage_memory(md, batch.seq, s, o.job.precision, sets);
                  const double bytes = static_cast<double>(sm.total()) + memory_overhead_bytes(sm, o.job);
                  ++r.evaluated;
                  if (r.leanest_bytes < 0 || bytes < r.leanest_bytes) r.leanest_bytes = bytes;
                  if (bytes > r.memory_limit) continue;
                  ++r.feasible;
                  detail::keep(r, candidate{s, estimate_step(md, batch.seq, s, c, o.job, sets, sm)});
                  // More recomputation only adds time (compute, and tensor-parallel traffic with
                  // full): once a policy fits, the heavier ones are dominated.
                  break;
                }
              }
            }
          }
        }
      }  // ep
    }
    }  // cp
  }
  if (r.leanest_bytes < 0) r.leanest_bytes = 0;
  return r;
}

}  // namespace weft::planner
