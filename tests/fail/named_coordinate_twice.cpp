// expect: weft::named_layout: a coordinate names the same axis twice
// "rows" given twice, "cols" not at all.
#include "weft/core/layout_policy.hpp"

using s = weft::shape<weft::axis<"rows", 4>, weft::axis<"cols", 8>>;
constexpr auto off = weft::row_major::mapping<s>{}(weft::at<"rows">(1), weft::at<"rows">(2));
