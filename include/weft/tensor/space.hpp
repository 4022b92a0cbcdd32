#pragma once
// ---- memory spaces: where a tensor's elements live ----
// A tensor's type says whether its pointer is host or device memory, so that reading device
// memory on the host is a compile error rather than a crash: element access to host memory
// is a host function, to device memory a device function (and, under plain g++, an error).
#include <concepts>
#include <string_view>
#include <type_traits>

namespace weft {

/// Ordinary host memory (std allocation, an arena, pinned host memory).
struct host_space {
  static constexpr std::string_view name = "host";
  static constexpr bool host_accessible = true;
  static constexpr bool device_accessible = false;
};

/// Memory of the accelerator (cudaMalloc); elements are read inside kernels only.
struct device_space {
  static constexpr std::string_view name = "device";
  static constexpr bool host_accessible = false;
  static constexpr bool device_accessible = true;
};

/// Satisfied by a memory space tag: says from where its memory may be read.
template <class S>
concept memory_space = requires {
  { S::name } -> std::convertible_to<std::string_view>;
  { S::host_accessible } -> std::convertible_to<bool>;
  { S::device_accessible } -> std::convertible_to<bool>;
};

/// Satisfied by spaces whose elements host code may read and write.
template <class S>
concept host_accessible_space = memory_space<S> && S::host_accessible;

/// Satisfied by spaces whose elements device code may read and write.
template <class S>
concept device_accessible_space = memory_space<S> && S::device_accessible;

namespace detail {
#if defined(__CUDACC__)
inline constexpr bool compiled_by_nvcc = true;
#else
inline constexpr bool compiled_by_nvcc = false;
#endif
// Whether this translation unit compiles device code at all: device memory is read in device
// code only. A template on S so that it is checked where a tensor is used, not here.
template <memory_space S>
inline constexpr bool device_code_compiled = compiled_by_nvcc;
}  // namespace detail

}  // namespace weft
