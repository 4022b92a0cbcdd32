// Pipeline schedules: Megatron-LM orderings, the simulation's proof and numbers (bubble,
// peak activations, synchronous variants), fault detection on hand-written lists, and
// the SVG timeline. Expected values come from the published formulas or are written out
// by hand, never from the code under test.
#include <catch2/catch.hpp>

#include "weft/parallel/schedule.hpp"
#include "weft/parallel/schedule_svg.hpp"

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace weft;

namespace {

// "F3" / "B3" (or "F3.1" with chunks) for the computes of one stage, in order.
template <class S>
std::string compute_order(const S& s, std::size_t stage) {
  std::string out;
  for (const instruction& i : s.list(stage)) {
    if (!i.is_compute()) continue;
    if (!out.empty()) out += ' ';
    out += i.kind == instruction_kind::forward ? 'F' : 'B';
    out += std::to_string(i.mb);
    if (s.chunks() > 1) out += '.' + std::to_string(i.chunk);
  }
  return out;
}

template <class S>
void print_lists(const S& s, std::ostream& os) {
  for (std::size_t st = 0; st < s.stages(); ++st) {
    os << "stage " << st << ":";
    for (const instruction& i : s.list(st)) {
      os << ' ' << name_of(i.kind);
      if (i.is_compute() || i.is_comm()) os << '(' << i.mb << ',' << i.chunk;
      if (i.is_comm()) os << ',' << i.peer;
      if (i.is_compute() || i.is_comm()) os << ')';
    }
    os << '\n';
  }
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Tags open and close in order; no stray '<' or '&' in text. Enough for what we write.
bool well_formed_xml(const std::string& doc) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = doc.find('<', i)) != std::string::npos) {
    const std::size_t end = doc.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = doc.substr(i + 1, end - i - 1);
    if (tag.empty() || tag.find('<') != std::string::npos) return false;
    if (tag[0] == '?') {  // <?xml ...?>
      if (tag.back() != '?') return false;
    } else if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    // Text up to the next tag must not hold a raw '&' that is not an entity.
    const std::size_t next = doc.find('<', end);
    const std::string text = doc.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1);
    for (std::size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1))
      if (text.find(';', a) == std::string::npos) return false;
    i = end + 1;
  }
  return open.empty() && doc.find("<svg") != std::string::npos;
}

// Sum of data-end - data-start over the rects of `cls`.
std::uint64_t rect_time(const std::string& doc, const std::string& cls) {
  std::uint64_t sum = 0;
  const std::string head = "<rect class=\"" + cls + "\"";
  for (std::size_t at = doc.find(head); at != std::string::npos; at = doc.find(head, at + 1)) {
    const std::size_t s = doc.find("data-start=\"", at) + 12, e = doc.find("data-end=\"", at) + 10;
    sum += std::stoull(doc.substr(e)) - std::stoull(doc.substr(s));
  }
  return sum;
}

struct config {
  schedule_kind kind;
  std::size_t p, m, v;
};

}  // namespace

TEST_CASE("instructions name what they do", "[parallel][schedule]") {
  const instruction i = instruction::send_act(3, 1, 2);
  CHECK(i.kind == instruction_kind::send_act);
  CHECK(i.mb == 3);
  CHECK(i.chunk == 1);
  CHECK(i.peer == 2);
  CHECK(i.is_send());
  CHECK(i.is_act_comm());
  CHECK_FALSE(i.is_recv());
  CHECK(name_of(instruction_kind::optimizer_step) == "optimizer_step");
  CHECK(instruction::forward(70000).mb == 0xffff);  // too wide: clamped, then rejected by verify
}

TEST_CASE("1F1B follows Megatron-LM: warm-up P - s - 1, steady 1F1B, cool-down", "[parallel][schedule]") {
  const auto s = make_schedule(schedule_kind::one_f_one_b, 4, 8);
  // Written out from Megatron-LM's forward_backward_pipelining_without_interleaving.
  CHECK(compute_order(s, 0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(compute_order(s, 1) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  CHECK(compute_order(s, 3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // The compile-time value is the same list.
  constexpr const auto& c = schedule_v<one_f_one_b, 4, 8>;
  for (std::size_t st = 0; st < 4; ++st) {
    REQUIRE(c.list(st).size() == s.list(st).size());
    CHECK(std::equal(c.list(st).begin(), c.list(st).end(), s.list(st).begin()));
  }
  // Stage 1's list around its first steady step: recv before compute, send after, activation
  // traffic before gradient traffic.
  const auto l = s.list(1);
  CHECK(l[0] == instruction::recv_act(0, 0, 0));
  CHECK(l[1] == instruction::forward(0));
  CHECK(l[2] == instruction::send_act(0, 0, 2));
  CHECK(l[l.size() - 2] == instruction::reduce_grads());
  CHECK(l[l.size() - 1] == instruction::optimizer_step());
}

TEST_CASE("gpipe runs all forwards, then all backwards", "[parallel][schedule]") {
  const auto s = make_schedule(schedule_kind::gpipe, 3, 4);
  for (std::size_t st = 0; st < 3; ++st) CHECK(compute_order(s, st) == "F0 F1 F2 F3 B0 B1 B2 B3");
}

TEST_CASE("interleaved follows Megatron-LM's chunk order and warm-up", "[parallel][schedule]") {
  // P = 2, M = 4, V = 2: micro-batches go through the chunks in groups of P; warm-up is
  // (P - s - 1) * 2 + (V - 1) * P forwards: 4 on stage 0, 2 on stage 1.
  const auto s = make_schedule(schedule_kind::interleaved, 2, 4, 2);
  CHECK(compute_order(s, 0) == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  CHECK(compute_order(s, 1) == "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // M == P: all forwards first.
  const auto a = make_schedule(schedule_kind::interleaved, 2, 2, 2);
  CHECK(compute_order(a, 1) == "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
  // The ring: stage P-1's chunk 0 feeds stage 0's chunk 1.
  const auto l0 = s.list(0);
  CHECK(std::find(l0.begin(), l0.end(), instruction::recv_act(0, 1, 1)) != l0.end());
  const auto l1 = s.list(1);
  CHECK(std::find(l1.begin(), l1.end(), instruction::send_act(0, 0, 0)) != l1.end());
}

TEST_CASE("bubble fraction equals (p-1)/m and (p-1)/(m v) exactly", "[parallel][schedule]") {
  std::vector<config> configs;
  for (std::size_t p : {1, 2, 3, 4, 8})
    for (std::size_t m : {1, 2, 4, 5, 8, 16, 32}) {
      configs.push_back({schedule_kind::gpipe, p, m, 1});
      if (m >= p) configs.push_back({schedule_kind::one_f_one_b, p, m, 1});
      if (m % p == 0)
        for (std::size_t v : {2, 3, 4}) configs.push_back({schedule_kind::interleaved, p, m, v});
    }
  for (const config& c : configs) {
    CAPTURE(static_cast<int>(c.kind), c.p, c.m, c.v);
    const auto r = simulate(make_schedule(c.kind, c.p, c.m, c.v));
    REQUIRE(r.ok());
    // Megatron-LM (Narayanan et al. 2021): bubble time / ideal time = (p - 1) / (m v).
    CHECK(r.bubble_fraction == make_ratio(c.p - 1, c.m * c.v));
    // Equivalently, with forward 1 and backward 2 per chunk: makespan = 3 (m v + p - 1).
    CHECK(r.makespan == 3 * (c.m * c.v + c.p - 1));
    CHECK(r.busy == 3 * c.p * c.m * c.v);
  }
}

TEST_CASE("the bubble formula does not depend on the forward/backward cost ratio", "[parallel][schedule]") {
  for (const auto& [f, b] : {std::pair<std::uint64_t, std::uint64_t>{1, 1}, {2, 3}, {3, 1}, {1, 5}})
    for (const config& c : {config{schedule_kind::gpipe, 4, 6, 1}, config{schedule_kind::one_f_one_b, 4, 8, 1},
                            config{schedule_kind::interleaved, 4, 8, 2}, config{schedule_kind::interleaved, 3, 9, 3}}) {
      CAPTURE(f, b, static_cast<int>(c.kind), c.p, c.m, c.v);
      const auto r = simulate(make_schedule(c.kind, c.p, c.m, c.v), schedule_costs{.forward = f, .backward = b});
      CHECK(r.bubble_fraction == make_ratio(c.p - 1, c.m * c.v));
      CHECK(r.makespan == (f + b) * (c.m * c.v + c.p - 1));
    }
}

TEST_CASE("peak activations: gpipe m, 1F1B min(p - s, m), interleaved warm-up + 1", "[parallel][schedule]") {
  for (std::size_t p : {1, 2, 4, 8})
    for (std::size_t m : {1, 3, 8, 16}) {
      CAPTURE(p, m);
      const auto g = simulate(make_schedule(schedule_kind::gpipe, p, m));
      for (std::size_t s = 0; s < p; ++s) CHECK(g.peak_activations[s] == m);
      if (m < p) continue;
      const auto o = simulate(make_schedule(schedule_kind::one_f_one_b, p, m));
      for (std::size_t s = 0; s < p; ++s) CHECK(o.peak_activations[s] == std::min(p - s, m));
      if (m % p != 0) continue;
      for (std::size_t v : {2, 4}) {
        // In (micro-batch, chunk) sets: Megatron-LM's warm-up forwards plus the one of the
        // first steady step; all m v when M == P.
        const auto r = simulate(make_schedule(schedule_kind::interleaved, p, m, v));
        for (std::size_t s = 0; s < p; ++s)
          CHECK(r.peak_activations[s] == (m == p ? m * v : std::min((p - s - 1) * 2 + (v - 1) * p + 1, m * v)));
      }
    }
}

TEST_CASE("synchronous sends: gpipe and 1F1B as listed, interleaved only as groups", "[parallel][schedule]") {
  for (std::size_t p : {2, 3, 4, 8})
    for (std::size_t m : {p, 2 * p, 3 * p}) {
      CAPTURE(p, m);
      for (const auto k : {schedule_kind::gpipe, schedule_kind::one_f_one_b}) {
        const auto r = simulate(make_schedule(k, p, m));
        CHECK(r.synchronous.deadlock_free);
        CHECK(r.grouped.deadlock_free);
        CHECK(r.synchronous.makespan == r.makespan);  // zero-cost messages: no slower
      }
      const auto i = simulate(make_schedule(schedule_kind::interleaved, p, m, 2));
      CHECK_FALSE(i.synchronous.deadlock_free);
      CHECK(i.synchronous.makespan == 0);
      CHECK(i.grouped.deadlock_free);
      CHECK(i.grouped.makespan == i.makespan);
    }
}

TEST_CASE("the synchronous runs tell head-to-head sends from paired ones", "[parallel][schedule]") {
  // Two stages, two micro-batches. Stage 0 sends both activations before it takes a
  // gradient; stage 1, after micro-batch 0, either sends its gradient first (head to head
  // with stage 0's second send) or receives micro-batch 1 first (paired).
  auto build = [](bool stage1_recv_first) {
    schedule<2, 2, 1> s{};
    // Stage 0: forward both, send both, then take both gradients.
    s.push(0, instruction::forward(0));
    s.push(0, instruction::forward(1));
    s.push(0, instruction::send_act(0, 0, 1));
    s.push(0, instruction::send_act(1, 0, 1));
    s.push(0, instruction::recv_grad(0, 0, 1));
    s.push(0, instruction::backward(0));
    s.push(0, instruction::recv_grad(1, 0, 1));
    s.push(0, instruction::backward(1));
    s.push(1, instruction::recv_act(0, 0, 0));
    s.push(1, instruction::forward(0));
    s.push(1, instruction::backward(0));
    if (stage1_recv_first) s.push(1, instruction::recv_act(1, 0, 0));
    s.push(1, instruction::send_grad(0, 0, 0));
    if (!stage1_recv_first) s.push(1, instruction::recv_act(1, 0, 0));
    s.push(1, instruction::forward(1));
    s.push(1, instruction::backward(1));
    s.push(1, instruction::send_grad(1, 0, 0));
    for (std::size_t st : {0, 1}) {
      s.push(st, instruction::reduce_grads());
      s.push(st, instruction::optimizer_step());
    }
    return s;
  };
  const auto head_to_head = simulate(build(false));
  REQUIRE(head_to_head.ok());                        // buffered sends: fine
  CHECK_FALSE(head_to_head.synchronous.deadlock_free);  // each send waits: both wait
  CHECK(head_to_head.grouped.deadlock_free);          // posted together: fine
  const auto paired = simulate(build(true));
  REQUIRE(paired.ok());
  CHECK(paired.synchronous.deadlock_free);
}

TEST_CASE("hand-written faults are found where they are", "[parallel][schedule]") {
  // A correct 2-stage, 1-micro-batch list to break in one place at a time.
  auto good = [] {
    schedule<> s(2, 1, 1);
    s.push(0, instruction::forward(0));
    s.push(0, instruction::send_act(0, 0, 1));
    s.push(0, instruction::recv_grad(0, 0, 1));
    s.push(0, instruction::backward(0));
    s.push(1, instruction::recv_act(0, 0, 0));
    s.push(1, instruction::forward(0));
    s.push(1, instruction::backward(0));
    s.push(1, instruction::send_grad(0, 0, 0));
    for (std::size_t st : {0, 1}) {
      s.push(st, instruction::reduce_grads());
      s.push(st, instruction::optimizer_step());
    }
    return s;
  };
  const auto ok = simulate(good());
  REQUIRE(ok.ok());
  CHECK(ok.makespan == 6);  // F F B B: 1 + 1 + 2 + 2
  CHECK(ok.bubble_fraction == make_ratio(1, 1));  // (2 * 6 - 6) / 6: one stage idle at a time

  auto broken = [&](auto edit) {
    auto s = good();
    edit(s.ops);
    return simulate(s);
  };
  using L = std::vector<std::vector<instruction>>;
  // Stage 0 waits for the gradient before it sends the activation.
  auto r = broken([](L& l) { std::swap(l[0][1], l[0][2]); });
  CHECK(r.fault == schedule_fault::deadlock);
  CHECK((r.fault_stage == 0 && r.fault_index == 1));
  CHECK(message_of(r.fault).starts_with("weft::schedule: deadlock"));

  r = broken([](L& l) { l[0][1] = instruction::send_act(0, 0, 0); });  // wrong peer
  CHECK(r.fault == schedule_fault::bad_instruction);
  r = broken([](L& l) { l[1][1] = instruction::forward(0, 1); });  // chunk 1 of V = 1
  CHECK(r.fault == schedule_fault::bad_instruction);
  r = broken([](L& l) { l[1].erase(l[1].begin()); });  // no recv_act
  CHECK(r.fault == schedule_fault::input_missing);
  CHECK(r.fault_stage == 1);
  r = broken([](L& l) { std::swap(l[0][0], l[0][1]); });  // send before forward
  CHECK(r.fault == schedule_fault::send_before_compute);
  r = broken([](L& l) { std::swap(l[1][1], l[1][2]); });  // backward before forward
  CHECK(r.fault == schedule_fault::backward_before_forward);
  r = broken([](L& l) { l[0].insert(l[0].begin() + 1, instruction::forward(0)); });
  CHECK(r.fault == schedule_fault::repeated);
  r = broken([](L& l) { l[0].erase(l[0].begin() + 3); });  // stage 0 never runs backward
  CHECK(r.fault == schedule_fault::update_misplaced);      // ... so reduce_grads comes too early
  r = broken([](L& l) {  // drop stage 0's backward and its update: the work is missing
    l[0].erase(l[0].begin() + 3);
    l[0].pop_back();
    l[0].pop_back();
  });
  CHECK(r.fault == schedule_fault::missing);
  r = broken([](L& l) { l[1].pop_back(); });  // no optimizer_step
  CHECK(r.fault == schedule_fault::update_misplaced);
  r = broken([](L& l) {  // stage 0 sends its activation to a stage 1 that does nothing
    l[0].resize(2);
    l[1].clear();
  });
  CHECK(r.fault == schedule_fault::unreceived_send);  // reported before the missing work
  CHECK((r.fault_stage == 0 && r.fault_index == 1));
}

TEST_CASE("push() past the end of a run-time schedule throws the compile-time message", "[parallel][schedule]") {
  schedule<> s(2, 1, 1);  // room for 6 * 1 * 1 + 2 = 8 instructions per stage
  for (int k = 0; k < 8; ++k) s.push(0, instruction::forward(0));
  CHECK_THROWS_WITH(s.push(0, instruction::forward(0)), Catch::Contains("weft::schedule: push() past the end"));
  CHECK_THROWS_AS(s.push(2, instruction::forward(0)), std::logic_error);  // no stage 2
}

TEST_CASE("costs: latency and update time lengthen the step", "[parallel][schedule]") {
  const auto s = make_schedule(schedule_kind::one_f_one_b, 4, 8);
  const auto base = simulate(s);
  const auto slow = simulate(s, schedule_costs{.latency = 1});
  CHECK(slow.makespan > base.makespan);
  const auto upd = simulate(s, schedule_costs{.reduce_grads = 5, .optimizer_step = 1});
  CHECK(upd.makespan == base.makespan + 6);  // every stage ends with them; the last-finishing stage sets it
  CHECK(upd.busy == base.busy + 4 * 6);
}

TEST_CASE("the timeline is consistent with the report", "[parallel][schedule]") {
  const auto s = make_schedule(schedule_kind::interleaved, 4, 8, 2);
  schedule_timeline tl;
  const auto r = simulate(s, {}, &tl);
  REQUIRE(r.ok());
  REQUIRE(tl.size() == 4);
  std::uint64_t busy = 0;
  for (std::size_t st = 0; st < 4; ++st) {
    REQUIRE(tl[st].size() == s.list(st).size());
    std::uint64_t t = 0;
    for (std::size_t k = 0; k < tl[st].size(); ++k) {
      const interval& i = tl[st][k];
      CHECK(i.reached);
      CHECK(i.start == t);  // one stage does one thing at a time, in list order
      CHECK(i.end >= i.start);
      if (s.list(st)[k].is_recv()) CHECK(i.end == std::max(i.start, i.ready));
      if (s.list(st)[k].is_compute()) busy += i.end - i.start;
      t = i.end;
    }
    CHECK(t <= r.makespan);
  }
  CHECK(busy == r.busy);
}

TEST_CASE("run-time make_schedule rejects what the compile-time one rejects", "[parallel][schedule]") {
  auto message = [](schedule_kind k, std::size_t p, std::size_t m, std::size_t v) {
    try {
      (void)make_schedule(k, p, m, v);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(schedule_kind::one_f_one_b, 4, 3, 1) ==
        "weft::pipeline: one_f_one_b needs at least as many micro-batches as stages. Raise microbatches<M> to >= P "
        "or use gpipe.");
  CHECK(message(schedule_kind::interleaved, 4, 6, 2).starts_with("weft::pipeline: interleaved needs a micro-batch "
                                                                 "count divisible"));
  CHECK(message(schedule_kind::interleaved, 4, 8, 1).starts_with("weft::pipeline: interleaved needs at least 2"));
  CHECK(message(schedule_kind::gpipe, 0, 8, 1).starts_with("weft::pipeline: a pipeline needs at least one stage"));
  CHECK(message(schedule_kind::gpipe, 4, 3, 1).empty());  // gpipe takes any M
}

TEST_CASE("the SVG timeline has one box per compute and the bubble in grey", "[parallel][schedule][svg]") {
  for (const config& c : {config{schedule_kind::gpipe, 4, 8, 1}, config{schedule_kind::one_f_one_b, 4, 8, 1},
                          config{schedule_kind::interleaved, 4, 8, 2}, config{schedule_kind::interleaved, 2, 2, 3}}) {
    CAPTURE(static_cast<int>(c.kind), c.p, c.m, c.v);
    const auto s = make_schedule(c.kind, c.p, c.m, c.v);
    std::ostringstream os;
    write_schedule_svg(os, s);
    const std::string doc = os.str();
    CHECK(well_formed_xml(doc));
    const std::size_t fwd = count(doc, "<rect class=\"fwd\""), bwd = count(doc, "<rect class=\"bwd\"");
    const std::size_t idle = count(doc, "<rect class=\"idle\"");
    CHECK(fwd == c.p * c.m * c.v);
    CHECK(bwd == c.p * c.m * c.v);
    CHECK(count(doc, "<rect") == fwd + bwd + idle);
    CHECK(idle >= 2 * (c.p - 1));  // at least the fill before and the drain after, off stage 0 / P-1
    // The grey boxes add up to the bubble: P * makespan - busy = (p - 1) * 3 per stage.
    CHECK(rect_time(doc, "idle") == c.p * (c.p - 1) * 3);
    CHECK(rect_time(doc, "fwd") == c.p * c.m * c.v);
    CHECK(rect_time(doc, "bwd") == 2 * c.p * c.m * c.v);
  }
  // The one in the docs, printed for a look: a 1F1B of 2 stages over 3 micro-batches.
  const auto s = make_schedule(schedule_kind::one_f_one_b, 2, 3);
  print_lists(s, std::cout);
  const auto r = simulate(s);
  std::cout << "makespan " << r.makespan << ", bubble " << r.bubble_fraction.num << "/" << r.bubble_fraction.den
            << ", peak activations " << r.peak_activations[0] << " " << r.peak_activations[1] << "\n";
}

TEST_CASE("a failed proof is drawn as far as it got, titled with the fault", "[parallel][schedule][svg]") {
  schedule<> s(2, 1, 1);
  s.push(0, instruction::forward(0));
  s.push(0, instruction::recv_grad(0, 0, 1));  // waits for a gradient that needs its activation first
  s.push(0, instruction::send_act(0, 0, 1));
  s.push(1, instruction::recv_act(0, 0, 0));
  std::ostringstream os;
  write_schedule_svg(os, s);
  CHECK(well_formed_xml(os.str()));
  CHECK(os.str().find("weft::schedule: deadlock") != std::string::npos);
  CHECK(count(os.str(), "<rect class=\"fwd\"") == 1);
}
