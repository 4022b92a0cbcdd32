#pragma once
// ---- pipeline_step: one pipeline stage's share of a training step ----
// `pipeline_step<Plan, P, Schedule, Microbatches, Comm>` runs, on the rank with index `stage` in
// the pipeline group (its rank in `pp`), the instruction list make_schedule<Schedule, P, M>() gives
// that stage: forward/backward of (micro-batch, chunk) through the stage's chunk types
// pipeline_stage_t<Model, P, stage, V, chunk>, and the activation/gradient traffic with the
// neighbouring stages. The stage index is a run-time value (the rank); every stage's types are
// compiled in and picked through a table built over an index_sequence.
//
// Execution (the schedule's own model, see schedule_check.hpp): a run of adjacent sends/recvs
// in the list is one *group*, posted at once (isend/irecv) and waited for together — Megatron-
// LM's batch_isend_irecv. The compile-time simulation proves that the lists complete this way
// for every schedule (report.grouped); a static_assert below makes the executor rest on that
// proof. Messages are tagged by what they carry: (activation or gradient, micro-batch, virtual
// stage that consumes it), unique within a step.
//
// Memory: parameters, gradients, master weights and AdamW moments of the stage's chunks (the
// master only under mixed precision, precision<bf16, f32>: master and moments in f32, as
// training_step's; no master or moments under ZeRO >= 1: data_parallel_step keeps them in
// shards, see state_sections.hpp), back to back in one block (parameter_infos() names them
// with their global names), and activation *slots*: one
// per activation set the stage holds at once — the schedule simulation's peak, not M (1F1B on
// stage s holds P - s). A slot is taken when its input arrives (recv_act; forward on the first
// virtual stage) and given back once its input gradient is sent (send_grad; backward on the
// first virtual stage). A slot holds the chunk's kept activations, its input x, its output y
// (the activation sent on, or the logits; later the output gradient received, in place) and
// the input gradient dx it sends back. Everything is allocated once, at construction; messages
// go straight from and into the arena, and the tied-embedding gradient sum receives the peer's
// copy into the slots and workspace, idle after the last backward (sum_tied_gradients).
//
// The step: micro-batches replace gradient accumulation (train_options::grad_accum must be 1).
// The loss is computed on the last stage (fused softmax-cross-entropy, scale 1/(rows·M·dp)) and
// broadcast over the group; after the last backward the tied-embedding copies' gradients are
// summed over the embedding group (first and last stage), then the global gradient norm is
// clipped (sum of squares over the pipeline group, the tied copy counted once) and AdamW runs.
// Inside data_parallel_step the data-parallel reduction comes between the two: it calls
// forward_backward(fill, dp), reduces, then clips with grad_norm_squared()/model_parallel_sum()
// and updates with apply_optimizer().
//
// tp × pp: with `TP` > 1 each chunk runs tp_shard_t<pipeline_stage_t<…>, TP> (the tied copy's
// carried_params sharded like the original, the head vocabulary-parallel) on the tensor-parallel
// group given at construction (frame::tp). Parameters are initialised shard-wise
// (initialise_shards), the last stage's loss is the vocabulary-parallel cross-entropy, the
// global norm sums over pp and tp (replicated parameters counted on tp rank 0 only, the tied
// copy once), and pipeline messages go between ranks with the same tp index (the pp group of
// the caller's split). No sequence parallelism under pp.
#include "weft/comm/communicator.hpp"        // communicator, reduce_op
#include "weft/comm/tp_adapter.hpp"          // make_tp_group
#include "weft/model/layer.hpp"              // frame, param_info, init_context
#include "weft/exec/context.hpp"            // host_context
#include "weft/ops/adamw.hpp"                // adamw_step
#include "weft/ops/cast.hpp"                 // cast (f32 master -> bf16 parameters)
#include "weft/ops/clip.hpp"                 // clip
#include "weft/ops/cross_entropy.hpp"        // softmax_cross_entropy_forward_backward, _forward
#include "weft/ops/fill.hpp"                 // zero
#include "weft/ops/mean_loss.hpp"            // mean_loss
#include "weft/ops/sum_squares.hpp"          // sum_squares_continue
#include "weft/parallel/expert_parallel.hpp" // ep_model_t
#include "weft/parallel/instruction.hpp"     // instruction, instruction_kind
#include "weft/parallel/pipeline_stage.hpp"  // pipeline_stage, pipeline_stage_t
#include "weft/parallel/recompute.hpp"       // with_recompute_t
#include "weft/parallel/schedule.hpp"        // schedule_tag, schedule_v, schedule_report_v
#include "weft/parallel/state_sections.hpp"  // local_state_sections
#include "weft/parallel/tensor_parallel.hpp" // tp_shard_t, gather_shards
#include "weft/ops/accumulate.hpp"             // accumulate (the fault hook)
#include "weft/exec/tensor_parallel_step.hpp"  // initialise_shards
#include "weft/exec/training_step.hpp"      // train_options, step_metrics, initialise_parameters

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

namespace detail {

// ---- how the executor uses one stage's list ----

// What the executor needs of a list beyond the proof: the most activation slots held at once
// under its allocation rule, and that no group both sends a chunk's output y and receives its
// gradient into y.
struct pipeline_slot_use {
  std::size_t peak = 0;
  bool output_reuse_ok = true;
};

template <std::size_t P, std::size_t M, std::size_t V>
constexpr pipeline_slot_use slot_use_of(const schedule<P, M, V>& s, std::size_t stage) {
  pipeline_slot_use u;
  std::size_t live = 0;
  const auto list = s.list(stage);
  for (std::size_t i = 0; i < list.size();) {
    const instruction& x = list[i];
    if (!x.is_comm()) {  // slots of the first virtual stage live from forward to backward
      if (x.chunk * P + stage == 0 && x.kind == instruction_kind::forward) u.peak = std::max(u.peak, ++live);
      if (x.chunk * P + stage == 0 && x.kind == instruction_kind::backward) --live;
      ++i;
      continue;
    }
    std::size_t e = i;
    while (e < list.size() && list[e].is_comm()) ++e;
    for (std::size_t a = i; a < e; ++a) {  // a group: frees (send_grad) before takes (recv_act)
      if (list[a].kind == instruction_kind::send_grad) --live;
      if (list[a].kind == instruction_kind::recv_grad)
        for (std::size_t b = i; b < e; ++b)
          if (list[b].kind == instruction_kind::send_act && list[b].mb == list[a].mb && list[b].chunk == list[a].chunk)
            u.output_reuse_ok = false;
    }
    for (std::size_t a = i; a < e; ++a)
      if (list[a].kind == instruction_kind::recv_act) u.peak = std::max(u.peak, ++live);
    i = e;
  }
  return u;
}

// The slot use of every stage agrees with the simulation's peak and reuses outputs safely.
template <std::size_t P, std::size_t M, std::size_t V>
constexpr bool slot_use_matches(const schedule<P, M, V>& s, const schedule_report<P>& r) {
  for (std::size_t st = 0; st < P; ++st) {
    const pipeline_slot_use u = slot_use_of(s, st);
    if (u.peak != r.peak_activations[st] || !u.output_reuse_ok) return false;
  }
  return true;
}

constexpr std::size_t align_bytes(std::size_t n) { return (n + 63) / 64 * 64; }

// ---- per (stage, chunk): sizes and entry points of its layer, from the types ----

// Where one chunk runs: the frame without its type (the chunk's layer type is the frame's root).
template <class T>
struct pipeline_chunk_frame {
  T* params;
  T* grads;  // nullptr: forward only
  T* kept;
  T* scratch;
  const std::int32_t* tokens;
  tp_group* tp;  // nullptr without tensor parallelism
  host_context ctx;
};

template <class T>
struct pipeline_chunk_facts {
  std::size_t params, kept, scratch, in_width, out_width, virtual_stage;
  std::size_t tied_offset, tied_count;  // the range summed over the embedding group (count 0: none)
  bool carries_tied;                    // the last stage's copy: not counted in the norm
  void (*forward)(const pipeline_chunk_frame<T>&, const T*, T*);
  void (*backward)(const pipeline_chunk_frame<T>&, const T*, const T*, T*);
  void (*visit)(std::vector<param_info>&, std::size_t base, std::size_t depth);
};

template <class T, std::size_t B, std::size_t S, class L>
frame<T, B, S, L> pipeline_frame(const pipeline_chunk_frame<T>& c) {
  frame<T, B, S, L> f;
  f.params = c.params;
  f.grads = c.grads;
  f.kept = c.kept;
  f.scratch = c.scratch;
  f.root_params = c.params;  // the chunk is the root: a tied head finds its copy in the chunk
  f.root_grads = c.grads;
  f.tokens = c.tokens;
  f.tp = c.tp;
  f.ctx = c.ctx;
  return f;
}
template <class T, std::size_t B, std::size_t S, class L>
void pipeline_forward(const pipeline_chunk_frame<T>& c, const T* in, T* out) {
  L::forward(pipeline_frame<T, B, S, L>(c), in, out);
}
template <class T, std::size_t B, std::size_t S, class L>
void pipeline_backward(const pipeline_chunk_frame<T>& c, const T* in, const T* dout, T* din) {
  L::backward(pipeline_frame<T, B, S, L>(c), in, dout, din);
}
template <class L>
void pipeline_visit(std::vector<param_info>& out, std::size_t base, std::size_t depth) {
  L::visit_params("", base, init_context{depth}, [&](const param_info& p) { out.push_back(p); });
}

// A stage's layer as one of TP tensor-parallel ranks runs it (itself when TP is 1).
template <class L, std::size_t TP, bool SP = false>
struct pipeline_tp {
  using type = tp_shard_t<L, TP, SP>;
};
template <class L, bool SP>
struct pipeline_tp<L, 1, SP> {
  using type = L;
};
template <class L, std::size_t TP, bool SP = false>
using pipeline_tp_t = typename pipeline_tp<L, TP, SP>::type;

// The tied range of a stage in the embedding group, in the sharded layer's block.
template <class Info, std::size_t TP>
constexpr std::size_t pipeline_tied_offset() {
  if constexpr (!Info::in_embedding_group) return 0;
  else if constexpr (TP == 1 || Info::carries_tied) return Info::tied_offset;
  else return pipeline_tp_t<typename Info::type, TP>::param_offsets[Info::tied_owner_index];
}
template <class Info, std::size_t TP>
constexpr std::size_t pipeline_tied_count() {
  if constexpr (!Info::in_embedding_group || TP == 1) return Info::tied_count;
  else return pipeline_tp_t<std::tuple_element_t<Info::tied_owner_index, typename Info::prefix::tuple>, TP>::param_count;
}

// S is the tokens per sequence each rank's layers see: the sequence slice S/TP under SP.
template <class Model, class Recompute, class T, std::size_t B, std::size_t S, std::size_t P, std::size_t V,
          std::size_t TP, bool SP, std::size_t I>
constexpr pipeline_chunk_facts<T> pipeline_facts_at() {
  using info = pipeline_stage<Model, P, I / V, V, I % V>;
  // Cut first, then recompute (the stage's own repeat or attention), then shard.
  using L = pipeline_tp_t<with_recompute_t<typename info::type, Recompute>, TP, SP>;
  return {L::param_count,
          L::template kept_count<B, S>,
          L::template scratch_count<B, S>,
          L::in_width,
          L::out_width,
          info::virtual_stage,
          pipeline_tied_offset<info, TP>(),
          pipeline_tied_count<info, TP>(),
          info::carries_tied,
          &pipeline_forward<T, B, S, L>,
          &pipeline_backward<T, B, S, L>,
          &pipeline_visit<L>};
}
template <class Model, class Recompute, class T, std::size_t B, std::size_t S, std::size_t P, std::size_t V,
          std::size_t TP, bool SP, std::size_t... I>
constexpr std::array<pipeline_chunk_facts<T>, sizeof...(I)> pipeline_facts(std::index_sequence<I...>) {
  return {pipeline_facts_at<Model, Recompute, T, B, S, P, V, TP, SP, I>()...};
}
// (stage * V + chunk) -> facts of that chunk's layer: all stages' types, compiled into every rank.
template <class Model, class Recompute, class T, std::size_t B, std::size_t S, std::size_t P, std::size_t V,
          std::size_t TP, bool SP>
inline constexpr std::array<pipeline_chunk_facts<T>, P * V> pipeline_facts_v =
    pipeline_facts<Model, Recompute, T, B, S, P, V, TP, SP>(std::make_index_sequence<P * V>{});

}  // namespace detail

namespace detail {
// The expert-parallel degree of a plan (1 without one).
template <class Plan>
constexpr std::size_t plan_ep() {
  if constexpr (requires { Plan::ep; }) return Plan::ep;
  else return 1;
}
}  // namespace detail

/// Pipeline stage `pp.rank()` of `P` stages running `Schedule` over `Microbatches` micro-batches of `Plan`'s
/// batch shape, with point-to-point traffic over the pipeline group `Comm`; with `TP` > 1 each
/// stage is also one of TP tensor-parallel shards (tp × pp); `SP`: with sequence parallelism,
/// each tp rank's layers see its S/TP slice of every sequence, the activations sent between
/// stages are those slices (B, S/TP, C), and the replicated parameters' gradients are summed over
/// the tensor-parallel group after backward (as tensor_parallel_step does).
template <class Plan, std::size_t P, schedule_tag Schedule, std::size_t Microbatches, class Comm, std::size_t TP = 1,
          bool SP = false>
  requires communicator<Comm>
class pipeline_step : public step_skeleton<pipeline_step<Plan, P, Schedule, Microbatches, Comm, TP, SP>> {
 public:
  using plan_type = Plan;
  /// As written, with each moe_mlp as ep_moe_mlp<…, ep> under expert_parallel (Plan::rank_model
  /// before recomputation): stages are cut from it, then recomputed.
  using model = ep_model_t<typename Plan::model_type, detail::plan_ep<Plan>()>;
  using recompute_type = typename Plan::executed_recompute;
  using T = typename Plan::value_type;
  /// Master weights and AdamW moments: T, or f32 under precision<bf16, f32> (as training_step).
  using M = typename Plan::master_type;
  static constexpr bool mixed_precision = !std::is_same_v<T, M>;
  /// Per-token losses: float when T is narrower (as plan<>'s).
  using L = std::conditional_t<(sizeof(T) < sizeof(float)), float, T>;
  using schedule_type = Schedule;
  static constexpr std::size_t B = Plan::B, S = Plan::S, rows = Plan::rows, vocab = Plan::vocab_size;
  static constexpr std::size_t stages = P, microbatches = Microbatches, chunks = Schedule::chunks;
  static constexpr std::size_t virtual_stages = P * chunks;
  static constexpr std::size_t tp = TP;
  /// False under ZeRO >= 1: data_parallel_step holds the moments in shards, the arena none.
  static constexpr bool optimizer_state_in_arena = detail::optimizer_in_arena<Plan>();
  static constexpr std::size_t vocab_local = vocab / (TP > 0 ? TP : 1);  ///< logits per row on a tp rank
  static_assert(TP >= 1, "weft::pipeline_step: tp is 0. Use a tensor-parallel degree of at least 1.");
  static constexpr bool sequence_parallel = SP && TP > 1;
  static constexpr bool seq_divisible = !sequence_parallel || S % TP == 0;
  static_assert(seq_divisible, "weft::pipeline_step: with sequence_parallel, seq<S> must be divisible by tp (each rank keeps S/tp positions). Choose seq<S> divisible by tp, or drop sequence_parallel.");
  /// Tokens per sequence that this rank's layers see, and the rows of the activations between stages.
  static constexpr std::size_t local_seq = sequence_parallel ? S / TP : S;
  static constexpr std::size_t act_rows = B * local_seq;

  /// The layer of chunk `Chunk` of stage `Stage` (this tp rank's shard of it).
  template <std::size_t Stage, std::size_t Chunk>
  using stage_type =
      detail::pipeline_tp_t<with_recompute_t<pipeline_stage_t<model, P, Stage, chunks, Chunk>, recompute_type>, TP,
                            sequence_parallel>;

  // ---- the schedule, and what the executor relies on ----
  static constexpr const auto& instructions = schedule_v<Schedule, P, Microbatches>;
  static constexpr const auto& report = schedule_report_v<Schedule, P, Microbatches>;
  static constexpr bool interleaving_has_stages = P >= 2 || chunks == 1;
  static_assert(interleaving_has_stages,
                "weft::pipeline_step: interleaved chunks on a single stage. Use at least 2 pipeline stages with "
                "interleaved<V>, or one_f_one_b on one stage.");
  static constexpr bool groups_complete = report.grouped.deadlock_free;
  static_assert(groups_complete,
                "weft::pipeline_step: the schedule's lists do not complete when each run of sends/recvs is posted "
                "as a group. Use a schedule whose report.grouped.deadlock_free holds (all of make_schedule's do).");
  static constexpr bool slots_checked = detail::slot_use_matches(instructions, report);
  static_assert(slots_checked,
                "weft::pipeline_step: the schedule holds more activation sets than its simulation's peak under the "
                "slot rule, or receives a gradient in the group that sends the same output. Reorder the list.");

  /// Parameter runs with and without weight decay (as training_step's).
  struct group {
    std::size_t offset, size;
    bool decay;
  };
  /// A run of the parameter block.
  struct range {
    std::size_t offset, size;
  };

 private:
  using chunk_frame = detail::pipeline_chunk_frame<T>;
  using chunk_facts = detail::pipeline_chunk_facts<T>;
  static constexpr const auto& facts_ = detail::pipeline_facts_v<model, recompute_type, T, B, local_seq, P, chunks, TP, sequence_parallel>;
  static constexpr const chunk_facts& facts(std::size_t stage, std::size_t chunk) { return facts_[stage * chunks + chunk]; }

 public:
  // ---- the memory of one stage (byte offsets in its arena, fixed by the types) ----
  struct stage_layout {
    std::size_t param_count = 0;                 // elements of the stage's parameter block
    std::size_t master_count = 0;                // elements of the master section (mixed precision, not ZeRO)
    std::size_t moment_count = 0;                // elements of each moment section (0 under ZeRO)
    std::array<std::size_t, chunks> chunk_base{};  // element offset of each chunk's block
    std::size_t slots = 0;                       // activation sets held at once
    std::size_t x = 0, y = 0, dx = 0, kept = 0;  // elements of each part of a slot
    std::size_t slot_bytes = 0, scratch = 0;
    std::size_t params_at = 0, grads_at = 0, master_at = 0, m_at = 0, v_at = 0, slots_at = 0, scratch_at = 0,
                losses_at = 0, tokens_at = 0, targets_at = 0, loss_work_at = 0, bytes = 0;
  };
  static constexpr stage_layout layout_of(std::size_t stage) {
    stage_layout l;
    for (std::size_t c = 0; c < chunks; ++c) {
      const chunk_facts& f = facts(stage, c);
      l.chunk_base[c] = l.param_count;
      l.param_count += f.params;
      l.kept = std::max(l.kept, f.kept);
      l.scratch = std::max(l.scratch, f.scratch);
    }
    l.slots = std::max<std::size_t>(1, report.peak_activations[stage]);  // evaluate uses one slot
    for (std::size_t c = 0; c < chunks; ++c) {
      const chunk_facts& f = facts(stage, c);
      l.x = std::max(l.x, in_elems(f));
      l.y = std::max(l.y, out_elems(f));
      l.dx = std::max(l.dx, in_elems(f));
    }
    const std::size_t t = sizeof(T);
    l.slot_bytes = detail::align_bytes(l.x * t) + detail::align_bytes(l.y * t) + detail::align_bytes(l.dx * t) +
                   detail::align_bytes(l.kept * t);
    std::size_t at = 0;
    auto take = [&](std::size_t bytes) {
      const std::size_t o = at;
      at += detail::align_bytes(bytes);
      return o;
    };
    // The model-state sections (state_sections.hpp): no master or moments when ZeRO shards them;
    // the master (mixed precision only) and the moments in M.
    const state_sections st = local_state_sections(l.param_count, mixed_precision, optimizer_state_in_arena);
    l.master_count = st.master;
    l.moment_count = st.moments;
    l.params_at = take(st.params * t);
    l.grads_at = take(st.grads * t);
    l.master_at = take(st.master * sizeof(M));
    l.m_at = take(st.moments * sizeof(M));
    l.v_at = take(st.moments * sizeof(M));
    l.slots_at = take(l.slots * l.slot_bytes);
    l.scratch_at = take(l.scratch * t);
    l.losses_at = take(rows * sizeof(L));
    l.tokens_at = take(Microbatches * rows * sizeof(std::int32_t));
    l.targets_at = take(Microbatches * rows * sizeof(std::int32_t));
    l.loss_work_at = take(TP > 1 ? vocab_parallel_cross_entropy_work<rows> * sizeof(double) : 0);
    l.bytes = at;
    return l;
  }
  /// Elements a chunk reads and writes per micro-batch: activations of act_rows rows (the
  /// sequence slice under SP), and the logits of the whole micro-batch (the head gathers).
  static constexpr std::size_t in_elems(const chunk_facts& f) { return act_rows * f.in_width; }
  static constexpr std::size_t out_elems(const chunk_facts& f) {
    return (f.virtual_stage + 1 == virtual_stages ? rows : act_rows) * f.out_width;
  }
  /// Bytes of stage `stage`'s arena: everything its step touches besides code and BLAS buffers.
  static constexpr std::size_t bytes_of_stage(std::size_t stage) { return layout_of(stage).bytes; }

  /// Elements of the tied gradient exchanged at once by the tied-embedding sum (after the last
  /// backward): the activation slots and the workspace (the arena from slots_at to losses_at) of
  /// the smallest stage of the embedding group, so that both ends cut the same pieces.
  static constexpr std::size_t tied_piece_elements() {
    std::size_t piece = static_cast<std::size_t>(-1);
    for (std::size_t s = 0; s < P; ++s)
      if (in_embedding_group(s)) {
        const stage_layout l = layout_of(s);
        piece = std::min(piece, (l.losses_at - l.slots_at) / sizeof(T));
      }
    return piece;
  }

  // ---- construction ----

  /// `pp` is this rank's pipeline group: P ranks, rank s running stage s.
  explicit pipeline_step(Comm& pp, train_options options = {})
    requires(TP == 1)
      : pipeline_step(pp, std::unique_ptr<tp_group>{}, options) {}

  /// tp × pp: `pp` as above (ranks with this rank's tp index), `tp` this stage's
  /// tensor-parallel group (TP ranks, rank = shard index).
  pipeline_step(Comm& pp, const Comm& tp, train_options options = {})
    requires(TP > 1)
      : pipeline_step(pp, make_tp_group(tp), options) {}

  /// As above with the tensor-parallel group already adapted (null when TP is 1).
  pipeline_step(Comm& pp, std::unique_ptr<tp_group> tp, train_options options)
      : pp_(checked_group(pp)),
        embed_(pp_.split(in_embedding_group(static_cast<std::size_t>(pp.rank())) ? 0 : 1, pp.rank())),
        options_(options),
        stage_(static_cast<std::size_t>(pp.rank())),
        layout_(layout_of(stage_)),
        arena_(static_cast<std::byte*>(::operator new[](layout_.bytes, std::align_val_t{64}))),
        tp_(std::move(tp)) {
    if (TP > 1 && (!tp_ || tp_->size() != static_cast<int>(TP)))
      throw std::invalid_argument("weft::pipeline_step: the tensor-parallel group has " +
                                  std::to_string(tp_ ? tp_->size() : 0) + " ranks but the step is built for tp " +
                                  std::to_string(TP) + ". Pass the group of the TP ranks that share this stage.");
    if (options_.grad_accum != 1)
      throw std::invalid_argument("weft::pipeline_step: grad_accum is " + std::to_string(options_.grad_accum) +
                                  ". Use 1: the pipeline's micro-batches<M> take the place of gradient accumulation.");
    std::memset(arena_.get(), 0, layout_.bytes);
    for (std::size_t c = 0; c < chunks; ++c) facts(stage_, c).visit(infos_, layout_.chunk_base[c], model::depth);
    for (const auto& p : infos_) {
      if (!groups_.empty() && groups_.back().decay == p.decay && groups_.back().offset + groups_.back().size == p.offset)
        groups_.back().size += p.size;
      else
        groups_.push_back({p.offset, p.size, p.decay});
    }
    // The tied copy on the last stage: same name as the first stage's, so the same values.
    if constexpr (mixed_precision && optimizer_state_in_arena) {
      // The f32 master is initialised; the T parameters are its rounded copy.
      initial_values(master());
      ops::cast(ctx_, flat(ctx_, params().data(), layout_.param_count),
                flat(ctx_, master().data(), layout_.param_count));
    } else if constexpr (mixed_precision) {
      // No master section (ZeRO's shards hold it): the same rounded values.
      std::vector<M> values(layout_.param_count);
      initial_values(std::span<M>(values));
      ops::cast(ctx_, flat(ctx_, params().data(), layout_.param_count), flat(ctx_, values.data(), layout_.param_count));
    } else if constexpr (TP == 1) {
      initialise_parameters(params(), infos_, options_.seed);
    } else {
      initialise_shards(params(), infos_, Plan::parameters(), TP, tp_rank(), options_.seed);
    }
    for (std::size_t c = 0; c < chunks; ++c)
      if (facts(stage_, c).carries_tied) skipped_.push_back({layout_.chunk_base[c], facts(stage_, c).tied_count});
    if constexpr (sequence_parallel) {
      for (const auto& p : infos_) {
        if (p.tp_role != role::replicated) continue;
        if (!replicated_.empty() && replicated_.back().offset + replicated_.back().size == p.offset)
          replicated_.back().size += p.size;
        else
          replicated_.push_back({p.offset, p.size});
      }
    }
    if (TP > 1 && tp_rank() != 0) {  // replicated parameters: tp rank 0 counts them
      for (const auto& p : infos_)
        if (p.tp_role == role::replicated) skipped_.push_back({p.offset, p.size});
      std::sort(skipped_.begin(), skipped_.end(), [](const range& a, const range& b) { return a.offset < b.offset; });
      std::vector<range> merged;
      for (const range& r : skipped_) {
        if (!merged.empty() && merged.back().offset + merged.back().size >= r.offset)
          merged.back().size = std::max(merged.back().offset + merged.back().size, r.offset + r.size) - merged.back().offset;
        else
          merged.push_back(r);
      }
      skipped_ = std::move(merged);
    }
    slot_of_.assign(Microbatches * chunks, npos);
    free_.reserve(layout_.slots);
    requests_.reserve(8);
  }

  pipeline_step(pipeline_step&&) noexcept = default;

  // ---- what data_parallel_step and checkpoints use ----
  std::size_t stage() const { return stage_; }
  const stage_layout& layout() const { return layout_; }
  /// Bytes of the arena this stage allocated (bytes_of_stage(stage())).
  std::size_t resident_bytes() const { return layout_.bytes; }
  std::span<T> params() const { return {at<T>(layout_.params_at), layout_.param_count}; }
  std::span<T> grads() const { return {at<T>(layout_.grads_at), layout_.param_count}; }
  /// The AdamW moments of the stage, in M (only when the arena holds them: not under ZeRO >= 1).
  std::span<M> adam_m() const
    requires optimizer_state_in_arena
  {
    return {at<M>(layout_.m_at), layout_.moment_count};
  }
  std::span<M> adam_v() const
    requires optimizer_state_in_arena
  {
    return {at<M>(layout_.v_at), layout_.moment_count};
  }
  /// The optimizer's f32 copy of the stage's parameters (mixed precision without ZeRO only;
  /// empty otherwise).
  std::span<M> master() const { return {at<M>(layout_.master_at), layout_.master_count}; }
  /// Writes the initial values of this stage's block (this tp rank's shard of it) in M into
  /// `out` (params().size() elements): the single-process run's values of the same elements. A
  /// mixed-precision master starts from them (data_parallel_step's ZeRO master shards too).
  void initial_values(std::span<M> out) const {
    if constexpr (TP == 1) initialise_parameters(out, infos_, options_.seed);
    else initialise_shards(out, infos_, Plan::parameters(), TP, tp_rank(), options_.seed);
  }
  /// Token ids and targets of micro-batch `mb` (filled on the first and the last stage).
  std::span<std::int32_t, rows> tokens(std::size_t mb = 0) const {
    return std::span<std::int32_t, rows>{at<std::int32_t>(layout_.tokens_at) + mb * rows, rows};
  }
  std::span<std::int32_t, rows> targets(std::size_t mb = 0) const {
    return std::span<std::int32_t, rows>{at<std::int32_t>(layout_.targets_at) + mb * rows, rows};
  }
  /// This stage's parameters with their global names, offsets in params().
  const std::vector<param_info>& parameter_infos() const { return infos_; }
  const std::vector<group>& parameter_groups() const { return groups_; }
  /// This rank's index in its tensor-parallel group (0 without one).
  std::size_t tp_rank() const { return tp_ ? static_cast<std::size_t>(tp_->rank()) : 0; }
  /// Writes this stage's parameters into `whole`, the single-process block (laid out as
  /// Plan::parameters()), at their places; other elements are left as they are. Collective over
  /// the tensor-parallel group when TP > 1.
  void gather_stage_parameters(std::span<T> whole) const { gather_stage(std::span<const T>(params()), whole); }
  /// The same for the f32 master weights (mixed precision without ZeRO: master() is not empty).
  void gather_stage_master(std::span<M> whole) const { gather_stage(std::span<const M>(master()), whole); }
  /// Runs of params() the global norm does not count (sorted): the last stage's tied copy, and
  /// with TP > 1 on tp ranks other than 0 the replicated parameters.
  std::span<const range> norm_skipped() const { return skipped_; }
  const train_options& options() const { return options_; }
  const host_context& context() const { return ctx_; }
  train_options& options() { return options_; }
  std::size_t step_count() const { return step_; }
  void set_step_count(std::size_t s) { step_ = s; }
  /// Gradients become final only after the last micro-batch of each chunk, so data parallelism
  /// reduces after forward_backward returns; the hook is not called.
  void set_grad_ready(grad_ready_hook) {}

  // ---- the step ----

  /// Calls fill(tokens, targets) once per micro-batch, in order, on the first and the last stage.
  template <class Fill>
  void load_microbatches(Fill&& fill) {
    if (stage_ != 0 && stage_ + 1 != P) return;
    for (std::size_t mb = 0; mb < Microbatches; ++mb) fill(tokens(mb), targets(mb));
  }

  /// Loads the micro-batches and runs the stage's list up to the update: all forwards and
  /// backwards, gradients scaled by 1/(rows·M·replicas), then the tied-embedding sum. Returns the
  /// mean loss over the M micro-batches (on every stage). `replicas`: the data-parallel size.
  template <class Fill>
  double forward_backward(Fill&& fill, std::size_t replicas = 1) {
    load_microbatches(fill);
    return run_schedule(replicas);
  }

  // step(fill, accept) of the pipeline alone (no data parallelism) and clip_gradients():
  // step_skeleton.hpp, with this schedule as the step's gradients.
  /// The schedule's M micro-batches; `fault` (tests only) scales the gradients the schedule
  /// formed, g += (fault - 1) g, and the loss.
  template <class Fill>
  step_gradients schedule_gradients(Fill& fill, double fault) {
    const double loss = forward_backward(fill, 1) * fault;
    if (fault != 1.0) {
      auto g = grads();
      ops::accumulate(ctx_, flat(ctx_, g), flat(ctx_, g), static_cast<T>(fault - 1.0));
    }
    return {loss, Microbatches};
  }

  /// Sum of squared gradients over the whole pipeline (every stage gets it), the tied copy once.
  double grad_norm_squared() {
    const T* g = grads().data();
    double sq = 0;
    std::size_t i = 0;
    for (const range& r : skipped_) {
      if (i < r.offset) sq = ops::sum_squares_continue(ctx_, sq, flat(ctx_, g + i, r.offset - i));
      i = r.offset + r.size;
    }
    if (i < layout_.param_count) sq = ops::sum_squares_continue(ctx_, sq, flat(ctx_, g + i, layout_.param_count - i));
    return model_parallel_sum(sq);
  }
  /// A squared-norm contribution summed over the pipeline group (and the tensor-parallel group).
  double model_parallel_sum(double local) {
    pp_.all_reduce(std::span<double>(&local, 1), reduce_op::sum);
    if constexpr (TP > 1) tp_->all_reduce_sum(&local, 1);
    return local;
  }

  /// AdamW on the stage's parameter groups with this step's learning rate; advances the step count.
  double apply_optimizer()
    requires optimizer_state_in_arena
  {
    if constexpr (mixed_precision)
      return detail::mixed_adamw_over_groups(ctx_, options_, step_, master().data(), params().data(), grads().data(),
                                             adam_m().data(), adam_v().data(), groups_);
    else
      return detail::adamw_over_groups(ctx_, options_, step_, params().data(), grads().data(), adam_m().data(),
                                             adam_v().data(), groups_);
  }

  /// Mean loss of `batches` micro-batches from `fill` (called on the first and the last stage),
  /// forward only, one micro-batch at a time through the virtual stages; every stage gets it.
  template <class Fill>
  double evaluate(Fill&& fill, std::size_t batches) {
    double sum = 0;
    for (std::size_t b = 0; b < batches; ++b) {
      if (stage_ == 0 || stage_ + 1 == P) fill(tokens(0), targets(0));
      for (std::size_t c = 0; c < chunks; ++c) {
        const chunk_facts& f = facts(stage_, c);
        const std::size_t vs = f.virtual_stage;
        if (vs > 0) pp_.recv(std::span<T>(x_of(0), in_elems(f)), static_cast<int>(prev()), act_tag(0, vs));
        f.forward(chunk_frame_of(c, 0, 0, false), vs == 0 ? nullptr : x_of(0), y_of(0));
        if (vs + 1 < virtual_stages) {
          pp_.send(std::span<const T>(y_of(0), out_elems(f)), static_cast<int>(next()), act_tag(0, vs + 1));
        } else {
          L* losses = at<L>(layout_.losses_at);
          if constexpr (TP == 1)
            ops::softmax_cross_entropy_forward<rows, vocab>(ctx_, packed_view<host_space, rows>(losses),
                                                            packed_view<host_space, rows, vocab>(y_of(0)),
                                                            packed_view<host_space, rows>(targets(0).data()));
          else
            vocab_parallel_cross_entropy_forward<rows, vocab_local>(ctx_, *tp_, losses, y_of(0), targets(0).data(),
                                                                          at<double>(layout_.loss_work_at));
          sum += ops::mean_loss(ctx_, flat(ctx_, losses, rows));
        }
      }
    }
    pp_.broadcast(std::span<double>(&sum, 1), static_cast<int>(P - 1));
    return batches ? sum / static_cast<double>(batches) : 0.0;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // The stage's block `block` (params() or master()) into the single-process block `whole`.
  template <class U>
  void gather_stage(std::span<const U> block, std::span<U> whole) const {
    const auto whole_infos = Plan::parameters();
    if constexpr (TP > 1) {
      gather_shards(*tp_, block, infos_, whole_infos, whole);
    } else {
      for (const auto& p : infos_) {
        const param_info& w = detail::whole_param(whole_infos, p.name);
        std::copy_n(block.data() + p.offset, p.size, whole.data() + w.offset);
      }
    }
  }

  static constexpr bool in_embedding_group(std::size_t stage) {
    for (std::size_t c = 0; c < chunks; ++c)
      if (facts(stage, c).tied_count > 0) return true;
    return false;
  }
  static Comm checked_group(Comm& pp) {
    if (static_cast<std::size_t>(pp.size()) != P)
      pp.abort(1, "weft::pipeline_step: the pipeline group has " + std::to_string(pp.size()) + " ranks but the pipeline has " +
                      std::to_string(P) + " stages. Split the world into groups of P ranks, rank s of a group running stage s.");
    return pp;
  }

  // ---- the arena ----
  template <class U>
  U* at(std::size_t byte_offset) const {
    return reinterpret_cast<U*>(arena_.get() + byte_offset);
  }
  std::byte* slot_base(std::size_t slot) const { return arena_.get() + layout_.slots_at + slot * layout_.slot_bytes; }
  T* x_of(std::size_t slot) const { return reinterpret_cast<T*>(slot_base(slot)); }
  T* y_of(std::size_t slot) const {
    return reinterpret_cast<T*>(slot_base(slot) + detail::align_bytes(layout_.x * sizeof(T)));
  }
  T* dx_of(std::size_t slot) const {
    return reinterpret_cast<T*>(reinterpret_cast<std::byte*>(y_of(slot)) + detail::align_bytes(layout_.y * sizeof(T)));
  }
  T* kept_of(std::size_t slot) const {
    return reinterpret_cast<T*>(reinterpret_cast<std::byte*>(dx_of(slot)) + detail::align_bytes(layout_.dx * sizeof(T)));
  }
  chunk_frame chunk_frame_of(std::size_t chunk, std::size_t slot, std::size_t mb, bool with_grads) const {
    const std::size_t base = layout_.chunk_base[chunk];
    return {params().data() + base, with_grads ? grads().data() + base : nullptr, kept_of(slot),
            at<T>(layout_.scratch_at), tokens(mb).data(), tp_.get(), ctx_};
  }

  // ---- slots ----
  std::size_t& slot_of(std::size_t mb, std::size_t chunk) { return slot_of_[mb * chunks + chunk]; }
  std::size_t take_slot(std::size_t mb, std::size_t chunk) {
    if (free_.empty())  // the static check rules this out; a broken invariant must not write out of bounds
      pp_.abort(1, "weft::pipeline_step: no free activation slot (internal error: the slot count is wrong).");
    const std::size_t s = free_.back();
    free_.pop_back();
    return slot_of(mb, chunk) = s;
  }
  void give_back(std::size_t mb, std::size_t chunk) {
    free_.push_back(slot_of(mb, chunk));
    slot_of(mb, chunk) = npos;
  }

  // ---- neighbours and tags: (activation or gradient, micro-batch, consuming virtual stage) ----
  std::size_t next() const { return (stage_ + 1) % P; }
  std::size_t prev() const { return (stage_ + P - 1) % P; }
  static int act_tag(std::size_t mb, std::size_t consumer) { return static_cast<int>(mb * virtual_stages + consumer); }
  static int grad_tag(std::size_t mb, std::size_t consumer) {
    return static_cast<int>((Microbatches + mb) * virtual_stages + consumer);
  }
  static_assert(2 * Microbatches * P * chunks <= 32767, "weft::pipeline_step: too many messages per step for MPI's smallest tag range. Use fewer micro-batches or chunks.");

  // Posts the group [i, e) of sends/recvs and waits for all of it.
  void run_group(std::span<const instruction> list, std::size_t i, std::size_t e) {
    std::size_t frees[8], n_frees = 0;
    for (std::size_t a = i; a < e; ++a) {  // sends first; slots whose dx leaves are given back after
      const instruction& x = list[a];
      const chunk_facts& f = facts(stage_, x.chunk);
      const std::size_t vs = f.virtual_stage;
      if (x.kind == instruction_kind::send_act) {
        requests_.push_back(pp_.isend(std::span<const T>(y_of(slot_of(x.mb, x.chunk)), out_elems(f)), x.peer,
                                      act_tag(x.mb, vs + 1)));
      } else if (x.kind == instruction_kind::send_grad) {
        requests_.push_back(pp_.isend(std::span<const T>(dx_of(slot_of(x.mb, x.chunk)), in_elems(f)), x.peer,
                                      grad_tag(x.mb, vs - 1)));
        if (n_frees == 8) flush_frees(frees, n_frees);
        frees[n_frees++] = static_cast<std::size_t>(x.mb) * chunks + x.chunk;
      }
    }
    flush_frees(frees, n_frees);  // dx is read by the send; x, y, kept are free for a recv_act
    for (std::size_t a = i; a < e; ++a) {
      const instruction& x = list[a];
      const chunk_facts& f = facts(stage_, x.chunk);
      const std::size_t vs = f.virtual_stage;
      if (x.kind == instruction_kind::recv_act) {
        const std::size_t s = take_slot(x.mb, x.chunk);
        requests_.push_back(pp_.irecv(std::span<T>(x_of(s), in_elems(f)), x.peer, act_tag(x.mb, vs)));
      } else if (x.kind == instruction_kind::recv_grad) {  // into y: its activation has left
        requests_.push_back(
            pp_.irecv(std::span<T>(y_of(slot_of(x.mb, x.chunk)), out_elems(f)), x.peer, grad_tag(x.mb, vs)));
      }
    }
    for (auto& r : requests_) r.wait();
    requests_.clear();
  }
  void flush_frees(std::size_t* frees, std::size_t& n) {
    for (std::size_t k = 0; k < n; ++k) give_back(frees[k] / chunks, frees[k] % chunks);
    n = 0;
  }

  void run_forward(std::size_t mb, std::size_t chunk, ops::compute_t<T> scale, double& loss_sum) {
    const chunk_facts& f = facts(stage_, chunk);
    const std::size_t vs = f.virtual_stage;
    const std::size_t s = vs == 0 ? take_slot(mb, chunk) : slot_of(mb, chunk);
    f.forward(chunk_frame_of(chunk, s, mb, true), vs == 0 ? nullptr : x_of(s), y_of(s));  // y: (batch, seq, out)
    if (vs + 1 == virtual_stages) {  // the loss; y now holds dlogits for the backward
      L* losses = at<L>(layout_.losses_at);
      if constexpr (TP == 1)
        ops::softmax_cross_entropy_forward_backward<rows, vocab>(
            ctx_, packed_view<host_space, rows>(losses), packed_view<host_space, rows, vocab>(y_of(s)),
            packed_view<host_space, rows>(targets(mb).data()), scale);
      else  // (batch, seq, vocab/tp)
        vocab_parallel_cross_entropy_forward_backward<rows, vocab_local>(ctx_, *tp_, losses, y_of(s), targets(mb).data(),
                                                                               scale, at<double>(layout_.loss_work_at));
      loss_sum += ops::mean_loss(ctx_, flat(ctx_, losses, rows));
    }
  }
  void run_backward(std::size_t mb, std::size_t chunk) {
    const chunk_facts& f = facts(stage_, chunk);
    const std::size_t vs = f.virtual_stage;
    const std::size_t s = slot_of(mb, chunk);
    T* din = vs == 0 ? nullptr : dx_of(s);  // (batch, seq, width); backward accumulates into it
    if (din) ops::zero(ctx_, flat(ctx_, din, in_elems(f)));
    f.backward(chunk_frame_of(chunk, s, mb, true), vs == 0 ? nullptr : x_of(s), y_of(s), din);
    if (vs == 0) give_back(mb, chunk);
  }

  // Under sequence parallelism each tp rank's replicated parameters (norms, learned positions,
  // row-parallel biases) got the gradient of its own sequence slice: the sum is the whole one.
  void sum_replicated_gradients() {
    for (const range& r : replicated_) tp_->all_reduce_sum(grads().data() + r.offset, r.size);
  }

  // The two copies of the tied parameter hold the sum of both stages' gradients. The peer's copy
  // arrives piece by piece in this stage's activation slots and workspace, idle once every
  // backward has run, and is added onto ours (a + b on one end, b + a on the other: the same
  // sum). Not an in-place all-reduce of the copy: Open MPI 4.1 runs that as a reduce-scatter and
  // an all-gather (ompi_coll_base_allreduce_intra_redscat_allgather) through a temporary of the
  // copy's size, of which it touches half at 2 ranks — 12 MiB for GPT-2-small's 24 MiB f32 token
  // table, growing with vocab × width / tp, beside the arena and outside the plan.
  void sum_tied_gradients() {
    for (std::size_t c = 0; c < chunks; ++c) {
      const chunk_facts& f = facts(stage_, c);
      if (f.tied_count == 0) continue;
      const std::span<T> g = grads().subspan(layout_.chunk_base[c] + f.tied_offset, f.tied_count);
      constexpr std::size_t piece = tied_piece_elements();
      if (embed_.size() != 2 || piece == 0) {  // no peer, or no room: the library's all-reduce
        embed_.all_reduce(g, reduce_op::sum);
        continue;
      }
      if (free_.size() != layout_.slots)  // the schedule check rules this out (updates follow every backward)
        pp_.abort(1, "weft::pipeline_step: an activation slot is held at the tied-gradient sum (internal error).");
      const int peer = 1 - embed_.rank();
      T* in = at<T>(layout_.slots_at);  // (piece): the peer's gradient
      for (std::size_t o = 0; o < g.size(); o += piece) {
        const std::size_t n = std::min(piece, g.size() - o);
        auto r = embed_.irecv(std::span<T>(in, n), peer, 0);
        auto s = embed_.isend(std::span<const T>(g.data() + o, n), peer, 0);
        r.wait();
        s.wait();
        ops::accumulate(ctx_, flat(ctx_, g.data() + o, n), flat(ctx_, static_cast<const T*>(in), n));
      }
    }
  }

  double run_schedule(std::size_t replicas) {
    ops::zero(ctx_, flat(ctx_, grads().data(), grads().size()));
    std::fill(slot_of_.begin(), slot_of_.end(), npos);
    free_.clear();
    for (std::size_t s = layout_.slots; s-- > 0;) free_.push_back(s);
    const auto scale = static_cast<ops::compute_t<T>>(1.0 / static_cast<double>(rows * Microbatches * replicas));
    double loss_sum = 0;
    const auto list = instructions.list(stage_);
    for (std::size_t i = 0; i < list.size();) {
      const instruction& x = list[i];
      if (x.is_comm()) {
        std::size_t e = i;
        while (e < list.size() && list[e].is_comm()) ++e;
        run_group(list, i, e);
        i = e;
        continue;
      }
      switch (x.kind) {
        case instruction_kind::forward: run_forward(x.mb, x.chunk, scale, loss_sum); break;
        case instruction_kind::backward: run_backward(x.mb, x.chunk); break;
        case instruction_kind::reduce_grads:  // data parallelism reduces after
          sum_tied_gradients();
          if constexpr (sequence_parallel) sum_replicated_gradients();
          break;
        default: break;  // optimizer_step: the caller's (step(), or data_parallel_step)
      }
      ++i;
    }
    pp_.broadcast(std::span<double>(&loss_sum, 1), static_cast<int>(P - 1));
    return loss_sum / static_cast<double>(Microbatches);
  }

  Comm pp_;
  Comm embed_;  // first and last stage (the tied gradient sum); a group of the others elsewhere
  std::vector<range> replicated_;  // runs of replicated parameters (summed over tp under SP)
  train_options options_;
  host_context ctx_{};
  std::size_t stage_;
  stage_layout layout_;
  std::unique_ptr<std::byte[], detail::aligned_free> arena_;
  std::vector<param_info> infos_;
  std::vector<group> groups_;
  std::vector<range> skipped_;
  std::vector<std::size_t> slot_of_;  // (micro-batch, chunk) -> slot while held
  std::vector<std::size_t> free_;
  std::vector<typename Comm::request> requests_;
  std::size_t step_ = 0;
  std::unique_ptr<tp_group> tp_;  // the stage's tensor-parallel group (TP > 1)
};

}  // namespace weft
