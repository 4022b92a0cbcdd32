#pragma once
// ---- layout algebra: coalesce, complement, compose, divide ----
// The operations later kernels need to cut layouts into tiles, after CuTe's layout algebra
// (Cecka, "CuTe Layout Representation and Algebra", 2024). All of them work on types:
// the inputs' leaves are flattened into arrays (flat_layout), the result is computed by a
// constexpr function and turned back into a `layout<...>` type.
//
// Coordinates here are 1-D and colexicographic (first mode fastest), as in CuTe:
// compose_t<A, B> is the layout R with R(i) == A(B(i)) for every i < size(B), where B(i) is
// read as a 1-D coordinate of A.
#include "weft/core/layout.hpp"  // layout, mode, flat_layout, flatten_value

#include <array>
#include <cstddef>
#include <utility>

namespace weft {

/// By-mode tile sizes for logical_divide_t / zipped_divide_t: mode k is cut into tiles of
/// `Sizes[k]` coordinates (modes beyond the list are cut into tiles of 1).
template <std::size_t... Sizes>
  requires((Sizes > 0) && ...)
struct tiler {
  static constexpr std::size_t rank = sizeof...(Sizes);
  static constexpr std::array<std::size_t, rank> sizes{Sizes...};
};

namespace detail {

// ---- flat algorithms ----

template <std::size_t N>
struct flat_result {
  flat_layout<N> value;
  bool ok = true;
};

// Drops size-1 leaves and merges neighbours (s0:d0),(s1:s0*d0) into (s0*s1:d0). The result
// has the same 1-D function on [0, size) and at least one leaf ((1:0) when all are size 1).
template <std::size_t R, std::size_t N>
constexpr flat_layout<R> coalesce_flat(const flat_layout<N>& f) {
  flat_layout<R> r;
  for (std::size_t k = 0; k < f.rank; ++k) {
    const std::size_t s = f.sizes[k], d = f.strides[k];
    if (s == 1) continue;
    if (r.rank > 0 && d == r.sizes[r.rank - 1] * r.strides[r.rank - 1]) {
      r.sizes[r.rank - 1] *= s;
    } else {
      r.push(s, d);
    }
  }
  if (r.rank == 0) r.push(1, 0);
  return r;
}

// The layout of the offsets in [0, cotarget) that `f` does not reach, ordered so that
// (f, complement) is a bijection onto [0, cotarget) (up to rounding cotarget up). Exists
// when f's leaves, sorted by stride, each start where the previous ones end or at a
// multiple of that.
template <std::size_t R, std::size_t N>
constexpr flat_result<R> complement_flat(const flat_layout<N>& f, std::size_t cotarget) {
  flat_result<R> out;
  std::array<std::size_t, (N > 0 ? N : 1)> order{};
  std::size_t n = 0;
  for (std::size_t k = 0; k < f.rank; ++k)
    if (f.sizes[k] > 1 && f.strides[k] != 0) order[n++] = k;
  for (std::size_t i = 1; i < n; ++i)
    for (std::size_t j = i; j > 0 && f.strides[order[j]] < f.strides[order[j - 1]]; --j) std::swap(order[j], order[j - 1]);
  flat_layout<R> gaps;
  std::size_t covered = 1;  // the sorted leaves so far fill [0, covered) in steps of their strides
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t s = f.sizes[order[i]], d = f.strides[order[i]];
    if (d < covered || d % covered != 0) {
      out.ok = false;
      return out;
    }
    gaps.push(d / covered, covered);
    covered = s * d;
  }
  gaps.push((cotarget + covered - 1) / covered, covered);
  out.value = coalesce_flat<R>(gaps);
  return out;
}

// A o (Size:Stride) for a coalesced A: the layout i -> A(i * Stride), i < Size. Walks A's
// leaves: a leaf whose size divides the remaining stride is stepped over whole; otherwise the
// stride must divide the leaf's size and the leaf contributes (size/stride : stride*d).
template <std::size_t R, std::size_t N>
constexpr flat_result<R> compose_leaf_flat(const flat_layout<N>& a, std::size_t size, std::size_t stride) {
  flat_result<R> out;
  if (stride == 0) {  // a broadcast stays a broadcast: A(0) == 0
    out.value.push(size, 0);
    return out;
  }
  std::size_t rest_size = size, rest_stride = stride;
  for (std::size_t k = 0; k + 1 < a.rank && rest_size > 1; ++k) {
    const std::size_t s = a.sizes[k], d = a.strides[k];
    if (rest_stride % s == 0) {  // coordinate in this leaf is always 0
      rest_stride /= s;
      continue;
    }
    if (s % rest_stride != 0) {
      out.ok = false;
      return out;
    }
    const std::size_t q = s / rest_stride;  // distinct coordinates the leaf takes
    const std::size_t take = q < rest_size ? q : rest_size;
    if (q < rest_size && rest_size % q != 0) {
      out.ok = false;
      return out;
    }
    out.value.push(take, rest_stride * d);
    rest_size /= take;
    rest_stride = 1;
  }
  if (rest_size > 1) out.value.push(rest_size, rest_stride * a.strides[a.rank - 1]);
  if (out.value.rank == 0) out.value.push(1, 0);
  return out;
}

// ---- back from values to types ----

template <auto F, class Seq = std::make_index_sequence<F.rank>>
struct layout_from_flat;
template <auto F, std::size_t... I>
struct layout_from_flat<F, std::index_sequence<I...>> {
  using type = layout<mode<F.sizes[I], F.strides[I]>...>;
};

// A single leaf becomes a `mode`, several a `layout`: used where the result stands in a
// mode position of a larger layout.
template <auto F, bool Single = (F.rank == 1)>
struct mode_from_flat {
  using type = mode<F.sizes[0], F.strides[0]>;
};
template <auto F>
struct mode_from_flat<F, false> : layout_from_flat<F> {};

// ---- coalesce ----

template <class L>
struct coalesce_impl {
  static constexpr auto flat = flatten_value<L>();
  static constexpr std::size_t capacity = flat.rank > 0 ? flat.rank : 1;
  using type = typename layout_from_flat<coalesce_flat<capacity>(flat)>::type;
};

// ---- complement ----

template <class L, std::size_t CoTarget>
struct complement_impl {
  static constexpr auto flat = flatten_value<L>();
  static constexpr auto result = complement_flat<flat.rank + 1>(flat, CoTarget);
  static constexpr bool strides_leave_room = result.ok;
  static_assert(strides_leave_room,
                "weft::layout::complement: the layout's leaves overlap or their strides do not divide one "
                "another, so no complement exists. Complement only unique layouts whose strides, sorted, each "
                "are a multiple of the span of the smaller ones.");
  using type = typename layout_from_flat<(strides_leave_room ? result.value : flat_layout<flat.rank + 1>{1, {1}, {0}})>::type;
};

// ---- compose ----

template <class A, class B>
struct compose_impl;

// Distribute over B's modes: A o (B0, B1, ...) = (A o B0, A o B1, ...).
template <class A, class... Bs>
struct compose_impl<A, layout<Bs...>> {
  using type = layout<typename compose_impl<A, Bs>::type...>;
};

template <class A, std::size_t S, std::size_t D>
struct compose_impl<A, mode<S, D>> {
  static constexpr auto flat_a = flatten_value<A>();
  static constexpr std::size_t capacity = flat_a.rank > 0 ? flat_a.rank : 1;
  static constexpr auto result = compose_leaf_flat<capacity>(coalesce_flat<capacity>(flat_a), S, D);
  static constexpr bool strides_divide = result.ok;
  static_assert(strides_divide,
                "weft::layout::compose: the right layout does not step evenly through the left layout's modes (a "
                "stride or a size does not divide the mode it lands in). Compose with tiles whose sizes and strides "
                "divide, or are multiples of, the left layout's mode sizes.");
  using type = typename mode_from_flat<(strides_divide ? result.value : flat_layout<capacity>{1, {S}, {D}})>::type;
};

// ---- divide ----

template <class A, class Tiler>
struct logical_divide_impl {
  // 1-D: (A o B, A o B*), B* the complement of B in size(A).
  using type = layout<typename compose_impl<A, Tiler>::type,
                      typename compose_impl<A, typename complement_impl<Tiler, A::size>::type>::type>;
};

// The tile size of mode K (1 beyond the tiler's list).
template <std::size_t K, std::size_t... Sizes>
constexpr std::size_t tile_size_for() {
  constexpr std::array<std::size_t, sizeof...(Sizes) + 1> s{Sizes..., 1};
  return K < sizeof...(Sizes) ? s[K] : 1;
}

template <class A, class Tiler, class Seq = std::make_index_sequence<A::rank>>
struct by_mode_divide;
template <class... M, std::size_t... Sizes, std::size_t... K>
struct by_mode_divide<layout<M...>, tiler<Sizes...>, std::index_sequence<K...>> {
  using A = layout<M...>;
  static_assert(sizeof...(Sizes) <= sizeof...(M),
                "weft::layout::divide: the tiler has more sizes than the layout has modes. Give at most one tile "
                "size per mode.");
  // Mode k as (tile, rest).
  template <std::size_t Kk>
  using split =
      typename logical_divide_impl<typename A::template mode_at<Kk>, mode<tile_size_for<Kk, Sizes...>(), 1>>::type;
  using logical = layout<split<K>...>;
  using zipped = layout<layout<typename split<K>::template mode_at<0>...>, layout<typename split<K>::template mode_at<1>...>>;
};

template <class A, std::size_t... Sizes>
struct logical_divide_impl<A, tiler<Sizes...>> {
  using type = typename by_mode_divide<A, tiler<Sizes...>>::logical;
};

// A 1-D divide is (tile, rest) already.
template <class A, class Tiler>
struct zipped_divide_impl : logical_divide_impl<A, Tiler> {};
template <class A, std::size_t... Sizes>
struct zipped_divide_impl<A, tiler<Sizes...>> {
  using type = typename by_mode_divide<A, tiler<Sizes...>>::zipped;
};

}  // namespace detail

/// The leaves of `L` as a flat layout<mode...> (same 1-D function).
template <layout_mode L>
using flatten_t = typename detail::layout_from_flat<flatten_value<L>()>::type;

/// `L` with size-1 leaves dropped and contiguous neighbours merged: the same 1-D function
/// on [0, size) with the fewest leaves.
template <layout_mode L>
using coalesce_t = typename detail::coalesce_impl<L>::type;

/// The layout that fills the gaps of `L` up to `CoTarget`: layout<L, complement_t<L, M>>
/// maps [0, M) one-to-one onto [0, M) when M is a multiple of L's span.
template <layout_mode L, std::size_t CoTarget = L::cosize>
using complement_t = typename detail::complement_impl<L, CoTarget>::type;

/// A o B: R(i) == A(B(i)) for i < size(B); R has B's shape (B's modes, each A o B_k).
/// Exact when B's modes step through disjoint digits of A's mixed-radix coordinate, which
/// tilers and complements always do.
template <layout_mode A, layout_mode B>
using compose_t = typename detail::compose_impl<A, B>::type;

/// `A` cut by `Tiler`: with a layout B, the rank-2 layout (A o B, A o complement(B)) —
/// mode 0 walks one tile, mode 1 the tiles; with `tiler<N...>`, each mode k becomes
/// (tile of N_k, tiles).
template <layout_like A, class Tiler>
using logical_divide_t = typename detail::logical_divide_impl<A, Tiler>::type;

/// As logical_divide_t, with the tile modes gathered first: ((tile modes...), (rest modes...)).
template <layout_like A, class Tiler>
using zipped_divide_t = typename detail::zipped_divide_impl<A, Tiler>::type;

// ---- value forms, for code that holds layouts as objects ----

/// `coalesce_t` as a function.
template <layout_mode L>
constexpr coalesce_t<L> coalesce(L) noexcept {
  return {};
}
/// `compose_t` as a function.
template <layout_mode A, layout_mode B>
constexpr compose_t<A, B> compose(A, B) noexcept {
  return {};
}
/// `logical_divide_t` as a function.
template <layout_like A, class Tiler>
constexpr logical_divide_t<A, Tiler> logical_divide(A, Tiler) noexcept {
  return {};
}
/// `zipped_divide_t` as a function.
template <layout_like A, class Tiler>
constexpr zipped_divide_t<A, Tiler> zipped_divide(A, Tiler) noexcept {
  return {};
}

}  // namespace weft
