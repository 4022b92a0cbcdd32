/*
 * schedule_svg: draw a pipeline schedule's timeline as SVG.
 *
 *   schedule_svg gpipe|1f1b|interleaved P M [V] [--forward N] [--backward N] [-o FILE]
 *
 * Generates the instruction lists of the chosen schedule for P stages, M micro-batches
 * and V model chunks per stage (interleaved only), runs weft's schedule simulation and
 * writes the timeline (one row per stage; forwards, backwards, bubble, messages) to FILE
 * or standard output. A one-line summary (makespan, bubble fraction, peak activations,
 * whether synchronous sends would deadlock) goes to standard error.
 *
 *   g++ -std=c++20 -O2 -Iinclude tools/schedule_svg.cpp -o schedule_svg
 *   ./schedule_svg interleaved 4 8 2 -o interleaved.svg
 */
#include "weft/parallel/schedule.hpp"      // make_schedule, simulate
#include "weft/parallel/schedule_svg.hpp"  // write_schedule_svg

#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

namespace {

int usage() {
  std::cerr << "usage: schedule_svg gpipe|1f1b|interleaved P M [V] [--forward N] [--backward N] [-o FILE]\n";
  return 2;
}

// A positive integer argument, or 0 when it is not one.
std::size_t count(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s) {
    if (ch < '0' || ch > '9' || n > 100000) return 0;
    n = n * 10 + static_cast<std::size_t>(ch - '0');
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const std::string_view name = argv[1];
  weft::schedule_kind kind{};
  if (name == "gpipe") kind = weft::schedule_kind::gpipe;
  else if (name == "1f1b" || name == "one_f_one_b") kind = weft::schedule_kind::one_f_one_b;
  else if (name == "interleaved") kind = weft::schedule_kind::interleaved;
  else return usage();

  const std::size_t p = count(argv[2]), m = count(argv[3]);
  std::size_t v = 1;
  int next = 4;
  if (kind == weft::schedule_kind::interleaved) {
    if (argc < 5) return usage();
    v = count(argv[4]);
    next = 5;
  }
  weft::schedule_costs costs{};
  std::string out;
  for (; next < argc; ++next) {
    const std::string_view a = argv[next];
    if (next + 1 >= argc) return usage();
    if (a == "--forward") costs.forward = count(argv[++next]);
    else if (a == "--backward") costs.backward = count(argv[++next]);
    else if (a == "-o") out = argv[++next];
    else return usage();
  }
  if (p == 0 || m == 0 || (kind == weft::schedule_kind::interleaved && v == 0) || costs.forward == 0 ||
      costs.backward == 0)
    return usage();

  try {
    const weft::schedule<> s = weft::make_schedule(kind, p, m, v);
    const auto r = weft::simulate(s, costs);
    std::cerr << name << " P=" << p << " M=" << m << " V=" << v << ": makespan " << r.makespan << ", bubble "
              << r.bubble_fraction.num << "/" << r.bubble_fraction.den << " (" << r.bubble_fraction.value()
              << "), peak activations";
    for (const std::size_t a : r.peak_activations) std::cerr << ' ' << a;
    std::cerr << ", synchronous sends " << (r.synchronous.deadlock_free ? "ok" : "deadlock") << ", grouped "
              << (r.grouped.deadlock_free ? "ok" : "deadlock") << "\n";
    if (out.empty()) {
      weft::write_schedule_svg(std::cout, s, costs);
    } else {
      std::ofstream f(out);
      weft::write_schedule_svg(f, s, costs);
      if (!f) {
        std::cerr << "schedule_svg: cannot write " << out << "\n";
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
