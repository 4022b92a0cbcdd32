#pragma once
// ---- the proof of a schedule: a simulation of all stages together ----
// `simulate(s)` runs every stage's list in order, all stages at once, in unit time:
//
// * compute (forward, backward) and the update (reduce_grads, optimizer_step) take the
//   time given in `schedule_costs` (forward 1, backward 2, the rest 0 by default);
// * a send is non-blocking and buffered (MPI isend with an unbounded buffer): it posts
//   its message and the stage goes on; a recv blocks until the matching message has been
//   posted. Messages are matched by what they carry — (activation or gradient,
//   micro-batch, virtual stage that consumes it) — not by arrival order.
//
// It ends with every list consumed (the proof holds) or with the first fault found:
// a malformed instruction, a deadlock (no stage can move), a send never received, a
// (micro-batch, chunk) computed twice or never, a backward before its forward, a
// compute before its input arrived, a send before its result exists, a misplaced
// update. When the buffered run holds, two runs with synchronous sends follow (a send
// completes only with its recv): one send/recv at a time (MPI_Ssend), and adjacent
// sends/recvs posted as a group (NCCL groups); each says whether the lists still complete.
//
// The report gives, per stage, the peak number of activation sets held (forwards done
// minus backwards done; a set is one (micro-batch, chunk)), the makespan and the bubble
// fraction (P * makespan - busy) / busy, where busy is the compute and update time of all
// stages: idle time over ideal compute time, Megatron-LM's definition, exact as a ratio of
// integers. On request, the start and end of every instruction (a schedule_timeline).
//
// With compile-time sizes all tables are std::arrays (nvcc's front end and clang cannot
// evaluate libstdc++'s std::vector); schedule<> uses vectors and runs at run time.
//
// `verify(s)` is the compile-time entry point: consteval, it returns the report and
// turns a fault into a compile error whose text is the fault's message.
#include "weft/core/constant.hpp"            // dynamic
#include "weft/core/fixed_string.hpp"        // fixed_string
#include "weft/parallel/instruction.hpp"     // instruction, instruction_kind
#include "weft/parallel/schedule_table.hpp"  // schedule, detail::schedule_error, detail::array_or_vector_t

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

namespace weft {

/// Time of each instruction kind, in integer units.
struct schedule_costs {
  std::uint64_t forward = 1;         // one (micro-batch, chunk)
  std::uint64_t backward = 2;        // one (micro-batch, chunk)
  std::uint64_t send = 0;            // time a stage spends posting a send
  std::uint64_t recv = 0;            // time a stage spends in a recv once the data is there
  std::uint64_t latency = 0;         // from the end of a send until its data can be received
  std::uint64_t reduce_grads = 0;    // data-parallel reduction
  std::uint64_t optimizer_step = 0;  // update
};

/// A non-negative fraction in lowest terms (`make_ratio` reduces).
struct ratio {
  std::uint64_t num = 0;
  std::uint64_t den = 1;
  friend constexpr bool operator==(const ratio&, const ratio&) = default;
  constexpr double value() const noexcept { return static_cast<double>(num) / static_cast<double>(den); }
};

/// `n / d` in lowest terms; 0/1 when `n` is 0.
constexpr ratio make_ratio(std::uint64_t n, std::uint64_t d) noexcept {
  const std::uint64_t g = std::gcd(n, d);
  return g == 0 ? ratio{0, 1} : ratio{n / g, d / g};
}

/// What the simulation found wrong; `none` when the proof holds.
enum class schedule_fault : std::uint8_t {
  none,
  bad_instruction,          // index out of range, wrong peer, or a message where none is needed
  deadlock,                 // no stage can move and some lists are not done
  unreceived_send,          // a message is never received
  repeated,                 // the same forward/backward/send/recv twice on one stage
  missing,                  // a (micro-batch, chunk) without forward or backward on its stage
  backward_before_forward,  // backward(mb, chunk) before forward(mb, chunk)
  input_missing,            // compute before its activation / gradient was received
  send_before_compute,      // a send of a result not computed yet
  update_misplaced,         // reduce_grads/optimizer_step not once each after all backwards
};

namespace detail {
// One message per fault, in the house form; verify() prints it as a compile error.
template <schedule_fault F>
inline constexpr fixed_string fault_text = "";
template <>
inline constexpr fixed_string fault_text<schedule_fault::bad_instruction> =
    "weft::schedule: an instruction is malformed: its micro-batch or chunk is out of range, or a send/recv names "
    "a peer that is not the neighbouring virtual stage, or carries a message no stage needs. Use mb < M and "
    "chunk < V; virtual stage chunk*P+s sends activations to stage (s+1)%P and gradients to stage (s-1)%P.";
template <>
inline constexpr fixed_string fault_text<schedule_fault::deadlock> =
    "weft::schedule: deadlock: every unfinished stage waits in a recv whose send is never reached. Reorder the "
    "lists so that the matching send on the peer stage comes before anything that waits for this stage "
    "(simulate(s).fault_stage and fault_index name a stuck recv).";
template <>
inline constexpr fixed_string fault_text<schedule_fault::unreceived_send> =
    "weft::schedule: a send is never received. Add the matching recv_act/recv_grad to the peer stage's list, or "
    "remove the send.";
template <>
inline constexpr fixed_string fault_text<schedule_fault::repeated> =
    "weft::schedule: an instruction repeats: a forward, backward, send or recv of the same (micro-batch, chunk) "
    "appears twice on one stage. Keep exactly one of each.";
template <>
inline constexpr fixed_string fault_text<schedule_fault::missing> =
    "weft::schedule: a (micro-batch, chunk) never runs forward or backward on its stage. Give every stage one "
    "forward and one backward per micro-batch and chunk.";
template <>
inline constexpr fixed_string fault_text<schedule_fault::backward_before_forward> =
    "weft::schedule: a backward runs before its forward on the same stage. Put forward(mb, chunk) before "
    "backward(mb, chunk).";
template <>
inline constexpr fixed_string fault_text<schedule_fault::input_missing> =
    "weft::schedule: a forward or backward runs before its input was received. Put recv_act(mb, chunk, from) "
    "before forward(mb, chunk) and recv_grad(mb, chunk, from) before backward(mb, chunk), except on the first "
    "and the last virtual stage.";
template <>
inline constexpr fixed_string fault_text<schedule_fault::send_before_compute> =
    "weft::schedule: a send carries a result that is not computed yet. Put send_act after forward(mb, chunk) "
    "and send_grad after backward(mb, chunk).";
template <>
inline constexpr fixed_string fault_text<schedule_fault::update_misplaced> =
    "weft::schedule: reduce_grads and optimizer_step must run once each per stage, after all of the stage's "
    "backwards, reduce_grads first. Move them to the end of the list.";

}  // namespace detail

/// The message of a fault ("" for none).
constexpr std::string_view message_of(schedule_fault f) noexcept {
  switch (f) {
    case schedule_fault::none: return "";
    case schedule_fault::bad_instruction: return detail::fault_text<schedule_fault::bad_instruction>.view();
    case schedule_fault::deadlock: return detail::fault_text<schedule_fault::deadlock>.view();
    case schedule_fault::unreceived_send: return detail::fault_text<schedule_fault::unreceived_send>.view();
    case schedule_fault::repeated: return detail::fault_text<schedule_fault::repeated>.view();
    case schedule_fault::missing: return detail::fault_text<schedule_fault::missing>.view();
    case schedule_fault::backward_before_forward:
      return detail::fault_text<schedule_fault::backward_before_forward>.view();
    case schedule_fault::input_missing: return detail::fault_text<schedule_fault::input_missing>.view();
    case schedule_fault::send_before_compute: return detail::fault_text<schedule_fault::send_before_compute>.view();
    case schedule_fault::update_misplaced: return detail::fault_text<schedule_fault::update_misplaced>.view();
  }
  return "";
}

/// When an instruction ran in the buffered simulation. For a recv, `ready` is when its
/// message could be received (end of the send plus latency); `end - start` includes the wait.
struct interval {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t ready = 0;
  bool reached = false;  // false for what a failed proof never got to
};

/// (stage, position in the stage's list) -> when it ran. Filled by simulate() on request;
/// a vector, so it is a run-time value or a transient one inside a constant evaluation.
using schedule_timeline = std::vector<std::vector<interval>>;

/// A run with synchronous sends: whether it completes, and its makespan (0 when it deadlocks).
struct sync_outcome {
  bool deadlock_free = false;
  std::uint64_t makespan = 0;
};

/// What simulate() found. With a compile-time stage count a literal type (a constexpr
/// value, a static_assert operand); `schedule_report<>` holds the peaks in a vector.
template <std::size_t P = dynamic>
struct schedule_report {
  schedule_fault fault = schedule_fault::none;
  std::size_t fault_stage = 0;  // where the fault was seen: stage ...
  std::size_t fault_index = 0;  // ... and position in its list (the list length when found at the end)

  detail::array_or_vector_t<std::size_t, P> peak_activations{};  // (stage) most (mb, chunk) sets held at once
  std::uint64_t makespan = 0;                                    // end of the last instruction of any stage
  std::uint64_t busy = 0;                                        // compute + update time, all stages
  ratio bubble_fraction{};                                       // (stages * makespan - busy) / busy

  sync_outcome synchronous{};  // each send waits for its recv, in list order (MPI_Ssend)
  sync_outcome grouped{};      // adjacent sends/recvs posted together (NCCL group, batch_isend_irecv)

  /// True when the proof holds.
  constexpr bool ok() const noexcept { return fault == schedule_fault::none; }
};

namespace detail {

// ---- the simulation ----

// Flags per (stage, micro-batch, chunk).
enum : std::uint8_t {
  did_forward = 1,
  did_backward = 2,
  got_act = 4,
  got_grad = 8,
  sent_act = 16,
  sent_grad = 32,
};

// Sizes and the wiring of virtual stages onto stages.
struct pipeline_shape {
  std::size_t p, m, v;
  constexpr std::size_t virtual_stages() const { return p * v; }
  constexpr std::size_t virtual_stage(std::size_t stage, std::size_t chunk) const { return chunk * p + stage; }
  // Only with several stages do neighbouring virtual stages live on different stages; with
  // one stage (interleaved on P = 1) chunks hand over locally and no message exists.
  constexpr bool remote() const { return p > 1; }
  constexpr std::size_t work(std::size_t stage, std::size_t mb, std::size_t chunk) const {
    return (stage * m + mb) * v + chunk;
  }
  constexpr std::size_t keys() const { return 2 * m * virtual_stages(); }
  // A message is named by what it carries: (activation or gradient, micro-batch, virtual
  // stage that consumes it), so a send and its recv have the same key. Only meaningful
  // for well-formed send/recv instructions.
  constexpr std::size_t key(const instruction& i, std::size_t stage) const {
    const std::size_t vs = virtual_stage(stage, i.chunk);
    switch (i.kind) {
      case instruction_kind::send_act: return i.mb * virtual_stages() + vs + 1;
      case instruction_kind::recv_act: return i.mb * virtual_stages() + vs;
      case instruction_kind::send_grad: return (m + i.mb) * virtual_stages() + vs - 1;
      default: return (m + i.mb) * virtual_stages() + vs;  // recv_grad
    }
  }
  // Field ranges, and for a send/recv: that a message is needed and goes to the neighbour.
  constexpr bool well_formed(const instruction& i, std::size_t stage) const {
    if (!i.is_compute() && !i.is_comm()) return true;  // reduce_grads, optimizer_step
    if (i.mb >= m || i.chunk >= v) return false;
    if (i.is_compute()) return true;
    const std::size_t vs = virtual_stage(stage, i.chunk);
    if (i.kind == instruction_kind::send_act || i.kind == instruction_kind::recv_grad)
      return remote() && vs + 1 < virtual_stages() && i.peer == (stage + 1) % p;
    return remote() && vs > 0 && i.peer == (stage + p - 1) % p;  // recv_act, send_grad
  }
};

// Stages that may be able to move, each queued at most once (so N = P places suffice).
// A stage leaves when it blocks and is woken by the event it waits for, so a run visits
// O(instructions) stages.
template <std::size_t N>
struct worklist {
  array_or_vector_t<std::size_t, N> items;
  array_or_vector_t<std::uint8_t, N> queued;  // (stage)
  std::size_t size = 0;
  constexpr explicit worklist(std::size_t p)
      : items(make_array_or_vector<std::size_t, N>(p)), queued(make_array_or_vector<std::uint8_t, N>(p)) {
    for (std::size_t st = p; st-- > 0;) wake(st);
  }
  constexpr bool empty() const { return size == 0; }
  constexpr std::size_t pop() {
    const std::size_t st = items[--size];
    queued[st] = 0;
    return st;
  }
  constexpr void wake(std::size_t st) {
    if (!queued[st]) {
      queued[st] = 1;
      items[size++] = st;
    }
  }
};

// Compile-time extents of the simulation's tables for schedule type S (dynamic for schedule<>).
template <class S>
struct table_sizes {
  static constexpr std::size_t p = S::static_stages, m = S::static_microbatches, v = S::static_chunks;
  static constexpr bool fixed = p != dynamic;
  static constexpr std::size_t work = fixed ? p * m * v : dynamic;     // (stage, mb, chunk)
  static constexpr std::size_t keys = fixed ? 2 * m * p * v : dynamic;  // pipeline_shape::keys()
};

// Where a fault was seen.
struct fault_site {
  schedule_fault fault = schedule_fault::none;
  std::size_t stage = 0, index = 0;
};

// The proof. Buffered sends: a send posts its message and the stage goes on; a recv waits
// until its message is posted. Checks every instruction as it runs, then what never ran.
template <class S>
struct buffered_run {
  struct message {
    std::uint8_t state = 0;  // 0 not sent, 1 posted, 2 received
    std::uint64_t ready = 0;
    std::size_t from_stage = 0, from_index = 0;  // the send, for the unreceived_send report
  };

  const S& s;
  const schedule_costs& c;
  schedule_timeline* timeline;  // filled when not null
  pipeline_shape sh;
  using Z = table_sizes<S>;
  template <class T>
  using per_stage = array_or_vector_t<T, Z::p>;
  per_stage<std::size_t> pc = make_array_or_vector<std::size_t, Z::p>(sh.p);         // next position
  per_stage<std::size_t> live = make_array_or_vector<std::size_t, Z::p>(sh.p);       // activation sets held
  per_stage<std::size_t> peak = make_array_or_vector<std::size_t, Z::p>(sh.p);       // most of them
  per_stage<std::size_t> backwards = make_array_or_vector<std::size_t, Z::p>(sh.p);  // done
  per_stage<std::uint8_t> updates = make_array_or_vector<std::uint8_t, Z::p>(sh.p);  // 1 reduced, 2 stepped
  per_stage<std::uint64_t> clock = make_array_or_vector<std::uint64_t, Z::p>(sh.p);
  array_or_vector_t<std::uint8_t, Z::work> flags =
      make_array_or_vector<std::uint8_t, Z::work>(sh.p * sh.m * sh.v);  // (stage, mb, chunk)
  array_or_vector_t<message, Z::keys> messages = make_array_or_vector<message, Z::keys>(sh.keys());  // (key)
  std::uint64_t busy = 0;
  worklist<Z::p> ready{sh.p};
  fault_site fault{};

  constexpr buffered_run(const S& s_, const schedule_costs& c_, schedule_timeline* timeline_)
      : s(s_), c(c_), timeline(timeline_), sh{s_.stages(), s_.microbatches(), s_.chunks()} {}

  enum class step_result : std::uint8_t { advanced, blocked, fault };

  constexpr step_result fail(schedule_fault f, std::size_t st) {
    fault = {f, st, pc[st]};
    return step_result::fault;
  }

  // Runs stage `st`'s next instruction if it can.
  constexpr step_result step(std::size_t st) {
    const instruction i = s.list(st)[pc[st]];
    if (!sh.well_formed(i, st)) return fail(schedule_fault::bad_instruction, st);
    const std::uint64_t start = clock[st];
    std::uint64_t& t = clock[st];
    std::uint64_t ready_at = 0;
    const std::size_t vs = sh.virtual_stage(st, i.chunk);
    std::uint8_t* f = i.is_compute() || i.is_comm() ? &flags[sh.work(st, i.mb, i.chunk)] : nullptr;
    switch (i.kind) {
      case instruction_kind::forward: {
        if (*f & did_forward) return fail(schedule_fault::repeated, st);
        // The input: data on virtual stage 0, else the received activation (or, on one
        // stage, the previous chunk's local forward).
        const bool input = vs == 0 || (sh.remote() ? (*f & got_act) != 0
                                                   : (flags[sh.work(st, i.mb, i.chunk - 1)] & did_forward) != 0);
        if (!input) return fail(schedule_fault::input_missing, st);
        *f |= did_forward;
        t += c.forward;
        busy += c.forward;
        peak[st] = std::max(peak[st], ++live[st]);
        break;
      }
      case instruction_kind::backward: {
        if (*f & did_backward) return fail(schedule_fault::repeated, st);
        if (!(*f & did_forward)) return fail(schedule_fault::backward_before_forward, st);
        const bool input = vs + 1 == sh.virtual_stages() ||
                           (sh.remote() ? (*f & got_grad) != 0
                                        : (flags[sh.work(st, i.mb, i.chunk + 1)] & did_backward) != 0);
        if (!input) return fail(schedule_fault::input_missing, st);
        *f |= did_backward;
        t += c.backward;
        busy += c.backward;
        --live[st];
        ++backwards[st];
        break;
      }
      case instruction_kind::send_act:
      case instruction_kind::send_grad: {
        const bool act = i.kind == instruction_kind::send_act;
        if (!(*f & (act ? did_forward : did_backward))) return fail(schedule_fault::send_before_compute, st);
        if (*f & (act ? sent_act : sent_grad)) return fail(schedule_fault::repeated, st);
        *f |= act ? sent_act : sent_grad;
        t += c.send;
        messages[sh.key(i, st)] = message{1, t + c.latency, st, pc[st]};
        ready.wake(i.peer);  // it may be waiting for this
        break;
      }
      case instruction_kind::recv_act:
      case instruction_kind::recv_grad: {
        const std::uint8_t got = i.kind == instruction_kind::recv_act ? got_act : got_grad;
        if (*f & got) return fail(schedule_fault::repeated, st);
        message& msg = messages[sh.key(i, st)];
        if (msg.state != 1) return step_result::blocked;  // not posted yet: wait
        msg.state = 2;
        *f |= got;
        ready_at = msg.ready;
        t = std::max(t, msg.ready) + c.recv;
        break;
      }
      case instruction_kind::reduce_grads:
        if (updates[st] != 0 || backwards[st] != sh.m * sh.v) return fail(schedule_fault::update_misplaced, st);
        updates[st] = 1;
        t += c.reduce_grads;
        busy += c.reduce_grads;
        break;
      case instruction_kind::optimizer_step:
        if (updates[st] != 1) return fail(schedule_fault::update_misplaced, st);
        updates[st] = 2;
        t += c.optimizer_step;
        busy += c.optimizer_step;
        break;
    }
    if (timeline) (*timeline)[st][pc[st]] = interval{start, t, ready_at, true};
    ++pc[st];
    return step_result::advanced;
  }

  constexpr void run() {
    if (timeline) {
      timeline->assign(sh.p, {});
      for (std::size_t st = 0; st < sh.p; ++st) (*timeline)[st].resize(s.list(st).size());
    }
    // Run each ready stage as far as it goes; a blocked stage waits for a send to wake it.
    while (!ready.empty()) {
      const std::size_t st = ready.pop();
      while (pc[st] < s.list(st).size()) {
        const step_result res = step(st);
        if (res == step_result::fault) return;
        if (res == step_result::blocked) break;
      }
    }
    for (std::size_t st = 0; st < sh.p; ++st)  // nothing can move: all done, or stuck
      if (pc[st] < s.list(st).size()) {
        fault = {schedule_fault::deadlock, st, pc[st]};
        return;
      }
    // ---- all lists consumed: what never happened ----
    for (const message& msg : messages)
      if (msg.state == 1) {
        fault = {schedule_fault::unreceived_send, msg.from_stage, msg.from_index};
        return;
      }
    for (std::size_t st = 0; st < sh.p; ++st) {
      const std::size_t end = s.list(st).size();
      for (std::size_t w = sh.work(st, 0, 0); w < sh.work(st + 1, 0, 0); ++w)
        if ((flags[w] & (did_forward | did_backward)) != (did_forward | did_backward)) {
          fault = {schedule_fault::missing, st, end};
          return;
        }
      if (updates[st] != 2) {
        fault = {schedule_fault::update_misplaced, st, end};
        return;
      }
    }
  }
};

// Synchronous sends: a send completes only together with its recv, when both stages have
// reached them. `grouped`: a run of sends/recvs standing next to each other in a list is
// posted at once and completes when all of it has matched (NCCL groups, Megatron-LM's
// batch_isend_irecv); otherwise each send/recv is posted on its own, in list order
// (MPI_Ssend). Run only on lists the buffered run accepted, so nothing is checked here.
template <class S>
constexpr sync_outcome synchronous_run(const S& s, const schedule_costs& c, bool grouped) {
  const pipeline_shape sh{s.stages(), s.microbatches(), s.chunks()};
  using Z = table_sizes<S>;
  // (stage) the open group [pc, group_end), its unmatched count; when it was posted, completed
  auto pc = make_array_or_vector<std::size_t, Z::p>(sh.p), group_end = pc, unmatched = pc;
  auto clock = make_array_or_vector<std::uint64_t, Z::p>(sh.p), finish = clock;
  // (key) whether one half of the message (its send or its recv) is posted, and when.
  auto waiting = make_array_or_vector<std::uint8_t, Z::keys>(sh.keys());
  auto posted_at = make_array_or_vector<std::uint64_t, Z::keys>(sh.keys());
  worklist<Z::p> ready(sh.p);

  // Post `x` of stage `st`; when its other half waits already, both complete. (The proof
  // has shown that each key has exactly one send and one recv.)
  auto post = [&](const instruction& x, std::size_t st) {
    const std::size_t k = sh.key(x, st);
    if (!waiting[k]) {
      waiting[k] = 1;
      posted_at[k] = clock[st];
      return;
    }
    const std::size_t q = x.peer, sender = x.is_send() ? st : q, receiver = x.is_send() ? q : st;
    const std::uint64_t sent = std::max(posted_at[k], clock[st]) + c.send;
    finish[sender] = std::max(finish[sender], sent);
    finish[receiver] = std::max(finish[receiver], sent + c.latency + c.recv);
    --unmatched[st];
    --unmatched[q];
    ready.wake(q);  // its group may be complete now
  };

  while (!ready.empty()) {
    const std::size_t st = ready.pop();
    while (pc[st] < s.list(st).size()) {
      const instruction& i = s.list(st)[pc[st]];
      if (!i.is_comm()) {
        clock[st] += i.kind == instruction_kind::forward        ? c.forward
                     : i.kind == instruction_kind::backward     ? c.backward
                     : i.kind == instruction_kind::reduce_grads ? c.reduce_grads
                                                                : c.optimizer_step;
        ++pc[st];
        continue;
      }
      if (group_end[st] <= pc[st]) {  // open the group at pc and post all of it
        std::size_t e = pc[st] + 1;
        while (grouped && e < s.list(st).size() && s.list(st)[e].is_comm()) ++e;
        group_end[st] = e;
        unmatched[st] = e - pc[st];
        finish[st] = clock[st];
        for (std::size_t a = pc[st]; a < e; ++a) post(s.list(st)[a], st);
      }
      if (unmatched[st] != 0) break;  // wait for the peers
      clock[st] = finish[st];
      pc[st] = group_end[st];
    }
  }
  for (std::size_t st = 0; st < sh.p; ++st)
    if (pc[st] < s.list(st).size()) return {};  // stuck: a deadlock
  return {true, *std::max_element(clock.begin(), clock.end())};
}

}  // namespace detail

namespace detail {
// Stops a constant evaluation with the message of `f`; nothing for `none`.
consteval void raise(schedule_fault f) {
  using enum schedule_fault;
  switch (f) {
    case none: break;
    case bad_instruction: schedule_error<fault_text<bad_instruction>>(); break;
    case deadlock: schedule_error<fault_text<deadlock>>(); break;
    case unreceived_send: schedule_error<fault_text<unreceived_send>>(); break;
    case repeated: schedule_error<fault_text<repeated>>(); break;
    case missing: schedule_error<fault_text<missing>>(); break;
    case backward_before_forward: schedule_error<fault_text<backward_before_forward>>(); break;
    case input_missing: schedule_error<fault_text<input_missing>>(); break;
    case send_before_compute: schedule_error<fault_text<send_before_compute>>(); break;
    case update_misplaced: schedule_error<fault_text<update_misplaced>>(); break;
  }
}

// The proof alone (the buffered run), for make_schedule: cheaper than a full report.
template <std::size_t P, std::size_t M, std::size_t V>
consteval void prove(const schedule<P, M, V>& s) {
  const schedule_costs costs{};
  buffered_run<schedule<P, M, V>> run{s, costs, nullptr};
  run.run();
  raise(run.fault.fault);
}
}  // namespace detail

/// Runs all stages of `s` together and reports the proof's outcome, the peak activations
/// and the bubble; with `timeline`, also when each instruction ran. Usable at compile time
/// and at run time.
template <std::size_t P, std::size_t M, std::size_t V>
constexpr schedule_report<P> simulate(const schedule<P, M, V>& s, const schedule_costs& costs = {},
                                      schedule_timeline* timeline = nullptr) {
  schedule_report<P> r{};
  detail::buffered_run<schedule<P, M, V>> run{s, costs, timeline};
  run.run();
  r.fault = run.fault.fault;
  r.fault_stage = run.fault.stage;
  r.fault_index = run.fault.index;
  if (!r.ok()) return r;
  if constexpr (P == dynamic) r.peak_activations.resize(s.stages());
  std::copy(run.peak.begin(), run.peak.end(), r.peak_activations.begin());
  r.busy = run.busy;
  r.makespan = *std::max_element(run.clock.begin(), run.clock.end());
  r.bubble_fraction = make_ratio(s.stages() * r.makespan - r.busy, r.busy == 0 ? 1 : r.busy);
  r.synchronous = detail::synchronous_run(s, costs, false);
  r.grouped = detail::synchronous_run(s, costs, true);
  return r;
}

/// The compile-time proof: the report of `s`, or a compile error whose text is the fault's
/// message ("weft::schedule: deadlock: ...").
template <std::size_t P, std::size_t M, std::size_t V>
consteval schedule_report<P> verify(const schedule<P, M, V>& s, const schedule_costs& costs = {}) {
  const auto r = simulate(s, costs);
  detail::raise(r.fault);
  return r;
}

}  // namespace weft
