// expect: weft::schedule: a \(micro-batch, chunk\) never runs forward or backward
#include "weft/parallel/schedule.hpp"
using weft::instruction;
consteval weft::schedule<2, 1, 1> broken() {
  weft::schedule<2, 1, 1> s{};
  for (instruction i : {instruction::forward(0), instruction::send_act(0, 0, 1), instruction::recv_grad(0, 0, 1)}) s.push(0, i);
  for (instruction i : {instruction::recv_act(0, 0, 0), instruction::forward(0), instruction::backward(0), instruction::send_grad(0, 0, 0), instruction::reduce_grads(), instruction::optimizer_step()}) s.push(1, i);
  return s;
}
constexpr auto report = weft::verify(broken());  // stage 0 never runs backward(0)
