// expect: weft::schedule: push\(\) past the end
#include "weft/parallel/schedule.hpp"
consteval auto build() {
  weft::schedule<2, 1, 1> s{};
  s.push(2, weft::instruction::forward(0));  // there is no stage 2
  return s;
}
constexpr auto s = build();
