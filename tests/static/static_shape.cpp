// Compile-only facts about weft::shape: if this file compiles, they hold.
#include "weft/core/axis.hpp"
#include "weft/core/constant.hpp"
#include "weft/core/shape.hpp"

#include <type_traits>

namespace {
using namespace weft;

using bsw = shape<axis<"batch", 4>, axis<"seq", 64>, axis<"width", 96>>;  // (batch, seq, width)

// ---- rank, product, look-up ----
static_assert(bsw::rank == 3 && shape<>::rank == 0);
static_assert(bsw::product == 4 * 64 * 96 && shape<>::product == 1);
static_assert(bsw::index_of<"seq">() == 1 && bsw::size_of<"width"> == 96);
static_assert(bsw::contains<"batch"> && !bsw::contains<"heads">);
static_assert(std::is_same_v<bsw::axis_named<"seq">, axis<"seq", 64>>);
static_assert(!shape<axis<"dp">, axis<"tp", 2>>::is_static);
static_assert(shape<axis<"dp">, axis<"tp", 2>>::product == dynamic);

// ---- rebuilding ----
static_assert(std::is_same_v<bsw::drop<"seq">, shape<axis<"batch", 4>, axis<"width", 96>>>);
static_assert(std::is_same_v<bsw::resize<"seq", 8>, shape<axis<"batch", 4>, axis<"seq", 8>, axis<"width", 96>>>);
static_assert(std::is_same_v<bsw::replace<"width", axis<"heads", 3>>,
                             shape<axis<"batch", 4>, axis<"seq", 64>, axis<"heads", 3>>>);
static_assert(std::is_same_v<bsw::insert<1, axis<"micro", 2>>,
                             shape<axis<"batch", 4>, axis<"micro", 2>, axis<"seq", 64>, axis<"width", 96>>>);
static_assert(bsw::insert<3, axis<"pair", 2>>::index_of<"pair">() == 3);

// ---- split: the sharding primitive ----
static_assert(bsw::split<"width", 3>::size_of<"width"> == 32);
static_assert(bsw::split<"batch", 4>::size_of<"batch"> == 1);
static_assert(bsw::split<"seq", 2>::product * 2 == bsw::product);

// ---- strides and concepts ----
static_assert(bsw::row_major_strides()[0] == 64 * 96 && bsw::row_major_strides()[2] == 1);
static_assert(shape_like<bsw> && static_shape<bsw> && !shape_like<int>);
}  // namespace
