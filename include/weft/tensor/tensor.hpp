#pragma once
// ---- tensor: a non-owning view of typed memory through a compile-time mapping ----
// tensor<T, Mapping, Space> is a pointer and nothing else: the mapping (a policy's
// mapping over a named shape, or a bare layout) is an empty type known at compile time,
// and the space (host or device) says where the pointer may be dereferenced.
//
//   float buf[4 * 8];
//   tensor<float, row_major::mapping<shape<axis<"rows", 4>, axis<"cols", 8>>>> t{buf};  // (rows, cols)
//   t(1, 2) = 3.f;                        // buf[10]
//   t(at<"cols">(2), at<"rows">(1));      // the same element
//   auto row = t.slice(1);                // (cols): buf + 8
//   auto blk = t.tile<shape<axis<"cols", 4>>>(1);   // (rows, cols/2): columns 4..7
#include "weft/config.hpp"                // WEFT_HOST_DEVICE
#include "weft/core/fixed_string.hpp"     // fixed_string
#include "weft/core/layout.hpp"           // layout, layout_like
#include "weft/core/layout_policy.hpp"    // named_layout, named_mapping, layout_mapping, layout_policy, divide, at
#include "weft/core/shape.hpp"            // shape, static_shape
#include "weft/tensor/space.hpp"          // host_space, device_space, memory_space

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace weft {

namespace detail {

template <class Acc, class... Fragments>
struct concat_layouts {
  using type = Acc;
};
template <class... A, class... B, class... Rest>
struct concat_layouts<layout<A...>, layout<B...>, Rest...> : concat_layouts<layout<A..., B...>, Rest...> {};

// The layout without its K-th mode.
template <class L, std::size_t K, class Seq = std::make_index_sequence<L::rank>>
struct drop_mode;
template <class... M, std::size_t K, std::size_t... I>
struct drop_mode<layout<M...>, K, std::index_sequence<I...>> {
  using type = typename concat_layouts<layout<>, std::conditional_t<I == K, layout<>, layout<M>>...>::type;
};

// The tile shape `TileShape` spelled out over every axis of `Shape`: axes it does not name
// keep their full size (a tile view keeps them whole).
template <class Shape, class TileShape, class Seq = std::make_index_sequence<Shape::rank>>
struct whole_axes;
template <class Shape, class TileShape, std::size_t... K>
struct whole_axes<Shape, TileShape, std::index_sequence<K...>> {
  template <std::size_t Kk>
  using axis_k = typename Shape::template axis_at<Kk>;
  template <std::size_t Kk>
  static constexpr std::size_t size_k() {
    if constexpr (TileShape::template contains<axis_k<Kk>::name>) {
      return TileShape::template size_of<axis_k<Kk>::name>;
    } else {
      return axis_k<Kk>::size;
    }
  }
  using type = shape<axis<axis_k<K>::name, size_k<K>()>...>;
};

}  // namespace detail

/// A view of `T` elements at a pointer, placed by `Mapping`, in memory of `Space`.
/// Copying a tensor copies the pointer; the memory belongs to someone else (an arena, a
/// std::vector, cudaMalloc).
template <class T, layout_mapping Mapping, memory_space Space = host_space>
class tensor {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using mapping_type = Mapping;
  using space_type = Space;
  using pointer = T*;
  using reference = T&;

  /// Number of coordinates of an element (axes).
  static constexpr std::size_t rank = Mapping::rank;
  /// Number of elements.
  static constexpr std::size_t size = Mapping::size;
  /// Number of elements the memory must hold (1 + the largest offset).
  static constexpr std::size_t cosize = Mapping::cosize;
  /// Bytes the memory must hold.
  static constexpr std::size_t bytes = cosize * sizeof(T);

  constexpr tensor() noexcept = default;
  WEFT_HOST_DEVICE constexpr explicit tensor(T* data) noexcept : data_(data) {}
  WEFT_HOST_DEVICE constexpr tensor(T* data, Mapping) noexcept : data_(data) {}

  /// A view of non-const elements converts to a view of const ones.
  template <class U>
    requires(!std::is_same_v<U, T> && std::is_convertible_v<U (*)[], T (*)[]>)
  WEFT_HOST_DEVICE constexpr tensor(const tensor<U, Mapping, Space>& other) noexcept  // NOLINT(implicit)
      : data_(other.data()) {}

  WEFT_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  WEFT_HOST_DEVICE static constexpr Mapping mapping() noexcept { return {}; }
  /// Size of axis r.
  WEFT_HOST_DEVICE static constexpr std::size_t extent(std::size_t r) noexcept { return Mapping::extent(r); }
  /// Offset step of axis r, in elements.
  WEFT_HOST_DEVICE static constexpr std::size_t stride(std::size_t r) noexcept { return Mapping::stride(r); }

  /// Size of the axis called `Name` (named mappings only).
  template <fixed_string Name>
    requires named_mapping<Mapping>
  static constexpr std::size_t size_of = Mapping::shape_type::template size_of<Name>;

  // ---- element access ----
  // Host memory is read by host code, device memory by device code: two overloads with the
  // matching execution space, so nvcc rejects the other use, and plain g++ (which compiles
  // no device code) rejects any element access to device memory with the message below.

  /// The element at (i0, i1, ...), one index per axis.
  template <std::integral... I>
    requires(sizeof...(I) == rank && host_accessible_space<Space>)
  constexpr reference operator()(I... i) const noexcept {
    return data_[Mapping{}(i...)];
  }

  /// The element at named coordinates, in any order: `t(at<"cols">(2), at<"rows">(1))`.
  template <named_coordinate... Idx>
    requires(named_mapping<Mapping> && rank > 0 && sizeof...(Idx) == rank && host_accessible_space<Space>)
  constexpr reference operator()(Idx... i) const noexcept {
    return data_[Mapping{}(i...)];
  }

  /// The element at (i0, i1, ...) of device memory, in device code.
  template <std::integral... I>
    requires(sizeof...(I) == rank && !host_accessible_space<Space>)
  WEFT_DEVICE constexpr reference operator()(I... i) const noexcept {
    check_device_compiler();
    return data_[Mapping{}(i...)];
  }

  /// The element at named coordinates of device memory, in device code.
  template <named_coordinate... Idx>
    requires(named_mapping<Mapping> && rank > 0 && sizeof...(Idx) == rank && !host_accessible_space<Space>)
  WEFT_DEVICE constexpr reference operator()(Idx... i) const noexcept {
    check_device_compiler();
    return data_[Mapping{}(i...)];
  }

  // ---- views of parts ----

  /// The sub-tensor at index `i` of the first axis (rank - 1 axes; same memory).
  template <std::integral I>
    requires(rank > 0)
  WEFT_HOST_DEVICE constexpr auto slice(I i) const noexcept {
    return slice_at<0>(static_cast<std::size_t>(i));
  }

  /// The sub-tensor at index `i` of the axis called `Name`.
  template <fixed_string Name, std::integral I>
    requires named_mapping<Mapping>
  WEFT_HOST_DEVICE constexpr auto slice(I i) const noexcept {
    return slice_at<Mapping::shape_type::template index_of<Name>()>(static_cast<std::size_t>(i));
  }

  /// The tile at tile coordinates `g` (one per axis of `TileShape`, in its order) when the
  /// tensor is cut into tiles of `TileShape`; axes `TileShape` does not name are kept whole.
  /// `t.tile<shape<axis<"rows", 16>>>(2)` is rows 32..47 of a (rows, cols) tensor.
  template <static_shape TileShape, std::integral... G>
    requires(named_mapping<Mapping> && sizeof...(G) == TileShape::rank)
  WEFT_HOST_DEVICE constexpr auto tile(G... g) const noexcept {
    // An unknown name is reported by weft::shape itself.
    static_assert(detail::tile_names_known_v<typename Mapping::shape_type, TileShape>);
    using tiles = divide<Mapping, typename detail::whole_axes<typename Mapping::shape_type, TileShape>::type>;
    using view = tensor<T, typename tiles::tile_mapping, Space>;
    return view{data_ + tile_offset<tiles, TileShape>(std::make_index_sequence<rank>{},
                                                      std::make_index_sequence<TileShape::rank>{},
                                                      static_cast<std::size_t>(g)...)};
  }

  /// The same view with the bare layout as its mapping: no axis names, only integers in
  /// the type, which nvcc can pass to a `__global__` function (it cannot pass class-type
  /// template arguments such as names). Rewrap it inside the kernel:
  /// `tensor<T, Mapping, Space>{u.data()}`.
  WEFT_HOST_DEVICE constexpr auto unnamed() const noexcept {
    if constexpr (named_mapping<Mapping>) {
      return tensor<T, typename Mapping::layout_type, Space>{data_};
    } else {
      return *this;
    }
  }

  /// The same view with const elements.
  WEFT_HOST_DEVICE constexpr tensor<const T, Mapping, Space> as_const() const noexcept { return *this; }

 private:
  T* data_ = nullptr;

  WEFT_HOST_DEVICE static constexpr void check_device_compiler() noexcept {
    constexpr bool compiled_for_a_device = detail::device_code_compiled<Space>;
    static_assert(compiled_for_a_device,
                  "weft::tensor: element access to device memory in host code. Read device tensors inside kernels "
                  "(compiled by nvcc), or copy them to a host tensor first.");
  }

  template <std::size_t K>
  WEFT_HOST_DEVICE constexpr auto slice_at(std::size_t i) const noexcept {
    if constexpr (named_mapping<Mapping>) {
      using shape_t = typename Mapping::shape_type;
      using layout_t = typename Mapping::layout_type;
      using rest = named_layout<typename shape_t::template drop<shape_t::template axis_at<K>::name>,
                                typename detail::drop_mode<layout_t, K>::type>;
      return tensor<T, rest, Space>{data_ + typename layout_t::template mode_at<K>{}(i)};
    } else {
      using rest = typename detail::drop_mode<Mapping, K>::type;
      return tensor<T, rest, Space>{data_ + typename Mapping::template mode_at<K>{}(i)};
    }
  }

  // Offset of the tile's first element: axis k's grid coordinate is the g named like it
  // (0 for an axis the tile shape does not name: it is kept whole).
  template <class Tiles, class TileShape, std::size_t... K, std::size_t... J, class... G>
  WEFT_HOST_DEVICE static constexpr std::size_t tile_offset(std::index_sequence<K...>, std::index_sequence<J...>,
                                                            G... g) noexcept {
    using shape_t = typename Mapping::shape_type;
    return typename Tiles::grid_mapping{}(
        detail::pick<shape_t::template axis_at<K>::name>(named_index<TileShape::template axis_at<J>::name>{g}...)...);
  }
};

/// Satisfied by `tensor<T, Mapping, Space>` and by views with the same interface.
template <class V>
concept tensor_like = requires(const std::remove_cvref_t<V>& v) {
  typename std::remove_cvref_t<V>::element_type;
  typename std::remove_cvref_t<V>::space_type;
  requires layout_mapping<typename std::remove_cvref_t<V>::mapping_type>;
  requires memory_space<typename std::remove_cvref_t<V>::space_type>;
  { std::remove_cvref_t<V>::rank } -> std::convertible_to<std::size_t>;
  { v.data() } -> std::convertible_to<const typename std::remove_cvref_t<V>::element_type*>;
};

/// A tensor of `T` laid out by `Policy` over `Shape`.
template <class T, static_shape Shape, layout_policy Policy = row_major, memory_space Space = host_space>
using tensor_of = tensor<T, typename Policy::template mapping<Shape>, Space>;

/// `tensor_of<T, Shape, Policy, Space>{data}`: `make_tensor<shape<...>>(ptr)`.
template <static_shape Shape, layout_policy Policy = row_major, memory_space Space = host_space, class T>
WEFT_HOST_DEVICE constexpr tensor_of<T, Shape, Policy, Space> make_tensor(T* data) noexcept {
  return tensor_of<T, Shape, Policy, Space>{data};
}

template <class T, layout_mapping M>
tensor(T*, M) -> tensor<T, M, host_space>;

}  // namespace weft
