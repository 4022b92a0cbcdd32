// expect: weft::schedule: a send is never received
#include "weft/parallel/schedule.hpp"
using weft::instruction;
consteval weft::schedule<2, 1, 1> broken() {
  weft::schedule<2, 1, 1> s{};
  for (instruction i : {instruction::forward(0), instruction::send_act(0, 0, 1)}) s.push(0, i);
  return s;
}
constexpr auto report = weft::verify(broken());  // stage 1's list is empty: nobody takes the activation
