// Compile-time proofs of pipeline schedules: every line below is checked by the compiler.
// Generating a schedule already proves it (make_schedule runs the simulation and a fault
// is a compile error); here the report's numbers are compared with the published
// formulas: bubble (p - 1) / (m v) (Megatron-LM), peak activations m (GPipe) and
// min(p - s, m) (1F1B) on stage s.
#include "weft/parallel/schedule.hpp"

#include <algorithm>
#include <cstddef>

namespace {

using namespace weft;

// ---- the formulas, stated independently of the generator ----

template <std::size_t P, std::size_t M, std::size_t V, std::size_t Stages>
constexpr bool bubble_is_megatron(const schedule_report<Stages>& r) {
  return r.ok() && r.bubble_fraction == make_ratio(P - 1, M * V) && r.makespan == 3 * (M * V + P - 1);
}

template <std::size_t P, std::size_t M>
constexpr bool gpipe_peaks(const schedule_report<P>& r) {
  return std::all_of(r.peak_activations.begin(), r.peak_activations.end(), [](std::size_t a) { return a == M; });
}

template <std::size_t P, std::size_t M>
constexpr bool one_f_one_b_peaks(const schedule_report<P>& r) {
  for (std::size_t s = 0; s < P; ++s)
    if (r.peak_activations[s] != std::min(P - s, M)) return false;
  return true;
}

// Both synchronous variants complete, as fast as the buffered run (messages cost 0).
template <std::size_t P>
constexpr bool synchronous_ok(const schedule_report<P>& r) {
  return r.synchronous.deadlock_free && r.grouped.deadlock_free && r.synchronous.makespan == r.makespan &&
         r.grouped.makespan == r.makespan;
}

// ---- gpipe ----
static_assert(bubble_is_megatron<4, 8, 1>(schedule_report_v<gpipe, 4, 8>));
static_assert(gpipe_peaks<4, 8>(schedule_report_v<gpipe, 4, 8>));
static_assert(synchronous_ok(schedule_report_v<gpipe, 4, 8>));
static_assert(bubble_is_megatron<4, 2, 1>(schedule_report_v<gpipe, 4, 2>));  // gpipe takes M < P
static_assert(gpipe_peaks<4, 2>(schedule_report_v<gpipe, 4, 2>));
static_assert(bubble_is_megatron<1, 5, 1>(schedule_report_v<gpipe, 1, 5>));  // no pipeline: no bubble
static_assert(schedule_report_v<gpipe, 1, 5>.bubble_fraction == ratio{0, 1});

// ---- one_f_one_b ----
static_assert(bubble_is_megatron<4, 8, 1>(schedule_report_v<one_f_one_b, 4, 8>));
static_assert(one_f_one_b_peaks<4, 8>(schedule_report_v<one_f_one_b, 4, 8>));
static_assert(synchronous_ok(schedule_report_v<one_f_one_b, 4, 8>));
static_assert(bubble_is_megatron<2, 2, 1>(schedule_report_v<one_f_one_b, 2, 2>));
static_assert(one_f_one_b_peaks<2, 2>(schedule_report_v<one_f_one_b, 2, 2>));
static_assert(bubble_is_megatron<8, 32, 1>(schedule_report_v<one_f_one_b, 8, 32>));
static_assert(one_f_one_b_peaks<8, 32>(schedule_report_v<one_f_one_b, 8, 32>));
static_assert(synchronous_ok(schedule_report_v<one_f_one_b, 8, 32>));
static_assert(bubble_is_megatron<3, 7, 1>(schedule_report_v<one_f_one_b, 3, 7>));

// ---- interleaved<V> ----
static_assert(bubble_is_megatron<4, 8, 2>(schedule_report_v<interleaved<2>, 4, 8>));
static_assert(bubble_is_megatron<2, 4, 3>(schedule_report_v<interleaved<3>, 2, 4>));
static_assert(bubble_is_megatron<4, 4, 2>(schedule_report_v<interleaved<2>, 4, 4>));  // M == P: all warm-up
static_assert(schedule_report_v<interleaved<2>, 4, 8>.grouped.deadlock_free);
static_assert(!schedule_report_v<interleaved<2>, 4, 8>.synchronous.deadlock_free);  // needs grouped sends
// The largest size kept in the compile-time tests: 8 stages, 32 micro-batches, 4 chunks.
static_assert(bubble_is_megatron<8, 32, 4>(schedule_report_v<interleaved<4>, 8, 32>));
// Peak in (micro-batch, chunk) sets: Megatron's warm-up (p - s - 1) * 2 + (v - 1) * p, plus one.
static_assert(schedule_report_v<interleaved<2>, 4, 8>.peak_activations[0] == 3 * 2 + 1 * 4 + 1);
static_assert(schedule_report_v<interleaved<2>, 4, 8>.peak_activations[3] == 0 * 2 + 1 * 4 + 1);

// ---- as shown in docs/schedules.md ----
// example-begin schedule_usage
constexpr auto& s = weft::schedule_v<weft::one_f_one_b, 4, 8>;        // proven at compile time
constexpr auto& r = weft::schedule_report_v<weft::one_f_one_b, 4, 8>;  // its numbers
static_assert(r.bubble_fraction == weft::make_ratio(3, 8));
static_assert(s.list(2)[0] == weft::instruction::recv_act(0, 0, 1));  // stage 2 starts by waiting
// example-end schedule_usage

// ---- the lists themselves ----
// Stage 0 of 1F1B starts with its P - 1 = 3 warm-up forwards (each followed by its send).
static_assert(schedule_v<one_f_one_b, 4, 8>.list(0)[0] == instruction::forward(0));
static_assert(schedule_v<one_f_one_b, 4, 8>.list(0)[1] == instruction::send_act(0, 0, 1));
static_assert(schedule_v<one_f_one_b, 4, 8>.list(0)[6] == instruction::forward(3));
static_assert(schedule_v<one_f_one_b, 4, 8>.list(0)[8] == instruction::recv_grad(0, 0, 1));
static_assert(schedule_v<one_f_one_b, 4, 8>.list(0)[9] == instruction::backward(0));
// make_schedule is consteval and returns the same value.
constexpr auto again = make_schedule<one_f_one_b, 4, 8>();
static_assert(again.lengths == schedule_v<one_f_one_b, 4, 8>.lengths);

// ---- a hand-written schedule, verified the same way ----
// example-begin hand_written
consteval weft::schedule<2, 1, 1> hand_written() {  // 2 stages, 1 micro-batch, 1 chunk
  using weft::instruction;
  weft::schedule<2, 1, 1> s{};
  s.push(0, instruction::forward(0));
  s.push(0, instruction::send_act(0, 0, 1));
  s.push(0, instruction::recv_grad(0, 0, 1));
  s.push(0, instruction::backward(0));
  s.push(1, instruction::recv_act(0, 0, 0));
  s.push(1, instruction::forward(0));
  s.push(1, instruction::backward(0));
  s.push(1, instruction::send_grad(0, 0, 0));
  for (std::size_t st = 0; st < 2; ++st) {
    s.push(st, instruction::reduce_grads());
    s.push(st, instruction::optimizer_step());
  }
  return s;
}
constexpr auto hand = weft::verify(hand_written());  // a fault would stop the compilation here
// example-end hand_written
static_assert(hand.makespan == 6 && hand.busy == 6 && hand.bubble_fraction == make_ratio(1, 1));
static_assert(hand.peak_activations[0] == 1 && hand.peak_activations[1] == 1);
// With other costs: a message latency of 1 adds it twice (activation and gradient).
static_assert(verify(hand_written(), schedule_costs{.latency = 1}).makespan == 8);

// ---- simulate() reports a fault as a value (verify() would not compile) ----
consteval schedule<2, 1, 1> deadlocked() {
  schedule<2, 1, 1> s = hand_written();
  s.ops[0][1] = instruction::recv_grad(0, 0, 1);  // stage 0 waits for the gradient ...
  s.ops[0][2] = instruction::send_act(0, 0, 1);   // ... before it sends the activation
  return s;
}
static_assert(simulate(deadlocked()).fault == schedule_fault::deadlock);
static_assert(simulate(deadlocked()).fault_stage == 0 && simulate(deadlocked()).fault_index == 1);

}  // namespace
