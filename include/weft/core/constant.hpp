#pragma once
// ---- compile-time integer constants and the dynamic sentinel ----
// One constant type `c<V>` (after CuTe's integral_constant) and one sentinel for
// sizes known only at run time (after mdspan's dynamic_extent). Static sizes cost
// no storage: a `c<V>` is an empty type.
#include "weft/config.hpp"  // WEFT_HOST_DEVICE

#include <concepts>
#include <cstddef>
#include <limits>
#include <type_traits>

namespace weft {

/// A compile-time value as a type.
template <auto V>
struct c {
  using value_type = decltype(V);
  static constexpr value_type value = V;
  constexpr operator value_type() const noexcept { return V; }  // NOLINT(implicit)
  constexpr value_type operator()() const noexcept { return V; }
};

/// `c_v<V>`: the object form, for `f(c_v<4>)`.
template <auto V>
inline constexpr c<V> c_v{};

/// Marks an extent known only at run time (e.g. the data-parallel degree).
inline constexpr std::size_t dynamic = std::numeric_limits<std::size_t>::max();

namespace detail {
template <class T>
struct is_constant : std::false_type {};
template <auto V>
struct is_constant<c<V>> : std::true_type {};
}  // namespace detail

/// Satisfied by `c<V>` only.
template <class T>
concept constant = detail::is_constant<std::remove_cvref_t<T>>::value;

/// Satisfied by `c<V>` holding an integer.
template <class T>
concept integral_constant_like = constant<T> && std::integral<typename std::remove_cvref_t<T>::value_type>;

// ---- arithmetic on constants stays a constant ----
template <auto A, auto B>
constexpr c<A + B> operator+(c<A>, c<B>) { return {}; }
template <auto A, auto B>
constexpr c<A - B> operator-(c<A>, c<B>) { return {}; }
template <auto A, auto B>
constexpr c<A * B> operator*(c<A>, c<B>) { return {}; }
template <auto A, auto B>
  requires(B != 0)
constexpr c<A / B> operator/(c<A>, c<B>) { return {}; }
template <auto A, auto B>
  requires(B != 0)
constexpr c<A % B> operator%(c<A>, c<B>) { return {}; }
template <auto A, auto B>
constexpr c<(A == B)> operator==(c<A>, c<B>) { return {}; }

/// True when `n` is the dynamic sentinel.
constexpr bool is_dynamic(std::size_t n) noexcept { return n == dynamic; }

}  // namespace weft
