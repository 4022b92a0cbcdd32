#pragma once
// ---- a schedule's timeline as an SVG picture ----
// One row per stage, time to the right (from simulate()'s buffered run): forwards and
// backwards as coloured boxes labelled with their micro-batch (a darker shade per later
// chunk), the bubble as grey boxes, each received message as a line from its send (end
// of the producing box on the sender's row) to where the receiver takes it. Every box is
// a <rect> with class fwd, bwd or idle and data-start / data-end in time units, so tests
// and scripts can read the picture back. Run-time only (it writes to a std::ostream).
#include "weft/parallel/instruction.hpp"     // instruction, name_of
#include "weft/parallel/schedule_check.hpp"  // simulate, schedule_costs, schedule_timeline
#include "weft/parallel/schedule_table.hpp"  // schedule

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace weft {

/// Layout of the picture, in pixels.
struct svg_style {
  double unit = 16;   // width of one time unit (auto-shrunk so the picture stays under max_width)
  double max_width = 2400;
  double row = 26;    // height of a stage's row
  double gap = 10;    // between rows
  double left = 64;   // room for the stage names
  double top = 34;    // room for the title
};

namespace detail {

// Fill colour of a compute box: blue forwards, green backwards, darker for later chunks.
inline std::string box_colour(bool forward, std::size_t chunk, std::size_t chunks) {
  static constexpr const char* fwd[] = {"#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c"};
  static constexpr const char* bwd[] = {"#a1d99b", "#74c476", "#41ab5d", "#238b45", "#006d2c"};
  const std::size_t shade = chunks <= 1 ? 0 : std::min<std::size_t>(4, chunk * 4 / (chunks - 1));
  return forward ? fwd[shade] : bwd[shade];
}

}  // namespace detail

/// Writes the timeline of `s` (costs: see schedule_costs) as a standalone SVG document.
/// A schedule whose proof fails is drawn as far as the simulation got, with the fault's
/// message as the title.
template <std::size_t P, std::size_t M, std::size_t V>
void write_schedule_svg(std::ostream& os, const schedule<P, M, V>& s, const schedule_costs& costs = {},
                        const svg_style& style = {}) {
  schedule_timeline tl;  // (stage, position)
  const auto r = simulate(s, costs, &tl);
  const std::size_t p = s.stages(), v = s.chunks();
  std::uint64_t makespan = r.makespan;
  if (!r.ok())  // partial run: draw up to the furthest end reached
    for (const auto& row : tl)
      for (const interval& i : row) makespan = std::max(makespan, i.end);
  const double span = static_cast<double>(std::max<std::uint64_t>(makespan, 1));
  const double unit = std::max(1.0, std::min(style.unit, style.max_width / span));
  auto x = [&](std::uint64_t t) { return style.left + unit * static_cast<double>(t); };
  auto y = [&](std::size_t st) { return style.top + static_cast<double>(st) * (style.row + style.gap); };
  const double width = x(makespan) + 16, height = y(p) + 34;

  std::ostringstream title;
  if (r.ok())
    title << "P=" << p << " M=" << s.microbatches() << " V=" << v << ": makespan " << r.makespan << ", bubble "
          << r.bubble_fraction.num << "/" << r.bubble_fraction.den;
  else
    title << message_of(r.fault);

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
     << "<style>.idle{fill:#eeeeee;stroke:#cccccc}.fwd,.bwd{stroke:#333333;stroke-width:0.5}"
        ".act{stroke:#3182bd;stroke-width:0.8}.grad{stroke:#31a354;stroke-width:0.8;stroke-dasharray:3 2}"
        ".upd{stroke:#d62728;stroke-width:2}</style>\n"
     << "<text x=\"" << style.left << "\" y=\"20\" font-size=\"13\">";
  for (const char ch : title.str()) {  // the fault messages hold no markup, but '<' '>' '&' would break XML
    if (ch == '<') os << "&lt;";
    else if (ch == '>') os << "&gt;";
    else if (ch == '&') os << "&amp;";
    else os << ch;
  }
  os << "</text>\n";

  for (std::size_t st = 0; st < p; ++st) {
    const auto list = s.list(st);
    const double top = y(st), mid = top + style.row / 2;
    os << "<text x=\"4\" y=\"" << mid + 4 << "\">stage " << st << "</text>\n";
    // Boxes for compute, grey boxes for the gaps between them (and before and after).
    std::uint64_t busy_until = 0;
    auto idle = [&](std::uint64_t from, std::uint64_t to) {
      if (to <= from) return;
      os << "<rect class=\"idle\" x=\"" << x(from) << "\" y=\"" << top << "\" width=\"" << x(to) - x(from)
         << "\" height=\"" << style.row << "\" data-start=\"" << from << "\" data-end=\"" << to << "\"/>\n";
    };
    for (std::size_t k = 0; k < list.size() && k < tl[st].size(); ++k) {
      const instruction& i = list[k];
      const interval& t = tl[st][k];
      if (!i.is_compute() || !t.reached) continue;
      idle(busy_until, t.start);
      busy_until = t.end;
      const bool fwd = i.kind == instruction_kind::forward;
      os << "<rect class=\"" << (fwd ? "fwd" : "bwd") << "\" x=\"" << x(t.start) << "\" y=\"" << top
         << "\" width=\"" << x(t.end) - x(t.start) << "\" height=\"" << style.row << "\" fill=\""
         << detail::box_colour(fwd, i.chunk, v) << "\" data-start=\"" << t.start << "\" data-end=\"" << t.end
         << "\"><title>" << name_of(i.kind) << " mb " << i.mb << " chunk " << i.chunk << "</title></rect>\n";
      os << "<text x=\"" << (x(t.start) + x(t.end)) / 2 << "\" y=\"" << mid + 4 << "\" text-anchor=\"middle\">"
         << i.mb << "</text>\n";
    }
    if (r.ok()) idle(busy_until, makespan);
    // Updates (reduce_grads, optimizer_step) as a red tick: they take 0 units by default.
    for (std::size_t k = 0; k < list.size() && k < tl[st].size(); ++k)
      if (!list[k].is_compute() && !list[k].is_comm() && tl[st][k].reached)
        os << "<line class=\"upd\" x1=\"" << x(tl[st][k].end) << "\" y1=\"" << top << "\" x2=\""
           << x(tl[st][k].end) << "\" y2=\"" << top + style.row << "\"><title>" << name_of(list[k].kind)
           << "</title></line>\n";
  }
  // Messages: from the sender's row at the send to the receiver's row where it is taken.
  for (std::size_t st = 0; st < p; ++st) {
    const auto list = s.list(st);
    for (std::size_t k = 0; k < list.size() && k < tl[st].size(); ++k) {
      const instruction& i = list[k];
      const interval& t = tl[st][k];
      if (!i.is_recv() || !t.reached) continue;
      const bool act = i.kind == instruction_kind::recv_act;
      const double from_y = y(i.peer) + (act ? style.row : 0), to_y = y(st) + (act ? 0 : style.row);
      os << "<line class=\"" << (act ? "act" : "grad") << "\" x1=\"" << x(t.ready) << "\" y1=\"" << from_y
         << "\" x2=\"" << x(std::max(t.ready, t.start)) << "\" y2=\"" << to_y << "\"/>\n";
    }
  }
  // Legend and time axis.
  const double base = y(p) + 14;
  os << "<text x=\"" << style.left << "\" y=\"" << base << "\">0</text>\n"
     << "<text x=\"" << x(makespan) << "\" y=\"" << base << "\" text-anchor=\"end\">" << makespan << "</text>\n"
     << "<text x=\"" << (style.left + x(makespan)) / 2 << "\" y=\"" << base + 14
     << "\" text-anchor=\"middle\">blue: forward, green: backward (darker: later chunk), grey: bubble, "
        "lines: activations (solid) and gradients (dashed)</text>\n"
     << "</svg>\n";
}

}  // namespace weft
