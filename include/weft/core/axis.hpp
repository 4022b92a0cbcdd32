#pragma once
// ---- named axes ----
// An axis is a name plus a size: `axis<"seq", 1024>`. Sizes may be `dynamic` where
// only the run time knows them (the data-parallel degree of a mesh).
#include "weft/core/constant.hpp"      // dynamic
#include "weft/core/fixed_string.hpp"  // fixed_string

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace weft {

/// A named dimension of a shape or a mesh.
template <fixed_string Name, std::size_t Size = dynamic>
struct axis {
  static constexpr auto name = Name;
  static constexpr std::size_t size = Size;
  static constexpr bool is_static = (Size != dynamic);
  using weft_axis_tag = void;  // recognised by axis_like (nvcc cannot deduce fixed_string<N> in a partial specialisation)
};

/// Satisfied by `axis<Name, Size>`.
template <class T>
concept axis_like = requires {
  typename std::remove_cvref_t<T>::weft_axis_tag;
  { std::remove_cvref_t<T>::size } -> std::convertible_to<std::size_t>;
};

}  // namespace weft
