#pragma once
// ---- arena: one aligned host allocation holding every buffer of an arena layout ----
// Allocated once, zero-filled, freed once; views of its buffers sit at compile-time
// offsets (arena_layout), so `a.get<"wte">()` is a pointer addition.
#include "weft/core/fixed_string.hpp"    // fixed_string
#include "weft/tensor/arena_layout.hpp"  // arena_layout_like, basic_arena_layout

#include <cstddef>
#include <cstring>
#include <new>
#include <utility>

namespace weft {

/// Owns `Layout::bytes` bytes of host memory aligned to `Layout::alignment`. Move-only; a
/// moved-from arena holds no memory (data() is null).
template <arena_layout_like Layout>
class arena {
 public:
  using layout_type = Layout;
  /// Size of the allocation.
  static constexpr std::size_t bytes = Layout::bytes;
  /// Alignment of the allocation and of every buffer in it.
  static constexpr std::size_t alignment = Layout::alignment;

  /// Allocates and zero-fills (zero bits are 0 in f64, f32, bf16, f16 and the integers).
  arena() : data_(allocate()) {}
  ~arena() { release(); }

  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;
  arena(arena&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  arena& operator=(arena&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }

  /// Byte offset of the buffer called `Name`.
  template <fixed_string Name>
  static constexpr std::size_t offset_of = Layout::template offset_of<Name>;

  /// The view of the buffer called `Name`.
  template <fixed_string Name>
  auto get() noexcept {
    return Layout::template view<Name>(data_);
  }
  /// The const view of the buffer called `Name`.
  template <fixed_string Name>
  auto get() const noexcept {
    return Layout::template view<Name>(static_cast<const std::byte*>(data_));
  }

 private:
  std::byte* data_ = nullptr;

  static std::byte* allocate() {
    if constexpr (bytes == 0) {
      return nullptr;
    } else {
      void* p = ::operator new(bytes, std::align_val_t{alignment});
      std::memset(p, 0, bytes);
      return static_cast<std::byte*>(p);
    }
  }
  void release() noexcept {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t{alignment});
    data_ = nullptr;
  }
};

}  // namespace weft
