#pragma once
// ---- shapes of named axes ----
// `shape<axis<"batch", 8>, axis<"seq", 1024>, axis<"width", 768>>` is the type-level
// description of a tensor's extents. Axes are looked up by name; duplicates, unknown
// names and non-divisible splits are compile errors in the house form. `split` is the
// building block of sharding: tensor parallelism splits "width", data parallelism "batch".
#include "weft/core/axis.hpp"         // axis, axis_like
#include "weft/core/constant.hpp"     // dynamic
#include "weft/core/diagnostics.hpp"  // diag::*

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace weft {

template <axis_like... Axes>
struct shape;

namespace detail {

// Number of axes called `name` in the pack.
template <class... Axes>
constexpr std::size_t count_name(std::string_view name) {
  return ((Axes::name.view() == name ? 1u : 0u) + ... + 0u);
}

template <class... Axes>
constexpr bool names_unique() {
  return ((count_name<Axes...>(Axes::name.view()) == 1) && ... && true);
}

// First duplicated name, for the diagnostic; "" when none.
template <class... Axes>
constexpr std::size_t first_duplicate_index() {
  std::size_t i = 0, r = sizeof...(Axes);
  ((count_name<Axes...>(Axes::name.view()) > 1 && r == sizeof...(Axes) ? (r = i, ++i) : ++i), ...);
  return r;
}

template <std::size_t I, class... Ts>
struct nth;
template <class T, class... Ts>
struct nth<0, T, Ts...> {
  using type = T;
};
template <std::size_t I, class T, class... Ts>
struct nth<I, T, Ts...> : nth<I - 1, Ts...> {};

template <class S, fixed_string Name, std::size_t Degree>
struct split_shape;  // defined after shape

template <class S, class A>
struct push_back;
template <class... As, class A>
struct push_back<shape<As...>, A> {
  using type = shape<As..., A>;
};

// Rebuild a shape axis by axis: F<I, Axis>::type is a shape fragment (shape<> or shape<A...>).
template <class Acc, class... Fragments>
struct concat_shapes {
  using type = Acc;
};
template <class... As, class... Bs, class... Rest>
struct concat_shapes<shape<As...>, shape<Bs...>, Rest...> : concat_shapes<shape<As..., Bs...>, Rest...> {};

}  // namespace detail

/// Extents as named axes. `Axes` must have distinct names.
template <axis_like... Axes>
struct shape {
  // ---- validation ----
  static constexpr bool has_unique_names = detail::names_unique<Axes...>();
  static_assert(has_unique_names,
                "weft::shape: an axis name occurs twice. Give every axis of a shape a distinct name "
                "(e.g. \"heads\" and \"head_dim\", not two \"dim\").");

  /// Number of axes.
  static constexpr std::size_t rank = sizeof...(Axes);

  /// Sizes in order; `dynamic` where unknown.
  static constexpr std::array<std::size_t, rank> extents{Axes::size...};
  /// Axis names in order.
  static constexpr std::array<std::string_view, rank> names{Axes::name.view()...};

  /// True when every size is known at compile time.
  static constexpr bool is_static = (Axes::is_static && ... && true);

  /// Product of all sizes (1 for rank 0); `dynamic` if any size is dynamic.
  static constexpr std::size_t product = is_static ? (std::size_t{1} * ... * Axes::size) : dynamic;
  /// Alias of `product` (number of elements).
  static constexpr std::size_t size = product;

  /// Whether an axis called `Name` exists.
  template <fixed_string Name>
  static constexpr bool contains = (detail::count_name<Axes...>(Name.view()) == 1);

  /// Position of the axis called `Name`; a compile error naming `Name` when absent.
  template <fixed_string Name>
  static consteval std::size_t index_of() {
    constexpr bool found = diag::name_found<Name, contains<Name>>;
    static_assert(found,
                  "weft::shape: no axis has this name. Use one of the shape's axis names "
                  "(see the template arguments of weft::shape in this message).");
    std::size_t i = 0, r = 0;  // 0 when absent: the assertion above already reported it
    ((Axes::name.view() == Name.view() ? (r = i, ++i) : ++i), ...);
    return r;
  }

  /// Size of the axis called `Name`.
  template <fixed_string Name>
  static constexpr std::size_t size_of = extents[index_of<Name>()];

  /// The I-th axis type.
  template <std::size_t I>
  using axis_at = typename detail::nth<I, Axes...>::type;

  /// The axis called `Name`.
  template <fixed_string Name>
  using axis_named = axis_at<index_of<Name>()>;

 private:
  template <fixed_string Name, class New, class A>
  using replace_one = std::conditional_t<A::name.view() == Name.view(), shape<New>, shape<A>>;
  template <fixed_string Name, class A>
  using drop_one = std::conditional_t<A::name.view() == Name.view(), shape<>, shape<A>>;

  template <std::size_t Pos, class New, std::size_t... I>
  static auto insert_impl(std::index_sequence<I...>)
      -> typename detail::concat_shapes<shape<>,
                                        std::conditional_t<I == Pos, shape<New, axis_at<I>>, shape<axis_at<I>>>...,
                                        std::conditional_t<Pos == rank, shape<New>, shape<>>>::type;

 public:
  /// The shape with axis `Name` replaced by `New` (which may carry another name).
  /// (An unknown `Name` is reported by index_of.)
  template <fixed_string Name, axis_like New>
  using replace = decltype(index_of<Name>(), typename detail::concat_shapes<shape<>, replace_one<Name, New, Axes>...>::type());

  /// The shape with axis `Name` resized to `Size`.
  template <fixed_string Name, std::size_t Size>
  using resize = replace<Name, axis<Name, Size>>;

  /// The shape without axis `Name`.
  template <fixed_string Name>
  using drop = decltype(index_of<Name>(), typename detail::concat_shapes<shape<>, drop_one<Name, Axes>...>::type());

  /// The shape with `New` inserted before position `Pos` (Pos == rank appends).
  template <std::size_t Pos, axis_like New>
    requires(Pos <= rank)
  using insert = decltype(insert_impl<Pos, New>(std::make_index_sequence<rank>{}));

  /// The per-rank shape when axis `Name` is split `Degree` ways: its size becomes size/Degree.
  template <fixed_string Name, std::size_t Degree>
  using split = typename detail::split_shape<shape, Name, Degree>::type;

  /// Row-major strides (last axis contiguous); for static shapes only.
  static constexpr std::array<std::size_t, rank> row_major_strides() {
    std::array<std::size_t, rank> s{};
    std::size_t acc = 1;
    for (std::size_t i = rank; i-- > 0;) {
      s[i] = acc;
      acc *= extents[i];
    }
    return s;
  }
};

namespace detail {
template <class T>
struct is_shape : std::false_type {};
template <class... A>
struct is_shape<shape<A...>> : std::true_type {};
}  // namespace detail

/// Satisfied by `shape<Axes...>`.
template <class T>
concept shape_like = detail::is_shape<std::remove_cvref_t<T>>::value;

/// Satisfied by shapes whose every size is known at compile time.
template <class T>
concept static_shape = shape_like<T> && std::remove_cvref_t<T>::is_static;

namespace detail {
// Split with the checks stated as named conditions (printed with their numbers).
template <class S, fixed_string Name, std::size_t Degree>
struct split_shape {
  static constexpr std::size_t n = S::template size_of<Name>;
  static constexpr bool degree_positive = (Degree > 0);
  static_assert(degree_positive, "weft::shape::split: the parallel degree is 0. Use a degree of at least 1.");
  static constexpr bool size_known = (n != dynamic);
  static_assert(size_known,
                "weft::shape::split: the axis has a dynamic size. Split only axes whose size is a compile-time "
                "constant.");
  static constexpr bool divides = diag::divisible<n, Degree>;
  static_assert(divides,
                "weft::shape::split: the axis size is not divisible by the parallel degree. Choose a degree "
                "that divides the axis size, or change the model dimension so that it does.");
  using type = typename S::template resize<Name, (divides ? n / Degree : n)>;
};
}  // namespace detail

/// Same names and sizes in the same order.
template <shape_like A, shape_like B>
inline constexpr bool same_shape_v = std::is_same_v<A, B>;

}  // namespace weft
