#pragma once
// ---- host_element: the element types the host ops compute in ----
// The host ops are templates on the element type T, deduced from their pointers. They
// compute in T (with wider accumulators for per-row statistics, see detail::acc_t), so T
// must be a built-in floating type: double (the correctness oracle), float (training), or
// long double (exercises the portable, non-BLAS paths). A bf16 type joins here later.
#include <concepts>

namespace weft::ops {

/// Satisfied by the element types the host ops accept: float, double, long double.
template <class T>
concept host_element = std::floating_point<T>;

}  // namespace weft::ops
