// Compile-only facts about layouts, their algebra, tensors and arena layouts: every
// mapping runs in constant evaluation. If this file compiles, they hold.
#include "weft/core/layout.hpp"
#include "weft/core/layout_algebra.hpp"
#include "weft/core/layout_policy.hpp"
#include "weft/core/shape.hpp"
#include "weft/tensor/arena_layout.hpp"
#include "weft/tensor/tensor.hpp"

#include <type_traits>

namespace {
using namespace weft;

using rc = shape<axis<"rows", 4>, axis<"cols", 6>>;  // (rows, cols)

// ---- policies ----
using rm = row_major::mapping<rc>;
using cm = column_major::mapping<rc>;
using st = strided<8, 1>::mapping<rc>;
static_assert(rm{}(2, 5) == 2 * 6 + 5 && cm{}(2, 5) == 2 + 4 * 5 && st{}(2, 5) == 2 * 8 + 5);
static_assert(rm{}(at<"cols">(5), at<"rows">(2)) == rm{}(2, 5));
static_assert(rm::size == 24 && rm::cosize == 24 && rm::is_contiguous);
static_assert(st::size == 24 && st::cosize == 3 * 8 + 5 + 1 && st::is_unique && !st::is_contiguous);
static_assert(!strided<0, 1>::mapping<rc>::is_unique);
static_assert(rm::stride(0) == 6 && cm::stride_of<"cols"> == 4);
static_assert(std::is_same_v<rm::layout_type, layout<mode<4, 6>, mode<6, 1>>>);
static_assert(named_mapping<rm> && layout_mapping<rm> && layout_mapping<layout<mode<2, 1>>> && !named_mapping<int>);
static_assert(layout_policy<row_major> && layout_policy<tiled<shape<axis<"rows", 2>>>> && !layout_policy<int>);

// ---- tiled: a layout of layouts; 2 x 3 tiles, each contiguous ----
using tl = tiled<shape<axis<"rows", 2>, axis<"cols", 3>>>::mapping<rc>;
static_assert(tl{}(0, 0) == 0 && tl{}(0, 2) == 2 && tl{}(1, 0) == 3 && tl{}(1, 2) == 5);  // first tile
static_assert(tl{}(0, 3) == 6 && tl{}(2, 0) == 12 && tl{}(3, 5) == 23);                   // next tiles
static_assert(tl::is_contiguous && tl::cosize == 24);
static_assert(layout_like<tl::layout_type::mode_at<0>>);  // (inside a tile, across tiles)

// ---- bare layouts: natural and 1-D coordinates ----
using hier = layout<layout<mode<2, 1>, mode<2, 4>>, mode<2, 2>>;
static_assert(hier{}(3, 1) == 1 + 4 + 2 && hier{}(3 + 4 * 1) == hier{}(3, 1));
static_assert(hier::size == 8 && hier::cosize == 8 && hier::is_contiguous);
static_assert(layout<>::size == 1 && layout<>{}() == 0);
using tiles_2x2 = layout<layout<mode<2, 2>, mode<2, 8>>, layout<mode<2, 1>, mode<2, 4>>>;  // layout.hpp's example
static_assert(tiles_2x2{}(2, 3) == 8 + 4 + 1 && tiles_2x2::is_contiguous);

// ---- algebra ----
static_assert(std::is_same_v<coalesce_t<layout<mode<2, 1>, mode<3, 2>>>, layout<mode<6, 1>>>);
static_assert(std::is_same_v<complement_t<layout<mode<4, 2>>, 16>, layout<mode<2, 1>, mode<2, 8>>>);
using a = layout<mode<4, 1>, mode<6, 8>>;
using ab = compose_t<a, layout<mode<6, 4>, mode<4, 1>>>;  // the transpose of a
static_assert(ab{}(0, 1) == a{}(1, 0) && ab{}(5, 3) == a{}(3, 5));
static_assert(compose(a{}, mode<6, 2>{})(2) == a{}(4) && compose(a{}, mode<6, 2>{})(5) == a{}(10));
using z = zipped_divide_t<a, tiler<2, 3>>;  // ((2, 3), (2, 2))
static_assert(z{}(1 + 2 * 2, 1 + 2 * 1) == a{}(3, 5));
using d = divide<rm, shape<axis<"cols", 3>>>;
static_assert(d::grid_mapping{}(3, 1) + d::tile_mapping{}(0, 2) == rm{}(3, 5));

// ---- tensors and arena layouts in constant evaluation ----
constexpr int sum_diagonal() {
  int buf[24]{};
  tensor_of<int, rc, column_major> t{buf};  // (rows, cols)
  for (std::size_t i = 0; i < 4; ++i) t(i, i) = static_cast<int>(i + 1);
  int s = 0;
  for (std::size_t i = 0; i < 4; ++i) s += t.slice(i)(i);
  return s;
}
static_assert(sum_diagonal() == 1 + 2 + 3 + 4);

using arena_t = arena_layout<buffer<"x", float, rc>, buffer<"y", double, shape<axis<"n", 3>>>>;
static_assert(arena_t::offset_of<"x"> == 0 && arena_t::offset_of<"y"> == 128 && arena_t::bytes == 192);
static_assert(std::is_same_v<arena_t::buffer_named<"y">::view_type<>, tensor<double, row_major::mapping<shape<axis<"n", 3>>>>>);
}  // namespace
