// expect: weft::safetensors_writer::add: the data is a temporary that would be destroyed before write.. reads it
#include "weft/io/safetensors.hpp"

#include <vector>

int main() {
  weft::safetensors_writer w;
  w.add("x", {3}, std::vector<float>{1, 2, 3});  // gone before w.write()
}
