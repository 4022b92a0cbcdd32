#pragma once
// ---- layouts: compile-time maps from coordinates to offsets ----
// A layout (after CuTe's Layout) is a list of modes. A mode is either a `mode<Size, Stride>`
// (Size coordinates, Stride apart) or itself a layout: a "layout of layouts" whose 1-D
// coordinate is split colexicographically (first sub-mode fastest) among its sub-modes.
//
//   layout<mode<4, 8>, mode<8, 1>>                                    // (rows, cols) 4 x 8, row-major
//   layout<layout<mode<2, 2>, mode<2, 8>>, layout<mode<2, 1>, mode<2, 4>>>
//       // (rows, cols) 4 x 4 in 2 x 2 tiles: each axis is (inside a tile, across tiles)
//
// Every size and stride is a template argument, so a layout is an empty type and its
// offset computation is plain integer arithmetic on constants: it runs in constant
// evaluation and in device code alike (no tables indexed at run time).
// Named-axis mappings (row_major, column_major, strided, tiled) are in layout_policy.hpp;
// composition and division in layout_algebra.hpp.
#include "weft/config.hpp"  // WEFT_HOST_DEVICE

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace weft {

/// One mode of a layout: `Size` coordinates, `Stride` apart. `Size` is at least 1.
template <std::size_t Size, std::size_t Stride>
  requires(Size > 0)
struct mode;

/// A layout: one mode per coordinate; each mode is a `mode<Size, Stride>` or a layout.
template <class... Modes>
struct layout;

namespace detail {

template <class T>
struct is_mode : std::false_type {};
template <std::size_t S, std::size_t D>
struct is_mode<mode<S, D>> : std::true_type {};

template <class T>
struct is_layout : std::false_type {};
template <class... M>
struct is_layout<layout<M...>> : std::true_type {};

}  // namespace detail

/// Satisfied by `mode<Size, Stride>`: a leaf of a layout.
template <class T>
concept mode_like = detail::is_mode<std::remove_cvref_t<T>>::value;

/// Satisfied by `layout<Modes...>`.
template <class T>
concept layout_like = detail::is_layout<std::remove_cvref_t<T>>::value;

/// A mode or a layout: what may stand in a layout's mode list.
template <class T>
concept layout_mode = mode_like<T> || layout_like<T>;

// ---- flat form: the leaves of a layout as arrays, for compile-time algorithms ----

/// The leaves of a layout in order, as values: used by the layout algebra and by the
/// memory plan. `N` is the capacity; `rank` entries are in use.
template <std::size_t N>
struct flat_layout {
  std::size_t rank = 0;
  std::array<std::size_t, N> sizes{};
  std::array<std::size_t, N> strides{};

  constexpr void push(std::size_t size, std::size_t stride) {
    sizes[rank] = size;
    strides[rank] = stride;
    ++rank;
  }
  /// Product of the sizes.
  constexpr std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t k = 0; k < rank; ++k) n *= sizes[k];
    return n;
  }
};

namespace detail {

template <std::size_t I, class... Ts>
struct nth_type;
template <class T, class... Ts>
struct nth_type<0, T, Ts...> {
  using type = T;
};
template <std::size_t I, class T, class... Ts>
struct nth_type<I, T, Ts...> : nth_type<I - 1, Ts...> {};

// Number of leaves.
template <class M>
struct leaf_count;
template <std::size_t S, std::size_t D>
struct leaf_count<mode<S, D>> : std::integral_constant<std::size_t, 1> {};
template <class... M>
struct leaf_count<layout<M...>> : std::integral_constant<std::size_t, (std::size_t{0} + ... + leaf_count<M>::value)> {};

template <std::size_t N, std::size_t S, std::size_t D>
constexpr void append_leaves(flat_layout<N>& f, mode<S, D>*) {
  f.push(S, D);
}
template <std::size_t N, class... M>
constexpr void append_leaves(flat_layout<N>& f, layout<M...>*) {
  (append_leaves(f, static_cast<M*>(nullptr)), ...);
}

}  // namespace detail

/// The leaves of `L` (a mode or a layout) in order.
template <layout_mode L>
constexpr auto flatten_value() {
  flat_layout<detail::leaf_count<L>::value> f;
  detail::append_leaves(f, static_cast<L*>(nullptr));
  return f;
}

namespace detail {

// Unique: sorted by stride (size-1 leaves ignored), every stride reaches past the span of
// the smaller ones. A sufficient test; exact for the layouts weft builds (row/column-major,
// padded strides, tiles, their compositions); a stride-0 leaf of size > 1 is never unique.
template <std::size_t N>
constexpr bool is_unique(flat_layout<N> f) {
  std::array<std::size_t, N> order{};
  std::size_t n = 0;
  for (std::size_t k = 0; k < f.rank; ++k)
    if (f.sizes[k] > 1) order[n++] = k;
  for (std::size_t i = 1; i < n; ++i)  // insertion sort by stride: ranks are tiny
    for (std::size_t j = i; j > 0 && f.strides[order[j]] < f.strides[order[j - 1]]; --j) std::swap(order[j], order[j - 1]);
  std::size_t span = 0;  // largest offset reached by the leaves so far
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = order[i];
    if (f.strides[k] <= span || f.strides[k] == 0) return false;
    span += (f.sizes[k] - 1) * f.strides[k];
  }
  return true;
}

}  // namespace detail

// ---- mode ----

template <std::size_t Size, std::size_t Stride>
  requires(Size > 0)
struct mode {
  static constexpr std::size_t rank = 1;
  static constexpr std::size_t size = Size;
  static constexpr std::size_t stride_value = Stride;
  /// 1 + the largest offset.
  static constexpr std::size_t cosize = (Size - 1) * Stride + 1;

  WEFT_HOST_DEVICE constexpr std::size_t operator()(std::size_t i) const noexcept { return i * Stride; }
};

// ---- layout ----

template <class... Modes>
struct layout {
  static_assert((layout_mode<Modes> && ... && true),
                "weft::layout: a mode is neither a weft::mode<size, stride> nor a weft::layout. Build layouts from "
                "modes and layouts only.");

  /// Number of top-level modes (coordinates of a natural call).
  static constexpr std::size_t rank = sizeof...(Modes);
  /// Number of coordinates: the product of the mode sizes.
  static constexpr std::size_t size = (std::size_t{1} * ... * Modes::size);
  /// 1 + the largest offset (strides are non-negative, so the largest offset is the sum of
  /// each mode's largest one).
  static constexpr std::size_t cosize = 1 + (std::size_t{0} + ... + (Modes::cosize - 1));

  /// The I-th mode.
  template <std::size_t I>
    requires(I < rank)
  using mode_at = typename detail::nth_type<I, Modes...>::type;

  /// Size of the r-th mode (0 when r >= rank).
  WEFT_HOST_DEVICE static constexpr std::size_t extent(std::size_t r) noexcept {
    std::size_t k = 0, e = 0;
    ((e = (k++ == r ? Modes::size : e)), ...);
    return e;
  }

  /// Offset step of the r-th coordinate: the offset of coordinate 1 in mode r, all others 0
  /// (0 for a mode of size 1 or r >= rank). For a `mode<S, D>` that is D.
  WEFT_HOST_DEVICE static constexpr std::size_t stride(std::size_t r) noexcept {
    std::size_t k = 0, s = 0;
    ((s = (k++ == r ? step_of<Modes>() : s)), ...);
    return s;
  }

  /// No two coordinates share an offset.
  static constexpr bool is_unique = detail::is_unique(flatten_value<layout>());
  /// Unique and every offset in [0, cosize) is used: the layout fills its memory exactly.
  static constexpr bool is_contiguous = is_unique && (cosize == size);

  // ---- evaluation ----

  /// Natural coordinates: one index per mode; a mode that is a layout takes its 1-D index.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  WEFT_HOST_DEVICE constexpr std::size_t operator()(I... i) const noexcept {
    return (std::size_t{0} + ... + Modes{}(static_cast<std::size_t>(i)));
  }

  /// 1-D coordinate, split colexicographically: the first mode varies fastest and the last
  /// mode takes the rest (i / product of the other sizes), as in CuTe.
  template <std::integral I>
    requires(rank != 1)
  WEFT_HOST_DEVICE constexpr std::size_t operator()(I i) const noexcept {
    if constexpr (rank == 0) {
      return 0;
    } else {
      return colex<Modes...>(static_cast<std::size_t>(i));
    }
  }

  template <class... Other>
  constexpr bool operator==(layout<Other...>) const noexcept {
    return std::is_same_v<layout, layout<Other...>>;
  }

 private:
  template <class M>
  WEFT_HOST_DEVICE static constexpr std::size_t step_of() noexcept {
    if constexpr (M::size > 1) return M{}(std::size_t{1});
    else if constexpr (mode_like<M>) return M::stride_value;
    else return 0;
  }

  template <class M, class... Rest>
  WEFT_HOST_DEVICE static constexpr std::size_t colex(std::size_t i) noexcept {
    if constexpr (sizeof...(Rest) == 0) {
      return M{}(i);
    } else {
      return M{}(i % M::size) + colex<Rest...>(i / M::size);
    }
  }
};

}  // namespace weft
