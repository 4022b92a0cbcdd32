#pragma once
// ---- ops over typed views: what each op takes, checked at compile time ----
// An op is called with views, `tensor<T, Layout, Space>` (tensor/tensor.hpp): the element type,
// the layout and the memory space of every operand are in its type. Each op's tag declares the
// operands it takes, in order, as its `signature`:
//     struct gelu_forward_op<N> { using signature = ops::signature<args::out<N>, args::in<N>>; };
// and the call
//     ops::gelu_forward<N>(ctx, view<rows, C>(f, out), view<rows, C>(f, in));
// is checked against it before any body is chosen (ops/op.hpp):
//   * a view lives in the context's memory space (a host view under a CUDA context is a compile
//     error, and the reverse);
//   * its extents are the op's (a rank-1 operand takes any view of that many elements: an
//     element-wise op does not care how its operand is shaped);
//   * it is dense and row-major, as the op's body reads it (a strided or transposed view is a
//     compile error that says to copy it first);
//   * a written operand is not a view of const elements;
//   * `ops::none` stands for an absent optional operand (a layer without a bias).
// The body then runs on the views' pointers: raw pointers and sizes remain only at that boundary,
// the loop nest of a host body or a kernel's launch. An op whose layout changes the computation
// (the matrix product, ops/matmul.hpp and ops/gemm.hpp) takes the views themselves instead, and
// its body picks transposes and leading dimensions from the layouts; it declares no signature.
#include "weft/core/layout.hpp"    // layout, mode
#include "weft/exec/context.hpp"   // context_space_t
#include "weft/tensor/tensor.hpp"  // tensor, tensor_like

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft {

namespace detail {
template <std::size_t K, std::size_t... E>
constexpr std::size_t extent_suffix_product() {
  constexpr std::size_t e[] = {E...};
  std::size_t p = 1;
  for (std::size_t i = K + 1; i < sizeof...(E); ++i) p *= e[i];
  return p;
}
template <class Seq, std::size_t... E>
struct packed_layout_impl;
template <std::size_t... K, std::size_t... E>
struct packed_layout_impl<std::index_sequence<K...>, E...> {
  using type = layout<mode<E, extent_suffix_product<K, E...>()>...>;
};
}  // namespace detail

/// The dense row-major layout of extents E... (the last mode contiguous), without names.
template <std::size_t... E>
using packed_layout = typename detail::packed_layout_impl<std::make_index_sequence<sizeof...(E)>, E...>::type;

/// A dense row-major view of extents E... at `p`, in memory of `Space`.
template <class Space, std::size_t... E, class P>
WEFT_HOST_DEVICE constexpr tensor<P, packed_layout<E...>, Space> packed_view(P* p) noexcept {
  return tensor<P, packed_layout<E...>, Space>{p};
}

/// The transpose of a 2-D view: the same memory with its two modes swapped (a row-major (m, n)
/// view becomes a column-major (n, m) one). Names are dropped.
template <class T, class M, class Space>
WEFT_HOST_DEVICE constexpr auto transpose(tensor<T, M, Space> v) noexcept {
  using L = typename decltype(v.unnamed())::mapping_type;
  static_assert(L::rank == 2, "weft::transpose: the view is not 2-D. Transpose a (rows, cols) view.");
  return tensor<T, layout<typename L::template mode_at<1>, typename L::template mode_at<0>>, Space>{v.data()};
}

/// A dense 1-D view of `n` elements, `n` known at run time, in memory of `Space`: the executors'
/// arena ranges (a gradient shard, a run of replicated parameters) handed to the flat ops. The
/// space is in the type, as in a tensor's.
template <class T, class Space>
class flat_view {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using space_type = Space;

  constexpr flat_view() noexcept = default;
  WEFT_HOST_DEVICE constexpr flat_view(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /// A view of non-const elements converts to a view of const ones.
  template <class U>
    requires(!std::is_same_v<U, T> && std::is_convertible_v<U (*)[], T (*)[]>)
  WEFT_HOST_DEVICE constexpr flat_view(const flat_view<U, Space>& o) noexcept  // NOLINT(implicit)
      : data_(o.data()), size_(o.size()) {}

  WEFT_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  WEFT_HOST_DEVICE constexpr std::size_t size() const noexcept { return size_; }
  /// Elements [offset, offset + count) (the caller keeps them inside this view).
  WEFT_HOST_DEVICE constexpr flat_view part(std::size_t offset, std::size_t count) const noexcept {
    return {data_ + offset, count};
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// `n` elements at `p` in the memory of context `ctx`'s ops.
template <execution_context Ctx, class T>
constexpr flat_view<T, context_space_t<Ctx>> flat(const Ctx&, T* p, std::size_t n) noexcept {
  return {p, n};
}
/// A contiguous range (std::span, std::vector) of the context's memory.
template <execution_context Ctx, class R>
  requires requires(R& r) {
    r.data();
    r.size();
  }
constexpr auto flat(const Ctx& ctx, R&& r) noexcept {
  return flat(ctx, r.data(), static_cast<std::size_t>(r.size()));
}

namespace ops {

/// An absent optional operand (a layer without a bias): the body sees a null pointer.
struct none_t {
  explicit constexpr none_t(int) {}
};
inline constexpr none_t none{0};

/// The operands an op takes, in order (see the top of this file).
template <class... Args>
struct signature {
  static constexpr std::size_t size = sizeof...(Args);
};

namespace args {
/// A view the op reads, of these extents.
template <std::size_t... E>
struct in {
  static constexpr bool view = true, written = false, optional = false;
};
/// A view the op writes (or reads and writes), of these extents.
template <std::size_t... E>
struct out {
  static constexpr bool view = true, written = true, optional = false;
};
/// As in, or ops::none.
template <std::size_t... E>
struct in_opt {
  static constexpr bool view = true, written = false, optional = true;
};
/// As out, or ops::none.
template <std::size_t... E>
struct out_opt {
  static constexpr bool view = true, written = true, optional = true;
};
/// A value passed as it is (a scalar, an offset).
struct value {
  static constexpr bool view = false, written = false, optional = false;
};
}  // namespace args

namespace detail {

template <class Spec>
struct spec_extents;
template <template <std::size_t...> class S, std::size_t... E>
struct spec_extents<S<E...>> {
  static constexpr std::size_t rank = sizeof...(E);
  static constexpr std::size_t size = (std::size_t{1} * ... * E);
  static constexpr std::size_t at(std::size_t r) {
    constexpr std::size_t e[] = {E..., 0};
    return e[r];
  }
};

template <class Op>
concept has_signature = requires { Op::signature::size; };

template <std::size_t I, class Sig>
struct spec_at;
template <std::size_t I, class A, class... Rest>
struct spec_at<I, signature<A, Rest...>> : spec_at<I - 1, signature<Rest...>> {};
template <class A, class... Rest>
struct spec_at<0, signature<A, Rest...>> {
  using type = A;
};
template <std::size_t I>
struct spec_at<I, signature<>> {
  using type = void;  // past the declared operands
};

template <class V>
inline constexpr bool is_view_v = tensor_like<V>;
template <class V>
inline constexpr bool is_none_v = std::is_same_v<std::remove_cvref_t<V>, none_t>;

/// Dense and row-major: the last mode contiguous and each earlier one a whole row of the next
/// apart (modes of extent 1 may have any stride).
template <class M>
constexpr bool dense_row_major() {
  std::size_t expect = 1;
  for (std::size_t r = M::rank; r-- > 0;) {
    if (M::extent(r) != 1 && M::stride(r) != expect) return false;
    expect *= M::extent(r);
  }
  return true;
}

template <class Spec, class V>
constexpr bool extents_match() {
  using M = typename std::remove_cvref_t<V>::mapping_type;
  using E = spec_extents<Spec>;
  if constexpr (E::rank == 1) {
    return M::size == E::size;
  } else {
    if (M::rank != E::rank) return false;
    for (std::size_t r = 0; r < E::rank; ++r)
      if (M::extent(r) != E::at(r)) return false;
    return true;
  }
}

/// Checks the I-th argument against the op's I-th declared operand; false stops the call.
template <class Sig, class Space, std::size_t I, class A>
constexpr bool operand_ok() {
  using Spec = typename spec_at<I, Sig>::type;
  if constexpr (std::is_void_v<Spec>) {
    constexpr bool declared = !is_view_v<A> && !is_none_v<A>;
    static_assert(declared, "weft::ops: a view or ops::none was passed past the operands the op declares. Check the "
                            "argument count against the op's signature.");
    return declared;
  } else if constexpr (is_none_v<A>) {
    static_assert(Spec::optional, "weft::ops: ops::none passed for an operand the op needs. Pass a view there.");
    return Spec::optional;
  } else if constexpr (is_view_v<A>) {
    using V = std::remove_cvref_t<A>;
    constexpr bool is_operand = Spec::view;
    static_assert(is_operand, "weft::ops: a view was passed where the op takes a value (see its signature).");
    constexpr bool same_space = std::is_same_v<typename V::space_type, Space>;
    static_assert(same_space, "weft::ops: a view lives in another memory space than the execution context's (a host "
                              "view under a device context, or the reverse). Pass views of the context's memory.");
    constexpr bool writable = !Spec::written || !std::is_const_v<typename V::element_type>;
    static_assert(writable, "weft::ops: the op writes this operand, but the view's elements are const. Pass a view of "
                            "non-const elements.");
    constexpr bool dense = dense_row_major<typename V::mapping_type>();
    static_assert(dense, "weft::ops: this op reads its operands dense and row-major, and the view is strided or "
                         "transposed. Copy it into a dense view first.");
    constexpr bool shaped = extents_match<Spec, V>();
    static_assert(shaped, "weft::ops: a view's extents differ from the op's operand (see the op's signature). Pass a "
                          "view of the op's shape.");
    return is_operand && same_space && writable && dense && shaped;
  } else {
    return true;  // a value, or a pointer (the launch-boundary form)
  }
}

template <class Op, class Ctx, class... A, std::size_t... I>
constexpr bool operands_ok(std::index_sequence<I...>) {
  return (operand_ok<typename Op::signature, context_space_t<Ctx>, I, A>() && ...);
}

/// The argument a body takes for a checked one: a view's pointer, null for ops::none.
template <class A>
constexpr decltype(auto) lower(A&& a) noexcept {
  if constexpr (is_view_v<A>) {
    return a.data();
  } else if constexpr (is_none_v<A>) {
    return nullptr;
  } else {
    return std::forward<A>(a);
  }
}

}  // namespace detail

// ---- flat ops: element-wise over n elements, n after the leading operands ----
// zero(x, n), copy(dst, src, n), accumulate(y, x, n[, alpha]), cast(dst, src, n), fill(x, n, v),
// scale(x, n, f), clip(g, n, norm, max), sum_squares(x, n), mean_loss(l, n), adamw_step(..., n, ...)
// also take views: `ops::zero(ctx, view<rows, C>(f, g))`. The leading views must be dense, in the
// context's memory and of one size; the body gets their pointers and that size.

/// Marks an op tag as flat (see above): `static constexpr bool flat = true;`.
template <class Op>
concept flat_op = requires { requires Op::flat; };

namespace detail {

template <class V>
struct is_flat_view : std::false_type {};
template <class T, class S>
struct is_flat_view<flat_view<T, S>> : std::true_type {};
template <class V>
inline constexpr bool is_flat_view_v = is_flat_view<std::remove_cvref_t<V>>::value;
/// A flat op's leading operand: a tensor view or a flat_view.
template <class V>
inline constexpr bool is_flat_operand_v = is_view_v<V> || is_flat_view_v<V>;

template <class... A>
constexpr std::size_t leading_views() {
  std::size_t k = 0;
  bool on = true;
  ((on = on && is_flat_operand_v<A>, k += on ? 1 : 0), ...);
  return k;
}

template <class V>
constexpr bool flat_dense() {
  if constexpr (is_flat_view_v<V>) {
    return true;
  } else {
    return dense_row_major<typename std::remove_cvref_t<V>::mapping_type>();
  }
}
/// The compile-time size of a tensor view; 0 for a flat_view (known at run time).
template <class V>
constexpr std::size_t static_size() {
  if constexpr (is_flat_view_v<V>) {
    return 0;
  } else {
    return std::remove_cvref_t<V>::size;
  }
}

template <class Space, std::size_t K, class... A, std::size_t... I>
constexpr bool flat_operands_ok(std::index_sequence<I...>) {
  using tuple = std::tuple<A...>;
  constexpr bool same_space =
      (std::is_same_v<typename std::remove_cvref_t<std::tuple_element_t<I, tuple>>::space_type, Space> && ...);
  static_assert(same_space, "weft::ops: a view lives in another memory space than the execution context's (a host "
                            "view under a device context, or the reverse). Pass views of the context's memory.");
  constexpr bool dense = (flat_dense<std::tuple_element_t<I, tuple>>() && ...);
  static_assert(dense, "weft::ops: an element-wise op reads its views dense, and one is strided or transposed. Copy "
                       "it into a dense view first.");
  constexpr std::size_t sizes[] = {static_size<std::tuple_element_t<I, tuple>>()...};
  constexpr bool same_size = [&] {
    std::size_t known = 0;
    for (std::size_t s : sizes)
      if (s != 0) {
        if (known != 0 && s != known) return false;
        known = s;
      }
    return true;
  }();
  static_assert(same_size, "weft::ops: the views of an element-wise op hold different numbers of elements. Pass views "
                           "of one size.");
  return same_space && dense && same_size;
}

template <class V>
constexpr std::size_t size_of(const V& v) noexcept {
  if constexpr (is_flat_view_v<V>) {
    return v.size();
  } else {
    return V::size;
  }
}

/// The common size of a flat op's leading operands; a flat_view whose run-time size differs from
/// the others' is a logic error (thrown: an executor's ranges disagree).
template <class... V>
std::size_t flat_size(const V&... v) {
  const std::size_t s[] = {size_of(v)...};
  for (std::size_t x : s)
    if (x != s[0])
      throw std::logic_error("weft::ops: the ranges given to an element-wise op hold different numbers of elements");
  return s[0];
}

}  // namespace detail

/// Whether any argument is a view or ops::none (the call goes through the op's signature).
template <class... A>
inline constexpr bool any_view_v = ((detail::is_view_v<A> || detail::is_none_v<A>) || ...);

}  // namespace ops
}  // namespace weft
