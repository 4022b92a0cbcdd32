// expect: weft::shape: no axis has this name
// Looking up "heads" in a shape that has no such axis.
#include "weft/core/shape.hpp"

using s = weft::shape<weft::axis<"seq", 16>, weft::axis<"width", 8>>;
constexpr auto n = s::size_of<"heads">;
