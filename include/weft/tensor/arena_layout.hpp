#pragma once
// ---- arena layouts: named buffers at compile-time offsets ----
// An arena layout is a list of named, typed, shaped buffers; the offset of each is computed
// at compile time (place_blocks), so a view of any buffer is `base + constant`:
//
//   using params = arena_layout<buffer<"wte", f32, shape<axis<"vocab", 50304>, axis<"width", 768>>>,
//                               buffer<"wpe", f32, shape<axis<"ctx", 1024>, axis<"width", 768>>>>;
//   static_assert(params::offset_of<"wpe"> % 64 == 0);
//
// The layout owns nothing: arena<L> allocates it on the host, and the same layout carves
// views out of any base pointer (device memory, a slice of a larger plan).
#include "weft/config.hpp"                // WEFT_HOST_DEVICE
#include "weft/core/diagnostics.hpp"      // diag::name_found
#include "weft/core/fixed_string.hpp"     // fixed_string
#include "weft/core/layout_policy.hpp"    // row_major, layout_policy
#include "weft/core/shape.hpp"            // static_shape, detail::count_name, detail::nth
#include "weft/tensor/placement.hpp"      // place_blocks, block_request, is_power_of_two
#include "weft/tensor/space.hpp"          // host_space, memory_space
#include "weft/tensor/tensor.hpp"         // tensor

#include <array>
#include <cstddef>
#include <type_traits>

namespace weft {

/// Default alignment of every buffer offset: a cache line, and enough for 128-bit vector
/// loads on either side.
inline constexpr std::size_t default_arena_alignment = 64;

/// Satisfied by element types an arena may hold: plain bytes with no constructor to run.
template <class T>
concept arena_element = std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T> &&
                        !std::is_const_v<T> && !std::is_volatile_v<T>;

/// A named buffer of `T` laid out by `Policy` over `Shape`: one entry of an arena layout.
template <fixed_string Name, arena_element T, static_shape Shape, layout_policy Policy = row_major>
struct buffer {
  static constexpr auto name = Name;
  using element_type = T;
  using shape_type = Shape;
  using mapping_type = typename Policy::template mapping<Shape>;
  /// Number of elements.
  static constexpr std::size_t size = mapping_type::size;
  /// Bytes the buffer occupies (the mapping's cosize; padding strides count).
  static constexpr std::size_t bytes = mapping_type::cosize * sizeof(T);
  /// The element type's own alignment.
  static constexpr std::size_t alignment = alignof(T);
  /// The tensor type of a view of this buffer.
  template <memory_space Space = host_space>
  using view_type = tensor<T, mapping_type, Space>;
};

namespace detail {
template <class T>
struct is_buffer : std::false_type {};
template <fixed_string N, class T, class S, class P>
struct is_buffer<buffer<N, T, S, P>> : std::true_type {};

// The alignment, printed with its value when it is not a power of two.
template <std::size_t Alignment>
inline constexpr bool power_of_two = is_power_of_two(Alignment);
}  // namespace detail

/// Satisfied by `buffer<Name, T, Shape, Policy>`.
template <class B>
concept buffer_like = detail::is_buffer<std::remove_cvref_t<B>>::value;

/// Buffers at compile-time offsets, each a multiple of `Alignment` (a power of two), in
/// the order given. Names must be distinct.
template <std::size_t Alignment, buffer_like... Buffers>
struct basic_arena_layout {
  // ---- validation ----
  static constexpr bool alignment_is_power_of_two = detail::power_of_two<Alignment>;
  static_assert(alignment_is_power_of_two,
                "weft::arena_layout: the alignment is not a power of two. Use a power of two such as 64 or 128.");
  static constexpr bool has_unique_names = detail::names_unique<Buffers...>();
  static_assert(has_unique_names,
                "weft::arena_layout: a buffer name occurs twice. Give every buffer of an arena a distinct name "
                "(e.g. \"h0.w\" and \"h1.w\").");

  /// Number of buffers.
  static constexpr std::size_t count = sizeof...(Buffers);
  /// Every offset, and the total size, are multiples of this.
  static constexpr std::size_t alignment = Alignment;

  /// Offsets of the buffers in order, and the total size.
  static constexpr block_placement<count> placement =
      place_blocks<count>({block_request{Buffers::bytes, Buffers::alignment}...}, alignment_is_power_of_two ? Alignment : 1);
  /// Total size in bytes (a multiple of the alignment).
  static constexpr std::size_t bytes = placement.bytes;

  /// Whether a buffer called `Name` exists.
  template <fixed_string Name>
  static constexpr bool contains = (detail::count_name<Buffers...>(Name.view()) == 1);

  /// Position of the buffer called `Name`; a compile error naming `Name` when absent.
  template <fixed_string Name>
  static consteval std::size_t index_of() {
    constexpr bool found = diag::name_found<Name, (detail::count_name<Buffers...>(Name.view()) > 0)>;
    static_assert(found,
                  "weft::arena_layout: no buffer has this name. Use one of the buffer names of the arena layout (see "
                  "the template arguments of weft::basic_arena_layout in this message).");
    std::size_t i = 0, r = 0;  // 0 when absent: the assertion above already reported it
    ((Buffers::name.view() == Name.view() ? (r = i, ++i) : ++i), ...);
    return r;
  }

  /// The I-th buffer type.
  template <std::size_t I>
  using buffer_at = typename detail::nth<I, Buffers...>::type;
  /// The buffer called `Name`.
  template <fixed_string Name>
  using buffer_named = buffer_at<index_of<Name>()>;

  /// Byte offset of the I-th buffer.
  template <std::size_t I>
  static constexpr std::size_t offset_at = placement.offsets[I];
  /// Byte offset of the buffer called `Name`.
  template <fixed_string Name>
  static constexpr std::size_t offset_of = placement.offsets[index_of<Name>()];

  /// The view of buffer `Name` in the memory at `base` (which must be `alignment`-aligned
  /// and hold `bytes` bytes).
  template <fixed_string Name, memory_space Space = host_space>
  WEFT_HOST_DEVICE static auto view(std::byte* base) noexcept {
    using b = buffer_named<Name>;
    return tensor<typename b::element_type, typename b::mapping_type, Space>{
        reinterpret_cast<typename b::element_type*>(base + offset_of<Name>)};
  }
  /// The const view of buffer `Name` in the memory at `base`.
  template <fixed_string Name, memory_space Space = host_space>
  WEFT_HOST_DEVICE static auto view(const std::byte* base) noexcept {
    using b = buffer_named<Name>;
    return tensor<const typename b::element_type, typename b::mapping_type, Space>{
        reinterpret_cast<const typename b::element_type*>(base + offset_of<Name>)};
  }
};

/// Buffers at compile-time offsets, each aligned to `default_arena_alignment` (64 bytes).
template <buffer_like... Buffers>
using arena_layout = basic_arena_layout<default_arena_alignment, Buffers...>;

namespace detail {
template <class T>
struct is_arena_layout : std::false_type {};
template <std::size_t A, class... B>
struct is_arena_layout<basic_arena_layout<A, B...>> : std::true_type {};
}  // namespace detail

/// Satisfied by `basic_arena_layout<Alignment, Buffers...>` (and so `arena_layout<...>`).
template <class L>
concept arena_layout_like = detail::is_arena_layout<std::remove_cvref_t<L>>::value;

}  // namespace weft
