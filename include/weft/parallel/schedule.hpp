#pragma once
// ---- pipeline schedules: GPipe, 1F1B, interleaved 1F1B ----
// `make_schedule<one_f_one_b, P, M>()` is the per-stage instruction lists of a pipeline of
// P stages over M micro-batches, as a constexpr value already proven by the simulation of
// schedule_check.hpp: a generator bug would not compile. The orderings follow Megatron-LM
// (schedules.py):
//
// * gpipe          all M forwards, then all M backwards.
// * one_f_one_b    stage s runs min(P - s - 1, M) warm-up forwards, then alternates one
//                  forward and one backward, then drains the remaining backwards.
// * interleaved<V> each stage holds V model chunks (virtual stage c * P + s); the
//                  micro-batches go through the chunks in groups of P, with
//                  (P - s - 1) * 2 + (V - 1) * P warm-up forwards (all of them when
//                  M == P), then 1F1B, then the drain. Needs M % P == 0, as Megatron does.
//
// The sends and recvs sit where Megatron-LM's loops put them; see write_flat and
// write_interleaved for what that means for synchronous sends.
#include "weft/core/constant.hpp"            // dynamic
#include "weft/core/diagnostics.hpp"         // diag::at_least, diag::divisible
#include "weft/parallel/instruction.hpp"     // instruction
#include "weft/parallel/schedule_check.hpp"  // verify, simulate
#include "weft/parallel/schedule_table.hpp"  // schedule

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace weft {

// ---- schedule tags ----

/// All forwards, then all backwards; holds M activation sets per stage.
struct gpipe {
  static constexpr std::size_t chunks = 1;
};

/// One forward, one backward (PipeDream-flush / Megatron-LM); holds at most P - s sets on stage s.
struct one_f_one_b {
  static constexpr std::size_t chunks = 1;
};

/// Megatron-LM's interleaved 1F1B with `V` model chunks per stage; bubble shrinks by V.
template <std::size_t V>
struct interleaved {
  static constexpr std::size_t chunks = V;
};

/// The schedule families, for choosing one at run time.
enum class schedule_kind : std::uint8_t { gpipe, one_f_one_b, interleaved };

namespace detail {
template <class T>
struct tag_kind;
template <>
struct tag_kind<gpipe> : std::integral_constant<schedule_kind, schedule_kind::gpipe> {};
template <>
struct tag_kind<one_f_one_b> : std::integral_constant<schedule_kind, schedule_kind::one_f_one_b> {};
template <std::size_t V>
struct tag_kind<interleaved<V>> : std::integral_constant<schedule_kind, schedule_kind::interleaved> {};
}  // namespace detail

/// Satisfied by gpipe, one_f_one_b and interleaved<V>.
template <class T>
concept schedule_tag = requires { detail::tag_kind<T>::value; };

namespace detail {

// ---- generation ----

// Appends to one stage's list, naming work by its position k in the stage's order: the
// k-th forward (backward) is a (micro-batch, chunk). Micro-batches go through the chunks
// in groups of P, backwards through the chunks in reverse (Megatron-LM's
// get_model_chunk_id); with V = 1 the k-th is micro-batch k, chunk 0. Sends and recvs
// that no stage needs (the data on the first virtual stage, the loss on the last, k past
// the end) are skipped, so the writers can follow Megatron-LM's loops literally.
template <class S>
struct stage_writer {
  S& out;
  std::size_t st, p, m, v;

  constexpr std::size_t total() const { return m * v; }
  constexpr std::size_t mb(std::size_t k) const { return (k / (p * v)) * p + k % p; }
  constexpr std::size_t chunk(std::size_t k, bool fwd) const {
    const std::size_t c = (k % (p * v)) / p;
    return fwd ? c : v - 1 - c;
  }
  constexpr bool has_prev(std::size_t c) const { return p > 1 && c * p + st > 0; }
  constexpr bool has_next(std::size_t c) const { return p > 1 && c * p + st + 1 < p * v; }
  constexpr std::size_t prev() const { return (st + p - 1) % p; }
  constexpr std::size_t next() const { return (st + 1) % p; }

  constexpr void forward(std::size_t k) { out.push(st, instruction::forward(mb(k), chunk(k, true))); }
  constexpr void backward(std::size_t k) { out.push(st, instruction::backward(mb(k), chunk(k, false))); }
  constexpr void send_act(std::size_t k) {
    if (k < total() && has_next(chunk(k, true))) out.push(st, instruction::send_act(mb(k), chunk(k, true), next()));
  }
  constexpr void recv_act(std::size_t k) {
    if (k < total() && has_prev(chunk(k, true))) out.push(st, instruction::recv_act(mb(k), chunk(k, true), prev()));
  }
  constexpr void send_grad(std::size_t k) {
    if (k < total() && has_prev(chunk(k, false)))
      out.push(st, instruction::send_grad(mb(k), chunk(k, false), prev()));
  }
  constexpr void recv_grad(std::size_t k) {
    if (k < total() && has_next(chunk(k, false)))
      out.push(st, instruction::recv_grad(mb(k), chunk(k, false), next()));
  }
  constexpr void finish() {
    out.push(st, instruction::reduce_grads());
    out.push(st, instruction::optimizer_step());
  }
};

// Warm-up forwards of stage `st` (Megatron-LM's num_warmup_microbatches; all for gpipe).
constexpr std::size_t warmup(schedule_kind k, std::size_t st, std::size_t p, std::size_t m, std::size_t v) {
  switch (k) {
    case schedule_kind::gpipe: return m;
    case schedule_kind::one_f_one_b: return std::min(p - st - 1, m);
    case schedule_kind::interleaved:
      if (m == p) return m * v;  // all forwards first, then all backwards
      return std::min((p - st - 1) * 2 + (v - 1) * p, m * v);
  }
  return m * v;
}

// gpipe and one_f_one_b: Megatron-LM's forward_backward_pipelining_without_interleaving.
// Each recv stands right before its compute and each send right after it. Where a send
// and a recv meet between two computes, activation traffic goes first (recv_act before
// send_grad): the neighbour on the other end of the link does the same (send_act before
// recv_grad), so the lists also work with synchronous sends.
template <class S>
constexpr void write_flat(S& out, schedule_kind kind) {
  for (std::size_t st = 0; st < out.stages(); ++st) {
    stage_writer<S> w{out, st, out.stages(), out.microbatches(), 1};
    const std::size_t warm = warmup(kind, st, w.p, w.m, 1), steady = w.m - warm;
    for (std::size_t k = 0; k < warm; ++k) {
      w.recv_act(k);
      w.forward(k);
      w.send_act(k);
    }
    if (steady > 0) w.recv_act(warm);
    for (std::size_t k = 0; k < steady; ++k) {
      w.forward(warm + k);
      w.send_act(warm + k);
      w.recv_grad(k);
      w.backward(k);
      if (k + 1 < steady) w.recv_act(warm + k + 1);
      w.send_grad(k);
    }
    for (std::size_t k = steady; k < w.m; ++k) {
      w.recv_grad(k);
      w.backward(k);
      w.send_grad(k);
    }
    w.finish();
  }
}

// interleaved<V>: Megatron-LM's forward_backward_pipelining_with_interleaving. The
// sends/recvs after each step are one group: the sends of what was just computed, then
// the recvs of what comes next (the forward input one step ahead, the first backward's
// gradient at the end of the warm-up, the next backward's gradient in the steady state).
// Megatron posts such a group at once (batch_isend_irecv), and so must an executor: with
// each send waiting alone for its recv, stages block in sends to each other around the
// ring of virtual stages (report.synchronous deadlocks); posted as groups, the lists
// complete (report.grouped).
template <class S>
constexpr void write_interleaved(S& out) {
  for (std::size_t st = 0; st < out.stages(); ++st) {
    stage_writer<S> w{out, st, out.stages(), out.microbatches(), out.chunks()};
    const std::size_t warm = warmup(schedule_kind::interleaved, st, w.p, w.m, w.v), steady = w.total() - warm;
    w.recv_act(0);
    for (std::size_t k = 0; k < warm; ++k) {
      w.forward(k);
      w.send_act(k);
      w.recv_act(k + 1);
      if (k + 1 == warm && steady > 0) w.recv_grad(0);
    }
    for (std::size_t k = 0; k < steady; ++k) {
      w.forward(warm + k);
      w.backward(k);
      w.send_act(warm + k);
      w.send_grad(k);
      if (k + 1 < steady) w.recv_act(warm + k + 1);
      w.recv_grad(k + 1);
    }
    if (steady == 0) w.recv_grad(0);
    for (std::size_t k = steady; k < w.total(); ++k) {
      w.backward(k);
      w.send_grad(k);
      w.recv_grad(k + 1);
    }
    w.finish();
  }
}

template <class S>
constexpr void write_schedule(S& out, schedule_kind kind) {
  if (kind == schedule_kind::interleaved)
    write_interleaved(out);
  else
    write_flat(out, kind);
}

// What is wrong with (kind, P, M, V) in words; "" when nothing. The compile-time checks in
// make_schedule state the same conditions as static_asserts.
constexpr std::string_view pipeline_problem(schedule_kind k, std::size_t p, std::size_t m, std::size_t v) {
  if (p == 0 || m == 0)
    return "weft::pipeline: a pipeline needs at least one stage and one micro-batch. Use P >= 1 and "
           "microbatches<M> with M >= 1.";
  if (k == schedule_kind::one_f_one_b && m < p)
    return "weft::pipeline: one_f_one_b needs at least as many micro-batches as stages. Raise microbatches<M> "
           "to >= P or use gpipe.";
  if (k == schedule_kind::interleaved && v < 2)
    return "weft::pipeline: interleaved needs at least 2 model chunks per stage. Use interleaved<V> with V >= 2, "
           "or one_f_one_b.";
  if (k == schedule_kind::interleaved && m % p != 0)
    return "weft::pipeline: interleaved needs a micro-batch count divisible by the number of stages (as "
           "Megatron-LM does). Choose microbatches<M> with M % P == 0.";
  return "";
}

// The checks of make_schedule as named conditions (printed with their numbers).
template <class Tag, std::size_t P, std::size_t M>
struct pipeline_checks {
  static constexpr schedule_kind kind = tag_kind<Tag>::value;
  static constexpr std::size_t V = Tag::chunks;

  static constexpr bool sizes_positive = diag::at_least<P, 1> && diag::at_least<M, 1>;
  static_assert(sizes_positive,
                "weft::pipeline: a pipeline needs at least one stage and one micro-batch. Use P >= 1 and "
                "microbatches<M> with M >= 1.");
  static constexpr bool enough_microbatches = kind != schedule_kind::one_f_one_b || diag::at_least<M, P>;
  static_assert(enough_microbatches,
                "weft::pipeline: one_f_one_b needs at least as many micro-batches as stages. Raise microbatches<M> "
                "to >= P or use gpipe.");
  static constexpr bool enough_chunks = kind != schedule_kind::interleaved || diag::at_least<V, 2>;
  static_assert(enough_chunks,
                "weft::pipeline: interleaved needs at least 2 model chunks per stage. Use interleaved<V> with V >= 2, "
                "or one_f_one_b.");
  static constexpr bool microbatches_divisible = kind != schedule_kind::interleaved || diag::divisible<M, P>;
  static_assert(microbatches_divisible,
                "weft::pipeline: interleaved needs a micro-batch count divisible by the number of stages (as "
                "Megatron-LM does). Choose microbatches<M> with M % P == 0.");

  static constexpr bool ok = sizes_positive && enough_microbatches && enough_chunks && microbatches_divisible;
};

}  // namespace detail

/// The instruction lists of schedule `Tag` for `P` stages and `M` micro-batches, proven at
/// compile time (a fault is a compile error; see verify()).
template <schedule_tag Tag, std::size_t P, std::size_t M>
consteval schedule<P, M, Tag::chunks> make_schedule() {
  schedule<P, M, Tag::chunks> s{};
  if constexpr (detail::pipeline_checks<Tag, P, M>::ok) {  // else the static_asserts have spoken
    detail::write_schedule(s, detail::tag_kind<Tag>::value);
    detail::prove(s);
  }
  return s;
}

/// `make_schedule<Tag, P, M>()` as a variable: the schedule is generated and proven once.
template <schedule_tag Tag, std::size_t P, std::size_t M>
inline constexpr schedule<P, M, Tag::chunks> schedule_v = make_schedule<Tag, P, M>();

/// `verify(schedule_v<Tag, P, M>)` as a variable: the report (default costs), computed once.
template <schedule_tag Tag, std::size_t P, std::size_t M>
inline constexpr schedule_report<P> schedule_report_v = verify(schedule_v<Tag, P, M>);

/// Run-time sizes (tools, sweeps): the same lists in a `schedule<>`. Throws
/// std::invalid_argument with the compile-time message when (kind, p, m, v) is rejected,
/// and std::logic_error if the proof fails (it does not for these generators).
inline schedule<> make_schedule(schedule_kind kind, std::size_t p, std::size_t m, std::size_t v = 1) {
  if (kind != schedule_kind::interleaved) v = 1;
  if (const std::string_view why = detail::pipeline_problem(kind, p, m, v); !why.empty())
    throw std::invalid_argument(std::string(why));
  schedule<> s(p, m, v);
  detail::write_schedule(s, kind);
  if (const auto r = simulate(s); !r.ok()) throw std::logic_error(std::string(message_of(r.fault)));
  return s;
}

}  // namespace weft
