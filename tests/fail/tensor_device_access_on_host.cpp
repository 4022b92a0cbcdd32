// expect: weft::tensor: element access to device memory in host code
// Reading a device tensor in host code compiled by g++.
#include "weft/tensor/tensor.hpp"

using s = weft::shape<weft::axis<"n", 4>>;
float read(weft::tensor_of<float, s, weft::row_major, weft::device_space> t) { return t(1); }
