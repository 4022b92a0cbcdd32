// expect: weft::shape: an axis name occurs twice
// Two axes called "dim" in one shape.
#include "weft/core/shape.hpp"

weft::shape<weft::axis<"dim", 4>, weft::axis<"dim", 8>> s;
