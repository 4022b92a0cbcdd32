// expect: weft::ops::rope: the rotary dimension R is 0 or larger than the head dimension D
// Partial rotary over 12 elements of an 8-element head.
#include "weft/ops/rope.hpp"

#include <vector>

int main() {
  std::vector<float> qkv(2 * 4 * (2 + 2) * 8);
  weft::ops::rope_forward<2, 4, 2, 1, 8, 10000, 12>(weft::host_context{}, qkv.data(), qkv.data());
}
