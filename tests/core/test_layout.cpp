// Layouts: offsets of the policies against their textbook formulas, the layout algebra
// against its defining equations (checked at every coordinate), and the named-axis API.
#include <catch2/catch.hpp>

#include "weft/core/layout.hpp"
#include "weft/core/layout_algebra.hpp"
#include "weft/core/layout_policy.hpp"
#include "weft/core/shape.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

using namespace weft;

namespace {

using rows_cols = shape<axis<"rows", 6>, axis<"cols", 8>>;                         // (rows, cols)
using b_s_w = shape<axis<"batch", 2>, axis<"seq", 3>, axis<"width", 4>>;             // (batch, seq, width)

// Every offset of a rank-2 mapping, coordinates in row-major order.
template <class M>
std::vector<std::size_t> offsets_2d() {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < M::extent(0); ++i)
    for (std::size_t j = 0; j < M::extent(1); ++j) v.push_back(M{}(i, j));
  return v;
}

// True when the offsets are exactly 0, 1, ..., n-1 in some order.
bool is_permutation_of_iota(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t k = 0; k < v.size(); ++k)
    if (v[k] != k) return false;
  return true;
}

// Offsets of the 1-D (colexicographic) coordinates 0 .. size-1.
template <class L>
std::vector<std::size_t> offsets_1d() {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < L::size; ++i) v.push_back(L{}(i));
  return v;
}

}  // namespace

TEST_CASE("row_major and column_major follow the C and Fortran formulas", "[core][layout]") {
  using rm = row_major::mapping<b_s_w>;
  using cm = column_major::mapping<b_s_w>;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t w = 0; w < 4; ++w) {
        CHECK(rm{}(b, s, w) == (b * 3 + s) * 4 + w);
        CHECK(cm{}(b, s, w) == b + 2 * (s + 3 * w));
      }
  CHECK(rm::size == 24);
  CHECK(rm::cosize == 24);
  CHECK(rm::is_unique);
  CHECK(rm::is_contiguous);
  CHECK(cm::is_contiguous);
  CHECK(rm::stride(0) == 12);
  CHECK(rm::stride(2) == 1);
  CHECK(cm::stride(0) == 1);
  CHECK(cm::stride_of<"width"> == 6);
  CHECK(rm::extent(1) == 3);
  CHECK(rm::size_of<"seq"> == 3);
}

TEST_CASE("strided mappings use the given strides; padding shows in cosize", "[core][layout]") {
  using padded = strided<10, 1>::mapping<rows_cols>;  // rows padded from 8 to 10 elements
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 8; ++j) CHECK(padded{}(i, j) == 10 * i + j);
  CHECK(padded::size == 48);
  CHECK(padded::cosize == 5 * 10 + 7 + 1);
  CHECK(padded::is_unique);
  CHECK(!padded::is_contiguous);

  using broadcast = strided<0, 1>::mapping<rows_cols>;  // every row is the same memory
  CHECK(broadcast{}(5, 3) == 3);
  CHECK(broadcast::cosize == 8);
  CHECK(!broadcast::is_unique);

  using overlapping = strided<4, 1>::mapping<rows_cols>;  // rows of 8 only 4 apart
  CHECK(!overlapping::is_unique);
  CHECK(overlapping{}(1, 0) == overlapping{}(0, 4));
}

TEST_CASE("tiled mappings: each tile is a contiguous block, tiles placed by the outer policy", "[core][layout]") {
  using tile = shape<axis<"rows", 2>, axis<"cols", 4>>;
  using t_rr = tiled<tile>::mapping<rows_cols>;                             // tiles row-major, inside row-major
  using t_cc = tiled<tile, column_major, column_major>::mapping<rows_cols>;  // both column-major
  constexpr std::size_t tr = 2, tc = 4, gr = 3, gc = 2, tile_elems = tr * tc;
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 8; ++j) {
      const std::size_t ti = i % tr, tj = j % tc, gi = i / tr, gj = j / tc;
      CHECK(t_rr{}(i, j) == (gi * gc + gj) * tile_elems + ti * tc + tj);
      CHECK(t_cc{}(i, j) == (gi + gj * gr) * tile_elems + ti + tj * tr);
    }
  CHECK(t_rr::is_contiguous);
  CHECK(t_cc::is_contiguous);
  CHECK(is_permutation_of_iota(offsets_2d<t_rr>()));
  CHECK(t_rr::stride(1) == 1);  // step inside a tile
}

TEST_CASE("tiled mappings nest: tiles of tiles", "[core][layout]") {
  using big = shape<axis<"rows", 8>, axis<"cols", 8>>;
  using inner = tiled<shape<axis<"rows", 2>, axis<"cols", 2>>>;             // 2x2 micro-tiles
  using m = tiled<shape<axis<"rows", 4>, axis<"cols", 4>>, row_major, inner>::mapping<big>;  // in 4x4 tiles
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 8; ++j) {
      const std::size_t outer = (i / 4) * 2 + (j / 4);          // which 4x4 tile (row-major)
      const std::size_t micro = ((i % 4) / 2) * 2 + (j % 4) / 2;  // which 2x2 tile inside it
      const std::size_t in = (i % 2) * 2 + (j % 2);             // position inside the 2x2 tile
      CHECK(m{}(i, j) == outer * 16 + micro * 4 + in);
    }
  CHECK(m::is_contiguous);
  CHECK(is_permutation_of_iota(offsets_2d<m>()));
}

TEST_CASE("tiled: an axis the tile shape leaves out has tiles of 1", "[core][layout]") {
  using m = tiled<shape<axis<"rows", 3>>>::mapping<rows_cols>;  // tiles of (3 rows, 1 col)
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 8; ++j) CHECK(m{}(i, j) == ((i / 3) * 8 + j) * 3 + i % 3);
}

TEST_CASE("named coordinates may come in any order", "[core][layout]") {
  using m = column_major::mapping<b_s_w>;
  CHECK(m{}(at<"width">(3), at<"batch">(1), at<"seq">(2)) == m{}(1, 2, 3));
  CHECK(m{}(at<"seq">(0), at<"width">(1), at<"batch">(0)) == m{}(0, 0, 1));
}

TEST_CASE("layouts of layouts: natural and 1-D coordinates", "[core][layout]") {
  // (rows, cols) = ((2, 3), 4) : ((1, 8), 2)
  using l = layout<layout<mode<2, 1>, mode<3, 8>>, mode<4, 2>>;
  CHECK(l::rank == 2);
  CHECK(l::size == 24);
  CHECK(l::cosize == 1 + 1 + 16 + 6);
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 0; c < 4; ++c) {
      CHECK(l{}(r, c) == (r % 2) * 1 + (r / 2) * 8 + c * 2);
      CHECK(l{}(r + 6 * c) == l{}(r, c));  // 1-D: first mode fastest
    }
  CHECK(l::stride(0) == 1);
  CHECK(l::stride(1) == 2);
  CHECK(l::is_contiguous);  // (r % 2) + 2 c fills 0..7, 8 (r / 2) the blocks of 8
  CHECK(is_permutation_of_iota(offsets_1d<l>()));
  using gappy = layout<layout<mode<2, 1>, mode<3, 10>>, mode<4, 2>>;
  CHECK(gappy::cosize == 1 + 1 + 20 + 6);
  CHECK(gappy::is_unique);
  CHECK(!gappy::is_contiguous);
}

TEST_CASE("coalesce keeps the 1-D function and merges what it can", "[core][layout][algebra]") {
  using a = layout<mode<2, 1>, mode<1, 7>, layout<mode<3, 2>, mode<4, 6>>>;
  using c = coalesce_t<a>;
  CHECK(std::is_same_v<c, layout<mode<24, 1>>>);
  CHECK(offsets_1d<a>() == offsets_1d<c>());

  using b = layout<mode<4, 1>, mode<3, 8>>;  // a gap: nothing to merge
  CHECK(std::is_same_v<coalesce_t<b>, b>);
  CHECK(std::is_same_v<coalesce_t<layout<mode<1, 3>>>, layout<mode<1, 0>>>);
}

TEST_CASE("complement fills the gaps: (L, complement) is a bijection", "[core][layout][algebra]") {
  auto check = []<class L, std::size_t M>() {
    using full = layout<L, complement_t<L, M>>;
    REQUIRE(full::size == M);
    CHECK(is_permutation_of_iota(offsets_1d<full>()));
  };
  check.operator()<layout<mode<4, 1>>, 24>();
  check.operator()<layout<mode<4, 2>>, 16>();
  check.operator()<layout<mode<2, 1>, mode<3, 8>>, 48>();
  check.operator()<layout<mode<3, 4>, mode<2, 1>>, 24>();  // unsorted strides
  CHECK(std::is_same_v<complement_t<layout<mode<4, 1>>, 24>, layout<mode<6, 4>>>);
}

TEST_CASE("compose: R(i) == A(B(i)) at every coordinate of B", "[core][layout][algebra]") {
  auto check = []<class A, class B>() {
    using r = compose_t<A, B>;
    REQUIRE(r::size == B::size);
    for (std::size_t i = 0; i < B::size; ++i) CHECK(r{}(i) == A{}(B{}(i)));
  };
  using a = layout<mode<4, 1>, mode<6, 8>>;  // a (4, 6) column of a padded matrix
  check.operator()<a, layout<mode<2, 1>>>();
  check.operator()<a, layout<mode<6, 4>>>();
  check.operator()<a, layout<mode<2, 2>, mode<6, 4>>>();
  check.operator()<a, layout<mode<6, 4>, mode<4, 1>>>();                 // the transpose
  check.operator()<a, layout<mode<3, 0>, mode<8, 1>>>();                 // broadcast mode
  check.operator()<layout<layout<mode<2, 1>, mode<3, 8>>, mode<4, 2>>,  // hierarchical A
                   layout<mode<2, 1>, mode<12, 2>>>();
  check.operator()<row_major::mapping<rows_cols>::layout_type, layout<mode<3, 2>, mode<8, 6>>>();
  // B keeps its hierarchy in the result.
  CHECK(compose_t<a, layout<mode<2, 2>, mode<6, 4>>>::rank == 2);
}

TEST_CASE("logical_divide and zipped_divide cut a layout into tiles", "[core][layout][algebra]") {
  using a = layout<mode<8, 1>, mode<6, 8>>;  // (rows, cols) column-major 8 x 6
  // 1-D divide by a tile of 4 consecutive coordinates: (within tile, which tile).
  using d = logical_divide_t<layout<mode<24, 3>>, layout<mode<4, 1>>>;
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t k = 0; k < 6; ++k) CHECK(d{}(t, k) == (k * 4 + t) * 3);

  // By mode: rows in tiles of 2, cols in tiles of 3.
  using bm = logical_divide_t<a, tiler<2, 3>>;  // ((2, 4), (3, 2))
  using z = zipped_divide_t<a, tiler<2, 3>>;    // ((2, 3), (4, 2))
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t c = 0; c < 6; ++c) {
      const std::size_t expect = a{}(r, c);
      CHECK(bm{}(r, c) == expect);  // the same coordinates, split per mode
      const std::size_t in_tile = (r % 2) + 2 * (c % 3), tile = (r / 2) + 4 * (c / 3);
      CHECK(z{}(in_tile, tile) == expect);
    }
  CHECK(z::template mode_at<0>::size == 6);
  CHECK(z::template mode_at<1>::size == 8);
}

TEST_CASE("divide: a named mapping as (grid of tiles) + (inside a tile)", "[core][layout][algebra]") {
  using tile = shape<axis<"rows", 3>, axis<"cols", 4>>;
  auto check = []<class M>() {
    using d = divide<M, tile>;
    using t = typename d::tile_mapping;
    using g = typename d::grid_mapping;
    REQUIRE(t::size == 12);
    REQUIRE(g::template size_of<"rows"> == 2);
    REQUIRE(g::template size_of<"cols"> == 2);
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 8; ++j) CHECK(M{}(i, j) == g{}(i / 3, j / 4) + t{}(i % 3, j % 4));
  };
  check.template operator()<row_major::mapping<rows_cols>>();
  check.template operator()<column_major::mapping<rows_cols>>();
  check.template operator()<strided<16, 2>::mapping<rows_cols>>();
  check.template operator()<tiled<shape<axis<"rows", 3>, axis<"cols", 2>>>::mapping<rows_cols>>();
}

TEST_CASE("layouts: the documented example", "[core][layout]") {
  // example-begin layouts-basics
  using tile = shape<axis<"rows", 64>, axis<"cols", 128>>;  // (rows, cols)
  using rm = row_major::mapping<tile>;                      // offset = 128 r + c
  using cm = column_major::mapping<tile>;                   // offset = r + 64 c
  using padded = strided<136, 1>::mapping<tile>;            // rows padded to 136 elements
  using blocked = tiled<shape<axis<"rows", 16>, axis<"cols", 32>>>::mapping<tile>;  // 16 x 32 blocks

  static_assert(rm{}(2, 5) == 261 && cm{}(2, 5) == 322 && padded{}(2, 5) == 277);
  static_assert(rm{}(at<"cols">(5), at<"rows">(2)) == 261);    // named, any order
  static_assert(padded::size == 8192 && padded::cosize == 63 * 136 + 128 && !padded::is_contiguous);
  static_assert(blocked{}(17, 33) == (1 * 4 + 1) * 512 + 1 * 32 + 1);  // block (1, 1), then (1, 1) inside
  static_assert(blocked::is_contiguous);

  // Cut the row-major tile into 16 x 32 blocks: offset = grid(block) + tile(inside).
  using cut = divide<rm, shape<axis<"rows", 16>, axis<"cols", 32>>>;
  static_assert(cut::grid_mapping{}(1, 1) + cut::tile_mapping{}(1, 1) == rm{}(17, 33));

  // The algebra on bare layouts: R(i) == A(B(i)).
  using a = layout<mode<4, 1>, mode<6, 8>>;               // a 4 x 6 column-major block, columns 8 apart
  using transposed = compose_t<a, layout<mode<6, 4>, mode<4, 1>>>;
  static_assert(transposed{}(5, 3) == a{}(3, 5));
  // example-end layouts-basics
  CHECK(blocked{}(63, 127) == 8191);
}
