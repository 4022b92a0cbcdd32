#pragma once
// ---- diagnostics: named conditions the compiler prints with their values ----
// House rule: every static_assert names its sub-condition as a constexpr bool (often a
// variable template carrying the offending numbers), so that g++/nvcc print e.g.
//   note: 'weft::diag::divisible<1000, 3>' evaluates to false
// next to the message "weft::<entity>: <what is wrong>. <how to fix>."
#include "weft/core/fixed_string.hpp"  // fixed_string

#include <cstddef>

namespace weft::diag {

/// `A % B == 0`, printed with both numbers when it fails.
template <std::size_t A, std::size_t B>
inline constexpr bool divisible = (B != 0) && (A % B == 0);

/// `A <= B`, printed with both numbers when it fails.
template <std::size_t A, std::size_t B>
inline constexpr bool at_most = (A <= B);

/// `A == B`, printed with both numbers when it fails.
template <std::size_t A, std::size_t B>
inline constexpr bool equal = (A == B);

/// `A >= B`, printed with both numbers when it fails.
template <std::size_t A, std::size_t B>
inline constexpr bool at_least = (A >= B);

/// A name (axis, parameter, mesh axis) and whether a look-up found it.
template <fixed_string Name, bool Found>
inline constexpr bool name_found = Found;

/// A name and whether it occurs once only.
template <fixed_string Name, bool Unique>
inline constexpr bool name_unique = Unique;

}  // namespace weft::diag
