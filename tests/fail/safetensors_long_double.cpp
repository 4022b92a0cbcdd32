// expect: weft::safetensors_writer::add: long double has no safetensors dtype
#include "weft/io/safetensors.hpp"

#include <vector>

int main() {
  std::vector<long double> v{1, 2, 3};
  weft::safetensors_writer w;
  w.add("x", {3}, v);
}
