#pragma once
// ---- memory spaces: where a tensor's elements live ----
// A tensor's type says whether its pointer is host or device memory, so that reading device
// memory on the host is a compile error rather than a crash. The check is made per
// compilation pass: g++ and nvcc's host pass see host code, nvcc's device pass device code.
#include "weft/config.hpp"  // WEFT_HOST_DEVICE

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
// Whether the code being compiled now may touch memory of space S: device code in nvcc's
// device pass, host code otherwise. nvcc instantiates a template used only from kernels in
// its device pass alone, so a kernel's device tensor does not trip the host check.
template <memory_space S>
WEFT_HOST_DEVICE constexpr bool accessible_here() noexcept {
#if defined(__CUDA_ARCH__)
  return S::device_accessible;
#else
  return S::host_accessible;
#endif
}
}  // namespace detail

}  // namespace weft
