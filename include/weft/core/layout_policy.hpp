#pragma once
// ---- layout policies: mappings over named shapes ----
// A policy is a tag with a nested `mapping<Shape>` (after mdspan's layout_left/right):
//
//   row_major::mapping<shape<axis<"rows", 4>, axis<"cols", 8>>>       // offset = 8 r + c
//   column_major::mapping<...>                                         // offset = r + 4 c
//   strided<16, 1>::mapping<...>                                       // rows padded to 16
//   tiled<shape<axis<"rows", 2>, axis<"cols", 4>>>::mapping<...>       // 2 x 4 tiles, each contiguous
//
// Every mapping is a `named_layout<Shape, Layout>`: a shape (names and extents) plus a layout
// whose top-level modes are the shape's axes, in order. Tiled mappings are layouts of
// layouts: the mode of an axis is (inside a tile, across tiles), so policies nest.
#include "weft/config.hpp"                // WEFT_HOST_DEVICE
#include "weft/core/axis.hpp"             // axis
#include "weft/core/diagnostics.hpp"      // diag::*
#include "weft/core/fixed_string.hpp"     // fixed_string
#include "weft/core/layout.hpp"           // layout, mode
#include "weft/core/layout_algebra.hpp"   // compose_t, complement_t
#include "weft/core/shape.hpp"            // shape, static_shape

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace weft {

// ---- named coordinates ----

/// A coordinate tagged with its axis name: `m(at<"seq">(3), at<"batch">(1))`.
template <fixed_string Name>
struct named_index {
  using named_index_tag = void;
  static constexpr auto name = Name;
  std::size_t value;
};

/// The coordinate `i` along axis `Name`.
template <fixed_string Name>
WEFT_HOST_DEVICE constexpr named_index<Name> at(std::size_t i) noexcept {
  return {i};
}

/// Satisfied by `named_index<Name>` (what `at<Name>(i)` returns).
// (Recognised by a member tag rather than by deducing Name: nvcc's front end does not
// deduce class-type template arguments from a function argument's type.)
template <class T>
concept named_coordinate = requires { typename std::remove_cvref_t<T>::named_index_tag; };

namespace detail {

template <fixed_string A, fixed_string B>
inline constexpr bool same_name = (A.view() == B.view());

// Number of coordinates among Idx... that name `Name`.
template <fixed_string Name, class... Idx>
consteval std::size_t count_in() {
  return ((same_name<Name, Idx::name> ? std::size_t{1} : std::size_t{0}) + ... + std::size_t{0});
}

// The coordinate for axis `Name` among named coordinates (0 when none names it). A fold over
// constants and the values: no tables, so it runs in device code.
template <fixed_string Name, class... Idx>
WEFT_HOST_DEVICE constexpr std::size_t pick(Idx... is) noexcept {
  return (std::size_t{0} + ... + (same_name<Name, Idx::name> ? is.value : std::size_t{0}));
}

// The numbers of an ill-fitting named_layout, for the diagnostic.
template <std::size_t Axis, std::size_t AxisSize, std::size_t ModeSize>
inline constexpr bool mode_fits_axis = (AxisSize == ModeSize);

template <class Shape, class Layout, std::size_t... K>
constexpr bool modes_fit(std::index_sequence<K...>) {
  return (mode_fits_axis<K, Shape::extents[K], Layout::extent(K)> && ... && true);
}

}  // namespace detail

// ---- named_layout: a shape plus a layout with one mode per axis ----

/// A mapping from named coordinates to offsets: `Layout`'s mode k is `Shape`'s axis k.
/// Empty; all of it is compile time. Base of every policy's mapping.
template <static_shape Shape, layout_like Layout>
struct named_layout {
  static constexpr bool ranks_agree = diag::equal<Layout::rank, Shape::rank>;
  static constexpr bool sizes_agree =
      ranks_agree && detail::modes_fit<Shape, Layout>(std::make_index_sequence<(ranks_agree ? Shape::rank : 0)>{});
  static_assert(ranks_agree && sizes_agree,
                "weft::named_layout: the layout's modes do not match the shape's axes. Give the layout one mode per "
                "axis, in the shape's order, each of the axis's size.");

  using shape_type = Shape;
  using layout_type = Layout;

  /// Number of axes.
  static constexpr std::size_t rank = Shape::rank;

  /// Number of coordinates (elements).
  static constexpr std::size_t size = Layout::size;
  /// 1 + the largest offset: the number of elements the memory must hold.
  static constexpr std::size_t cosize = Layout::cosize;
  /// No two coordinates share an offset.
  static constexpr bool is_unique = Layout::is_unique;
  /// Unique, and the offsets fill [0, size) exactly.
  static constexpr bool is_contiguous = Layout::is_contiguous;
  /// Size of axis r.
  WEFT_HOST_DEVICE static constexpr std::size_t extent(std::size_t r) noexcept { return Layout::extent(r); }
  /// Offset step of axis r (for a tiled axis, the step within a tile).
  WEFT_HOST_DEVICE static constexpr std::size_t stride(std::size_t r) noexcept { return Layout::stride(r); }

  /// Size of the axis called `Name`.
  template <fixed_string Name>
  static constexpr std::size_t size_of = Shape::template size_of<Name>;
  /// Offset step of the axis called `Name`.
  template <fixed_string Name>
  static constexpr std::size_t stride_of = Layout::stride(Shape::template index_of<Name>());

  /// Offset of the element at (i0, i1, ...), one index per axis in the shape's order.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  WEFT_HOST_DEVICE constexpr std::size_t operator()(I... i) const noexcept {
    return Layout{}(i...);
  }

  /// Offset of the element at named coordinates, in any order: `m(at<"cols">(2), at<"rows">(1))`.
  template <named_coordinate... Idx>
    requires(sizeof...(Idx) == rank && rank > 0)
  WEFT_HOST_DEVICE constexpr std::size_t operator()(Idx... is) const noexcept {
    (void)std::array<std::size_t, rank>{Shape::template index_of<Idx::name>()...};  // unknown names are reported here
    constexpr bool each_axis_once = ((detail::count_in<Idx::name, Idx...>() == 1) && ...);
    static_assert(each_axis_once,
                  "weft::named_layout: a coordinate names the same axis twice. Give each axis of the shape exactly "
                  "one coordinate.");
    return call(std::make_index_sequence<rank>{}, is...);
  }

  template <class S2, class L2>
  constexpr bool operator==(named_layout<S2, L2>) const noexcept {
    return std::is_same_v<Shape, S2> && std::is_same_v<Layout, L2>;
  }

 private:
  template <std::size_t... K, class... Idx>
  WEFT_HOST_DEVICE static constexpr std::size_t call(std::index_sequence<K...>, Idx... is) noexcept {
    return Layout{}(detail::pick<Shape::template axis_at<K>::name>(is...)...);
  }
};

namespace detail {

template <class T>
struct is_named_layout {
  template <class S, class L>
  static std::true_type test(const named_layout<S, L>*);
  static std::false_type test(...);
  static constexpr bool value = decltype(test(static_cast<const T*>(nullptr)))::value;
};

}  // namespace detail

/// Satisfied by a policy's mapping (anything derived from named_layout): named axes and a layout.
template <class M>
concept named_mapping = detail::is_named_layout<std::remove_cvref_t<M>>::value;

/// Satisfied by a mapping a tensor can use: a named mapping or a bare layout.
template <class M>
concept layout_mapping = named_mapping<M> || layout_like<M>;

namespace detail {
using probe_shape = shape<axis<"probe", 1>>;
}  // namespace detail

/// Satisfied by a policy tag with a nested `mapping<Shape>`.
template <class P>
concept layout_policy = requires { typename P::template mapping<detail::probe_shape>; };

// ---- the policies ----

namespace detail {

template <class Shape, class Strides, class Seq = std::make_index_sequence<Shape::rank>>
struct strided_layout;
template <class Shape, std::size_t... Strides, std::size_t... K>
struct strided_layout<Shape, std::index_sequence<Strides...>, std::index_sequence<K...>> {
  static constexpr std::array<std::size_t, sizeof...(K)> strides{Strides...};
  using type = layout<mode<Shape::extents[K], strides[K]>...>;
};

template <class Shape, bool RowMajor>
struct dense_strides {
  static constexpr std::array<std::size_t, Shape::rank> value = [] {
    std::array<std::size_t, Shape::rank> s{};
    std::size_t acc = 1;
    for (std::size_t n = 0; n < Shape::rank; ++n) {
      const std::size_t k = RowMajor ? Shape::rank - 1 - n : n;
      s[k] = acc;
      acc *= Shape::extents[k];
    }
    return s;
  }();
};

template <class Shape, bool RowMajor, class Seq = std::make_index_sequence<Shape::rank>>
struct dense_layout;
template <class Shape, bool RowMajor, std::size_t... K>
struct dense_layout<Shape, RowMajor, std::index_sequence<K...>> {
  using type = layout<mode<Shape::extents[K], dense_strides<Shape, RowMajor>::value[K]>...>;
};

}  // namespace detail

/// Last axis contiguous (C order): offset = sum_k i_k * prod_{j>k} n_j.
struct row_major {
  template <static_shape Shape>
  struct mapping : named_layout<Shape, typename detail::dense_layout<Shape, true>::type> {};
};

/// First axis contiguous (Fortran order): offset = sum_k i_k * prod_{j<k} n_j.
struct column_major {
  template <static_shape Shape>
  struct mapping : named_layout<Shape, typename detail::dense_layout<Shape, false>::type> {};
};

/// Explicit strides, one per axis (in elements): offset = sum_k i_k * Strides_k.
template <std::size_t... Strides>
struct strided {
  template <static_shape Shape>
  struct mapping;
};

namespace detail {
template <class Shape, std::size_t... Strides>
struct checked_strided {
  static constexpr bool one_stride_per_axis = diag::equal<sizeof...(Strides), Shape::rank>;
  static_assert(one_stride_per_axis,
                "weft::layout::strided: the stride list and the shape differ in length (see diag::equal<strides, "
                "rank>). Give one stride per axis of the shape.");
  // On a mismatch, fall back to row-major so that only the message above is reported.
  using type = typename std::conditional_t<one_stride_per_axis,
                                           strided_layout<Shape, std::index_sequence<Strides...>>,
                                           dense_layout<Shape, true>>::type;
};
}  // namespace detail

template <std::size_t... Strides>
template <static_shape Shape>
struct strided<Strides...>::mapping : named_layout<Shape, typename detail::checked_strided<Shape, Strides...>::type> {};

namespace detail {

// Scales every stride of a mode or layout by F.
template <class M, std::size_t F>
struct scale;
template <std::size_t S, std::size_t D, std::size_t F>
struct scale<mode<S, D>, F> {
  using type = mode<S, D * F>;
};
template <class... M, std::size_t F>
struct scale<layout<M...>, F> {
  using type = layout<typename scale<M, F>::type...>;
};

// The tile size of axis k of Shape under TileShape (1 where TileShape does not name it).
template <class Shape, class TileShape, std::size_t K>
constexpr std::size_t tile_extent() {
  constexpr auto name = Shape::template axis_at<K>::name;
  if constexpr (TileShape::template contains<name>) {
    return TileShape::template size_of<name>;
  } else {
    return 1;
  }
}

// Every name in TileShape must be an axis of Shape (reported by shape's index_of).
template <class Shape, class TileShape, std::size_t... J>
constexpr bool tile_names_known(std::index_sequence<J...>) {
  return ((Shape::template index_of<TileShape::template axis_at<J>::name>() < Shape::rank) && ... && true);
}
template <class Shape, class TileShape>
inline constexpr bool tile_names_known_v = tile_names_known<Shape, TileShape>(std::make_index_sequence<TileShape::rank>{});

// One instance per axis, so that the failing one is printed with its name and numbers.
template <fixed_string Axis, std::size_t AxisSize, std::size_t TileSize>
struct tile_check {
  static constexpr bool tile_divides_axis = diag::divisible<AxisSize, TileSize>;
  static_assert(tile_divides_axis,
                "weft::layout: a tile size does not divide its axis size (the axis, its size and the tile size are "
                "the arguments of tile_check). Choose tile sizes that divide the axis sizes.");
  static constexpr bool value = tile_divides_axis;
};

template <class Shape, class TileShape, class Seq = std::make_index_sequence<Shape::rank>>
struct tile_grid;
template <class Shape, class TileShape, std::size_t... K>
struct tile_grid<Shape, TileShape, std::index_sequence<K...>> {
  static constexpr bool names_known = tile_names_known_v<Shape, TileShape>;
  static constexpr bool divides =
      (tile_check<Shape::template axis_at<K>::name, Shape::extents[K], tile_extent<Shape, TileShape, K>()>::value && ... &&
       true);
  static constexpr std::size_t tile_of(std::size_t k) {
    constexpr std::array<std::size_t, Shape::rank + 1> t{tile_extent<Shape, TileShape, K>()..., 1};
    return t[k];
  }
  // Shape of one tile, and of the grid of tiles, with Shape's names.
  using tile_shape = shape<axis<Shape::template axis_at<K>::name, tile_extent<Shape, TileShape, K>()>...>;
  using grid_shape =
      shape<axis<Shape::template axis_at<K>::name, (divides ? Shape::extents[K] / tile_extent<Shape, TileShape, K>() : 1)>...>;
};

template <class TileShape, class Outer, class Inner, class Shape, class Seq = std::make_index_sequence<Shape::rank>>
struct tiled_layout;
template <class TileShape, class Outer, class Inner, class Shape, std::size_t... K>
struct tiled_layout<TileShape, Outer, Inner, Shape, std::index_sequence<K...>> {
  using grid = tile_grid<Shape, TileShape>;
  using inner = typename Inner::template mapping<typename grid::tile_shape>;
  using outer = typename Outer::template mapping<typename grid::grid_shape>;
  // Axis k: (position inside the tile, tile index); tiles are inner::cosize elements apart.
  using type = layout<layout<typename inner::layout_type::template mode_at<K>,
                             typename scale<typename outer::layout_type::template mode_at<K>, inner::cosize>::type>...>;
};

// On a tile that does not divide (reported by tile_check), fall back to row-major so that
// only that message is reported.
template <class TileShape, class Outer, class Inner, class Shape>
struct checked_tiled_layout {
  using grid = tile_grid<Shape, TileShape>;
  static_assert(grid::names_known);  // an unknown name is reported by weft::shape itself
  using type = typename std::conditional_t<grid::divides,
                                           tiled_layout<TileShape, Outer, Inner, Shape>,
                                           dense_layout<Shape, true>>::type;
};

}  // namespace detail

/// Tiles of `TileShape` (named like the mapped shape's axes; an axis it does not name has
/// tiles of 1), elements inside a tile placed by `Inner`, the tiles themselves by `Outer`.
/// Each tile occupies a contiguous block when `Inner` is dense. Policies nest:
/// `tiled<T, row_major, tiled<T2>>` tiles the tiles.
template <static_shape TileShape, layout_policy Outer = row_major, layout_policy Inner = row_major>
struct tiled {
  template <static_shape Shape>
  struct mapping : named_layout<Shape, typename detail::checked_tiled_layout<TileShape, Outer, Inner, Shape>::type> {};
};

// ---- divide: a named mapping cut into tiles ----

namespace detail {
template <class M, class Grid, class Seq = std::make_index_sequence<M::rank>>
struct divide_modes;
template <class M, class Grid, std::size_t... K>
struct divide_modes<M, Grid, std::index_sequence<K...>> {
  template <std::size_t Kk>
  using mode_k = typename M::layout_type::template mode_at<Kk>;
  // Axis k inside a tile: the first t_k coordinates of its mode; across tiles: steps of t_k.
  using tile_layout = layout<compose_t<mode_k<K>, mode<Grid::tile_of(K), 1>>...>;
  using grid_layout =
      layout<compose_t<mode_k<K>, complement_t<mode<Grid::tile_of(K), 1>, mode_k<K>::size>>...>;
};
}  // namespace detail

/// `M` cut into tiles of `TileShape` (named like M's axes; unnamed axes get tiles of 1):
/// offset(x) == grid_mapping(x / t) + tile_mapping(x % t), axis by axis.
/// `tile_mapping` maps coordinates inside one tile, `grid_mapping` maps tile coordinates to
/// the offset of the tile's first element; both are named mappings with M's axis names.
template <named_mapping M, static_shape TileShape>
struct divide {
  using grid = detail::tile_grid<typename M::shape_type, TileShape>;
  static_assert(grid::names_known);  // an unknown name is reported by weft::shape itself
  // On a tile that does not divide (reported by tile_check), continue with tiles of 1 so
  // that only that message is reported.
  using used_grid = std::conditional_t<grid::divides, grid, detail::tile_grid<typename M::shape_type, shape<>>>;
  using modes = detail::divide_modes<M, used_grid>;
  using tile_mapping = named_layout<typename used_grid::tile_shape, typename modes::tile_layout>;
  using grid_mapping = named_layout<typename used_grid::grid_shape, typename modes::grid_layout>;
  /// The whole as one layout: ((tile modes...), (grid modes...)), as CuTe's zipped_divide.
  using layout_type = layout<typename modes::tile_layout, typename modes::grid_layout>;
};

}  // namespace weft
