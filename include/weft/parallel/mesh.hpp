#pragma once
// ---- the device mesh: named axes over the ranks of a job ----
// `mesh<axis<"dp">, axis<"tp", 2>, axis<"pp", 2>>` names the dimensions along which a
// strategy lays out its ranks. Tensor and pipeline axes have static sizes (they change
// shapes and the schedule); at most one axis may be `dynamic`: its size is the world size
// divided by the product of the others, known at run time (the data-parallel degree).
#include "weft/core/axis.hpp"          // axis, axis_like
#include "weft/core/constant.hpp"      // dynamic
#include "weft/core/diagnostics.hpp"   // diag::at_most
#include "weft/core/fixed_string.hpp"  // fixed_string
#include "weft/core/shape.hpp"         // detail::names_unique, detail::count_name, detail::nth

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace weft {

namespace detail {
template <class... Axes>
constexpr std::size_t count_dynamic() {
  return ((Axes::is_static ? 0u : 1u) + ... + 0u);
}
// Sizes of static axes are at least 1 (a dynamic axis is sized at run time).
template <class... Axes>
constexpr bool sizes_positive() {
  return ((!Axes::is_static || Axes::size >= 1) && ... && true);
}
}  // namespace detail

/// Named axes over the ranks of a job; at most one of them `dynamic`.
template <axis_like... Axes>
struct mesh {
  using weft_mesh_tag = void;  // recognised by mesh_like (no partial specialisation on fixed_string; nvcc)

  // ---- validation ----
  static constexpr bool has_axes = sizeof...(Axes) >= 1;
  static_assert(has_axes, "weft::mesh: the mesh has no axes. Give it at least one, e.g. mesh<axis<\"dp\">>.");
  static constexpr bool has_unique_names = detail::names_unique<Axes...>();
  static_assert(has_unique_names,
                "weft::mesh: an axis name occurs twice. Give every mesh axis a distinct name (e.g. \"dp\", \"tp\", "
                "\"pp\").");
  static constexpr std::size_t dynamic_axes = detail::count_dynamic<Axes...>();
  static constexpr bool one_dynamic_at_most = diag::at_most<dynamic_axes, 1>;
  static_assert(one_dynamic_at_most,
                "weft::mesh: more than one axis has a dynamic size, so the world size cannot determine them. Give "
                "all axes but one (the data-parallel axis) a static size.");
  static constexpr bool static_sizes_positive = detail::sizes_positive<Axes...>();
  static_assert(static_sizes_positive, "weft::mesh: an axis has size 0. Give every static mesh axis a size of at least 1.");

  /// Number of axes.
  static constexpr std::size_t rank = sizeof...(Axes);
  /// The I-th axis type.
  template <std::size_t I>
  using axis_at = typename detail::nth<I, Axes...>::type;
  /// Axis names in order.
  static constexpr std::array<std::string_view, rank> names{Axes::name.view()...};
  /// Sizes in order; `dynamic` for the run-time axis.
  static constexpr std::array<std::size_t, rank> sizes{Axes::size...};
  /// Product of the static sizes (the ranks one dynamic index spans).
  static constexpr std::size_t static_product = ((Axes::is_static ? Axes::size : std::size_t{1}) * ... * std::size_t{1});
  /// Ranks in the job, or `dynamic` when an axis is sized at run time.
  static constexpr std::size_t world_size = dynamic_axes == 0 ? static_product : dynamic;

  /// Whether an axis called `Name` exists.
  template <fixed_string Name>
  static constexpr bool contains = (detail::count_name<Axes...>(Name.view()) == 1);

  /// Size of the axis called `Name` (`dynamic` when sized at run time, 0 when absent).
  template <fixed_string Name>
  static constexpr std::size_t size_of = [] {
    std::size_t r = 0;
    ((Axes::name.view() == Name.view() ? (r = Axes::size, 0) : 0), ...);
    return r;
  }();

  /// Size of the one dynamic axis for a job of `world` ranks (0 when `world` is not a multiple of
  /// the static sizes); the static product's share when no axis is dynamic.
  static constexpr std::size_t dynamic_size(std::size_t world) noexcept {
    if (dynamic_axes == 0) return world == static_product ? 1 : 0;
    return world % static_product == 0 ? world / static_product : 0;
  }
};

/// Satisfied by `mesh<Axes...>`.
template <class T>
concept mesh_like = requires { typename std::remove_cvref_t<T>::weft_mesh_tag; };

}  // namespace weft
