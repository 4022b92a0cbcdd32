#pragma once
// ---- how an op is called and how a backend supplies its body ----
// An op is an inline constexpr function object, `ops::gelu_forward<N>`, called with the
// execution context first:  ops::gelu_forward<N>(ctx, out, inp).
// It forwards to the unqualified hook
//     op_impl(Op{}, ctx, args...)
// where Op is the op's tag type (ops::gelu_forward_op<N>, carrying the compile-time sizes).
// The call is dependent, so argument-dependent lookup runs where the layer is instantiated and
// sees every op_impl declared by then in the namespaces of the tag (weft::ops) and of the
// context: the host bodies (ops/<op>.hpp, taking `const host_context&`) and, later, a backend's
// (backend/cuda/ops/<op>.cuh, taking `const cuda_context&`), whatever the include order
// relative to model/. A plain qualified call `ops::f(ctx, ...)` would not do: inside a template
// a qualified name sees only the overloads declared before the template's definition, so a
// backend included after model/ would never be found.
#include "weft/exec/context.hpp"  // execution_context
#include "weft/ops/views.hpp"      // signature, none, operand checks

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace weft::ops {

/// Whether an op body for tag `Op` accepts this context and these arguments.
template <class Op, class Ctx, class... Args>
concept op_implemented = requires(const Op& op, const Ctx& ctx, Args&&... args) {
  op_impl(op, ctx, std::forward<Args>(args)...);
};

/// The function object of the op whose tag is `Op` (see the top of this file).
template <class Op>
struct op_fn {
  template <execution_context Ctx, class... Args>
  decltype(auto) operator()(const Ctx& ctx, Args&&... args) const {
    if constexpr (op_implemented<Op, Ctx, Args...>) {
      // A body that takes these arguments as they are: views for an op whose layouts choose the
      // computation (gemm, matmul), pointers at the launch boundary.
      return op_impl(Op{}, ctx, std::forward<Args>(args)...);
    } else if constexpr (flat_op<Op> && detail::leading_views<Args...>() > 0) {
      // Element-wise over the leading views: their pointers, then their common size.
      constexpr std::size_t k = detail::leading_views<Args...>();
      constexpr bool checked = detail::flat_operands_ok<context_space_t<Ctx>, k, Args...>(std::make_index_sequence<k>{});
      if constexpr (checked) {
        auto all = std::forward_as_tuple(std::forward<Args>(args)...);
        const std::size_t n = std::apply([](const auto&... a) { return detail::flat_size(a...); },
                                         leading(all, std::make_index_sequence<k>{}));
        return call_flat<k>(ctx, n, std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Args) - k>{},
                            std::move(all));
      }
    } else if constexpr (any_view_v<Args...> && detail::has_signature<Op>) {
      // Views checked against the op's declared operands (ops/views.hpp), then the body runs on
      // their pointers.
      constexpr bool checked = detail::operands_ok<Op, Ctx, Args...>(std::index_sequence_for<Args...>{});
      if constexpr (checked) {
        static_assert(op_implemented<Op, Ctx, decltype(detail::lower(std::forward<Args>(args)))...>,
                      "weft::ops: no body of this op takes this execution context and these element types. Check "
                      "the views' element types, and include the backend's op headers for a non-host context.");
        return op_impl(Op{}, ctx, detail::lower(std::forward<Args>(args))...);
      }
    } else {
      static_assert(op_implemented<Op, Ctx, Args...>,
                    "weft::ops: no body of this op takes this execution context and these arguments. Check the "
                    "argument types, and include the backend's op headers for a non-host context.");
    }
  }

 private:
  template <class Tuple, std::size_t... V>
  static auto leading(const Tuple& t, std::index_sequence<V...>) {
    return std::tie(std::get<V>(t)...);
  }
  template <std::size_t K, class Ctx, std::size_t... V, std::size_t... R, class Tuple>
  static decltype(auto) call_flat(const Ctx& ctx, std::size_t n, std::index_sequence<V...>, std::index_sequence<R...>,
                                  Tuple&& t) {
    return op_impl(Op{}, ctx, std::get<V>(t).data()..., n, std::get<K + R>(std::forward<Tuple>(t))...);
  }
};

}  // namespace weft::ops
