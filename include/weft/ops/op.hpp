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
    static_assert(op_implemented<Op, Ctx, Args...>,
                  "weft::ops: no body of this op takes this execution context and these arguments. Check the "
                  "argument types, and include the backend's op headers for a non-host context.");
    return op_impl(Op{}, ctx, std::forward<Args>(args)...);
  }
};

}  // namespace weft::ops
