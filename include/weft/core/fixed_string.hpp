#pragma once
// ---- fixed_string: a string usable as a template argument ----
// Names of axes, parameters and mesh dimensions are template arguments
// (`axis<"seq", 1024>`), so they need a structural literal type.
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace weft {

/// A string literal as a structural value: `template <fixed_string Name>`.
template <std::size_t N>
struct fixed_string {
  char data[N]{};  // includes the terminating '\0'

  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&s)[N]) noexcept { std::copy_n(s, N, data); }  // NOLINT(implicit)

  /// Number of characters, without the terminator.
  static constexpr std::size_t size() noexcept { return N - 1; }
  constexpr std::string_view view() const noexcept { return {data, N - 1}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT(implicit)
  constexpr const char* c_str() const noexcept { return data; }

  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& o) const noexcept {
    return view() == o.view();
  }
  constexpr bool operator==(std::string_view o) const noexcept { return view() == o; }

  /// Concatenation: `fixed_string("h.") + fixed_string("0")`.
  template <std::size_t M>
  constexpr fixed_string<N + M - 1> operator+(const fixed_string<M>& o) const noexcept {
    fixed_string<N + M - 1> r;
    std::copy_n(data, N - 1, r.data);
    std::copy_n(o.data, M, r.data + N - 1);
    return r;
  }
};

template <std::size_t N>
fixed_string(const char (&)[N]) -> fixed_string<N>;

}  // namespace weft
