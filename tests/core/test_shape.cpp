// Shapes of named axes: look-up by name, rank and product, and the rebuilding operations
// (replace, resize, drop, insert, split) that sharding is made of.
#include <catch2/catch.hpp>

#include "weft/core/axis.hpp"
#include "weft/core/constant.hpp"
#include "weft/core/shape.hpp"

#include <cstddef>
#include <type_traits>

using namespace weft;

namespace {
using activations = shape<axis<"batch", 8>, axis<"seq", 1024>, axis<"width", 768>>;  // (batch, seq, width)
using mesh_like = shape<axis<"dp">, axis<"tp", 2>>;                                     // dp known at run time
}  // namespace

TEST_CASE("shape: rank, extents and product", "[core][shape]") {
  CHECK(activations::rank == 3);
  CHECK(activations::extents[0] == 8);
  CHECK(activations::extents[2] == 768);
  CHECK(activations::product == 8u * 1024u * 768u);
  CHECK(activations::size == activations::product);
  CHECK(activations::is_static);
  CHECK(shape<>::rank == 0);
  CHECK(shape<>::product == 1);
  CHECK(!mesh_like::is_static);
  CHECK(mesh_like::product == dynamic);
  CHECK(is_dynamic(mesh_like::extents[0]));
}

TEST_CASE("shape: look-up by name", "[core][shape]") {
  CHECK(activations::index_of<"batch">() == 0);
  CHECK(activations::index_of<"width">() == 2);
  CHECK(activations::size_of<"seq"> == 1024);
  CHECK(activations::contains<"seq">);
  CHECK(!activations::contains<"heads">);
  CHECK(std::is_same_v<activations::axis_named<"width">, axis<"width", 768>>);
  CHECK(std::is_same_v<activations::axis_at<1>, axis<"seq", 1024>>);
  CHECK(mesh_like::size_of<"tp"> == 2);
  CHECK(mesh_like::size_of<"dp"> == dynamic);
}

TEST_CASE("shape: replace, resize and drop keep the other axes in order", "[core][shape]") {
  using heads = activations::replace<"width", axis<"heads", 12>>;
  CHECK(std::is_same_v<heads, shape<axis<"batch", 8>, axis<"seq", 1024>, axis<"heads", 12>>>);
  using shorter = activations::resize<"seq", 128>;
  CHECK(std::is_same_v<shorter, shape<axis<"batch", 8>, axis<"seq", 128>, axis<"width", 768>>>);
  CHECK(shorter::product == 8u * 128u * 768u);
  using no_seq = activations::drop<"seq">;
  CHECK(std::is_same_v<no_seq, shape<axis<"batch", 8>, axis<"width", 768>>>);
  CHECK(std::is_same_v<activations::drop<"batch">::drop<"seq">::drop<"width">, shape<>>);
}

TEST_CASE("shape: insert places an axis before a position or at the end", "[core][shape]") {
  using front = activations::insert<0, axis<"micro", 4>>;
  CHECK(std::is_same_v<front, shape<axis<"micro", 4>, axis<"batch", 8>, axis<"seq", 1024>, axis<"width", 768>>>);
  using middle = activations::insert<2, axis<"heads", 12>>;
  CHECK(middle::index_of<"heads">() == 2);
  CHECK(middle::index_of<"width">() == 3);
  using back = activations::insert<3, axis<"pair", 2>>;
  CHECK(back::index_of<"pair">() == 3);
  CHECK(back::product == activations::product * 2);
  CHECK(std::is_same_v<shape<>::insert<0, axis<"x", 5>>, shape<axis<"x", 5>>>);
}

TEST_CASE("shape: split divides one axis by the parallel degree", "[core][shape]") {
  using per_rank = activations::split<"width", 4>;  // tensor parallel over width
  CHECK(per_rank::size_of<"width"> == 192);
  CHECK(per_rank::size_of<"batch"> == 8);
  CHECK(per_rank::product * 4 == activations::product);
  CHECK(std::is_same_v<activations::split<"batch", 1>, activations>);
  CHECK(activations::split<"batch", 8>::size_of<"batch"> == 1);
}

TEST_CASE("shape: row-major strides", "[core][shape]") {
  constexpr auto s = activations::row_major_strides();
  CHECK(s[2] == 1);
  CHECK(s[1] == 768);
  CHECK(s[0] == 1024u * 768u);
  CHECK(shape_like<activations>);
  CHECK(static_shape<activations>);
  CHECK(!static_shape<mesh_like>);
  CHECK(!shape_like<axis<"x", 1>>);
  CHECK(same_shape_v<activations, activations::resize<"seq", 1024>>);
}
